/**
 * Subscriptions, agent handle first (docs/channel.md). The medium decides the
 * delivery: over `wire` a poll loop off the caller's work (pollloop.ts), over `local` a KB
 * listener; both hand events to a bounded queue, so a slow or throwing callback never holds
 * the writer, another subscription or the next poll. Forward-only: history that predates
 * the subscription is read from the KB (answersTo, openQueries) or caught up (catchup.ts).
 *
 *   const sub = await subscribe(h, "(answers ?a ?c ?t)", h.channel, (ev) => console.log(ev.seq), { waitMs: 5000 });
 *   await unsubscribe(sub);
 */
import type { AgentHandle } from "./channel.js";
import type { ContextName, EventCallback, SubscribeOptions, Subscription } from "./medium.js";

/**
 * Call `callback` with each event matching `goal` in `context`. A null goal watches every
 * change visible from `context` (null context too: every change anywhere). Goals the feed
 * cannot watch honestly are refused `not-watchable`, as the daemon refuses them.
 */
export function subscribe(h: AgentHandle, goal: string | null, context: ContextName | null, callback: EventCallback, opts: SubscribeOptions = {}): Promise<Subscription> {
  const spec: { goal?: string; context?: string } = {};
  if (goal !== null) spec.goal = goal;
  if (context !== null) spec.context = context;
  return h.medium.subscribe(spec, callback, opts);
}

/** Drop a subscription: wakes its parked poll and unwatches. Idempotent. */
export const unsubscribe = (sub: Subscription): Promise<void> => sub.stop();
