/**
 * The wire subscription: a poll loop over a cursor feed, running off the caller's work
 * (seed: "subscribe runs the feed's poll loop OFF the agent's own thread"). Each answer's
 * events go to a Delivery queue and the loop polls again at once; callbacks never hold it.
 *
 * Ending conditions, each said out loud through onError except `stop`:
 *   - stop(): aborts the parked poll (AbortController), then unwatches;
 *   - `unknown-subscription` (reaped, or the daemon restarted): re-watch with `from` = the
 *     cursor, which replays the durable log, so nothing is lost; a second one in a row ends it;
 *   - network / timeout / 5xx: retried with backoff, at most maxPollFailures in a row;
 *   - any other refusal (`bad-cursor`, ...): ends the loop.
 */
import { ChannelError } from "./errors.js";
import { Delivery, report, DEFAULT_MAX_QUEUED_EVENTS } from "./delivery.js";
import type { EventCallback, Medium, Subscription, SubscribeOptions, WatchSpec, FeedOpenAnswer } from "./medium.js";

export const DEFAULT_WAIT_MS = 20_000;
/** Consecutive transient poll failures before the loop gives up. */
export const MAX_POLL_FAILURES = 5;
const RETRY_BASE_MS = 100;
const RETRY_MAX_MS = 2_000;

/** Refusals a retry may cure (the daemon unreachable, stopping or busy): retried with backoff. */
export const TRANSIENT_TYPES: ReadonlySet<string> = new Set(["network", "timeout", "internal-error", "shutting-down", "closed", "too-many-waiters"]);

export function startPollLoop(medium: Medium, spec: WatchSpec, open: FeedOpenAnswer, callback: EventCallback, opts: SubscribeOptions = {}): Subscription {
  const waitMs = opts.waitMs ?? DEFAULT_WAIT_MS;
  const delivery = new Delivery(callback, opts.onError, opts.maxQueuedEvents ?? DEFAULT_MAX_QUEUED_EVENTS);
  const abort = new AbortController();
  let token = open.token;
  let cursor = open.cursor;
  let stopped = false;
  let stopping: Promise<void> | undefined;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      abort.signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
    });

  const loop = (async () => {
    let failures = 0;
    let rewatched = false;
    while (!stopped) {
      await delivery.waitForSpace();
      if (stopped) break;
      try {
        const r = await medium.feedPoll(token, cursor, { waitMs, signal: abort.signal });
        failures = 0;
        rewatched = false;
        if (r.lagged > 0 && opts.onLagged) {
          try {
            opts.onLagged(r.lagged);
          } catch (e) {
            report(opts.onError, e);
          }
        }
        for (const ev of r.events) delivery.push(ev);
        cursor = r.cursor;
      } catch (e) {
        if (stopped) break;
        const type = e instanceof ChannelError ? e.type : "";
        if (type === "unknown-subscription" && !rewatched) {
          rewatched = true;
          try {
            const again = await medium.feedOpen({ ...spec, from: cursor });
            token = again.token;
            cursor = again.cursor;
            continue;
          } catch (e2) {
            if (!stopped) report(opts.onError, e2);
            break;
          }
        }
        if (TRANSIENT_TYPES.has(type) && ++failures < MAX_POLL_FAILURES) {
          await sleep(Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** failures));
          continue;
        }
        report(opts.onError, e);
        break;
      }
    }
  })();

  const sub: Subscription = {
    get token() {
      return token;
    },
    medium,
    done: loop,
    stop() {
      stopping ??= (async () => {
        stopped = true;
        abort.abort();
        delivery.close();
        await loop;
        try {
          await medium.feedClose(token);
        } catch {
          // already reaped or the daemon is gone: either way the token is dead
        }
      })();
      return stopping;
    },
  };
  return sub;
}
