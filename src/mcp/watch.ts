/**
 * Subscribable watches behind `koinii://watch/{context}/{goal}`: each subscribed URI holds a
 * server-side catch-up consumer (the channel's `openConsumer`/`sync`: a feed cursor and the
 * view of the goal in the context's cone) and a loop that parks a long poll at the cursor,
 * folds what arrived, and sends `notifications/resources/updated` when the view changed.
 *
 * Without loss across reconnects: the cursor is the consumer's, so a dropped connection to
 * the daemon is retried (with capped backoff) from the same cursor; a subscription the daemon
 * no longer knows (it restarted, or reaped it) or that lagged is replaced by a fresh snapshot,
 * and the difference between the old and the new view is reported as changes. A read drains
 * the changes since the previous read; the view itself is always whole.
 */
import { openConsumer, sync, closeConsumer, ChannelError, TRANSIENT_TYPES, type Consumer } from "../channel/index.js";
import type { AgentSession } from "./session.js";

/** Every bound of the watches, each with its unit in its name. */
export interface WatchLimits {
  /** Subscribed watches per MCP session; one more is refused `too-many-subscriptions`. */
  maxWatches: number;
  /** How long one parked long poll waits for an event (the daemon caps it at its maxWaitMs). */
  waitMs: number;
  /** Changes kept for the next read; past it the read says `truncated` (the view stays whole). */
  maxPendingChanges: number;
  /** Consecutive transient failures (daemon unreachable, shutting down) before a watch gives up and says so. */
  maxFailures: number;
  /** Longest backoff between two retries, in ms. */
  maxBackoffMs: number;
}

export const DEFAULT_WATCH_LIMITS: WatchLimits = { maxWatches: 16, waitMs: 20_000, maxPendingChanges: 1_000, maxFailures: 60, maxBackoffMs: 1_000 };

export interface Entry {
  handle: number;
  sentence: string;
}

/** What a read of a subscribed watch answers. */
export interface WatchState {
  context: string;
  goal: string;
  subscribed: true;
  /** The seq the view is folded up to. */
  cursor: number;
  sentences: Entry[];
  /** Since the previous read of this watch: entries that joined and left the view. */
  changes: { added: Entry[]; removed: Entry[]; truncated: boolean };
  /** Set when the watch stopped: the refusal that ended it. */
  error?: { type: string; error: string };
}

class Watch {
  readonly abort = new AbortController();
  added = new Map<number, string>();
  removed = new Map<number, string>();
  truncated = false;
  error: { type: string; error: string } | undefined;
  loop: Promise<void> = Promise.resolve();

  constructor(
    readonly consumer: Consumer,
    private readonly limits: WatchLimits,
  ) {}

  /** Record the difference between the view before a fold and the view after it. */
  record(before: Map<number, string>): boolean {
    const now = this.consumer.view;
    let changed = false;
    for (const [h, s] of now) {
      if (before.has(h)) continue;
      changed = true;
      if (this.removed.delete(h)) continue; // left and came back since the last read
      this.keep(this.added, h, s);
    }
    for (const [h, s] of before) {
      if (now.has(h)) continue;
      changed = true;
      if (this.added.delete(h)) continue; // came and went since the last read
      this.keep(this.removed, h, s);
    }
    return changed;
  }

  private keep(into: Map<number, string>, h: number, s: string): void {
    if (this.added.size + this.removed.size >= this.limits.maxPendingChanges) this.truncated = true;
    else into.set(h, s);
  }

  drain(): WatchState["changes"] {
    const list = (m: Map<number, string>) => [...m].map(([handle, sentence]) => ({ handle, sentence })).sort((a, b) => a.handle - b.handle);
    const out = { added: list(this.added), removed: list(this.removed), truncated: this.truncated };
    this.added.clear();
    this.removed.clear();
    this.truncated = false;
    return out;
  }
}

export class Watches {
  private readonly watches = new Map<string, Watch>();
  readonly limits: WatchLimits;

