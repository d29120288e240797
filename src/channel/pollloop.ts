/**
 * The wire subscription: a poll loop over a cursor feed, running off the caller's work
 * (the channel API: "subscribe runs the feed's poll loop OFF the agent's own thread"). Each answer's
 * events go to a Delivery queue and the loop polls again at once; callbacks never hold it.
 *
 * Ending conditions, each said out loud through onError except `stop`:
 *   - stop(): aborts the parked poll (AbortController), then unwatches;
 *   - `unknown-subscription` (reaped, or the daemon restarted): re-watch with `from` = the
 *     cursor, which replays the durable log, so nothing is lost; a second one in a row ends it;
 *   - network / timeout / 5xx: retried with backoff, at most MAX_POLL_FAILURES in a row; when
 *     the token's node is lost (NODE_LOST_TYPES) the retry re-watches with `from` = the
 *     cursor, which a wire medium of several daemons opens on another node;
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
export const TRANSIENT_TYPES: ReadonlySet<string> = new Set(["network", "timeout", "internal-error", "shutting-down", "closed", "too-many-waiters", "unavailable"]);
/**
 * Of those, the ones that say the token's node is unreachable or stopping: after the
 * backoff the loop re-watches (any node of the medium, `from` = the cursor) instead of
 * polling the same token again.
 */
export const NODE_LOST_TYPES: ReadonlySet<string> = new Set(["network", "timeout", "shutting-down", "unavailable"]);

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

  /** A new token from `cursor` on (the old one is dropped where it was, if its node still answers). */
  const rewatch = async () => {
    const again = await medium.feedOpen({ ...spec, from: cursor });
    const old = token;
    token = again.token;
    cursor = again.cursor;
    if (old !== token) void medium.feedClose(old).catch(() => false);
  };

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
            await rewatch();
            continue;
          } catch (e2) {
            if (!stopped) report(opts.onError, e2);
            break;
          }
        }
        if (TRANSIENT_TYPES.has(type) && ++failures < MAX_POLL_FAILURES) {
          await sleep(Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** failures));
          if (stopped) break;
          if (NODE_LOST_TYPES.has(type)) {
            // The token's node is gone (or going): open the feed again on whichever node
            // answers, from the last cursor delivered. Cursors are global, so it goes on
            // exactly after the last event the callback was given.
            try {
              await rewatch();
            } catch (e2) {
              const t2 = e2 instanceof ChannelError ? e2.type : "";
              if (stopped || !TRANSIENT_TYPES.has(t2)) {
                if (!stopped) report(opts.onError, e2);
                break;
              }
            }
          }
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