  constructor(
    private readonly session: AgentSession,
    private readonly notify: (uri: string) => Promise<void>,
    limits: Partial<WatchLimits> = {},
  ) {
    this.limits = { ...DEFAULT_WATCH_LIMITS, ...limits };
    for (const [k, v] of Object.entries(this.limits)) if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`watch limit ${k} must be a positive integer, got ${v}`);
  }

  /**
   * Start watching `goal` in `context` under `uri`. The first snapshot is taken before this
   * answers, so a goal the daemon refuses (not-watchable, parse-error) refuses the subscribe.
   * Subscribing to a URI already watched keeps the running watch.
   */
  async subscribe(uri: string, context: string, goal: string): Promise<void> {
    if (this.watches.has(uri)) return;
    if (this.watches.size >= this.limits.maxWatches) {
      throw new ChannelError("too-many-subscriptions", `this session already watches ${this.watches.size} resources, the ceiling (maxWatches ${this.limits.maxWatches}); unsubscribe one first`);
    }
    const consumer = await openConsumer(this.session.handle, goal, context);
    await sync(consumer);
    const w = new Watch(consumer, this.limits);
    this.watches.set(uri, w);
    w.loop = this.run(uri, w);
  }

  async unsubscribe(uri: string): Promise<void> {
    const w = this.watches.get(uri);
    if (!w) return;
    this.watches.delete(uri);
    await this.stop(w);
  }

  /** The state of a subscribed watch (draining its changes), or undefined when `uri` is not subscribed. */
  read(uri: string): WatchState | undefined {
    const w = this.watches.get(uri);
    if (!w) return undefined;
    const c = w.consumer;
    const state: WatchState = {
      context: c.context,
      goal: c.goal,
      subscribed: true,
      cursor: c.position?.cursor ?? 0,
      sentences: [...c.view].map(([handle, sentence]) => ({ handle, sentence })).sort((a, b) => a.handle - b.handle),
      changes: w.drain(),
    };
    if (w.error) state.error = w.error;
    return state;
  }

  async closeAll(): Promise<void> {
    const all = [...this.watches.values()];
    this.watches.clear();
    await Promise.all(all.map((w) => this.stop(w)));
  }

  private async stop(w: Watch): Promise<void> {
    w.abort.abort();
    await w.loop;
    await closeConsumer(w.consumer);
  }

  private async run(uri: string, w: Watch): Promise<void> {
    const c = w.consumer;
    const m = c.handle.medium;
    const signal = w.abort.signal;
    let failures = 0;
    while (!signal.aborted) {
      try {
        // Park at the cursor until something arrives; sync then folds it (and re-snapshots
        // whatever the feed lost). A feed the daemon no longer knows is sync's to replace.
        const pos = c.position!;
        const parked = await m.feedPoll(pos.token, pos.cursor, { waitMs: this.limits.waitMs, limit: 1, signal }).catch((e: unknown) => {
          if (e instanceof ChannelError && (e.type === "unknown-subscription" || e.type === "bad-cursor")) return undefined;
          throw e;
        });
        if (signal.aborted) break;
        if (parked && parked.lagged > 0) {
          // Events were dropped before the cursor: start over from a fresh snapshot.
          await closeConsumer(c);
          c.position = undefined;
        }
        const before = new Map(c.view);
        await sync(c);
        failures = 0;
        if (w.record(before)) await this.notify(uri);
      } catch (e) {
        if (signal.aborted) break;
        const type = e instanceof ChannelError ? e.type : "internal-error";
        if (TRANSIENT_TYPES.has(type) && ++failures < this.limits.maxFailures) {
          await sleep(Math.min(this.limits.maxBackoffMs, 50 * 2 ** failures), signal);
          continue;
        }
        w.error = { type, error: e instanceof Error ? e.message : String(e) };
        await this.notify(uri).catch(() => undefined);
        break;
      }
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });
}
