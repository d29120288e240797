/**
 * The change feed over the wire: subscriptions, rings, cursors, long polls and streams on
 * top of the KB's committed events (K2, K9). One KB listener fans each event out to every
 * subscription, filtered per event; nothing here ever holds the writer.
 *
 *   const hub = await FeedHub.open(kb, { maxEvents: 256 });
 *   const { token, cursor } = hub.watch(principal, { goal: "(dog ?x)", context: "CxPets" });
 *   const { events, cursor: next, lagged } = await hub.poll(principal, { token, cursor, waitMs: 5000 });
 */
import { performance } from "node:perf_hooks";
import { nanoid } from "nanoid";
import type { Kb, FeedEvent, EngineLimits } from "../kb/index.js";
import { FeedError } from "./errors.js";
import { compileWatch, filterEvent, EventView, type WireEvent, type CompiledWatch } from "./filter.js";
import { Subscription, type WakeReason } from "./subscription.js";

/** Every bound of the feed, each with its unit in its name (style.md). */
export interface FeedLimits {
  /** Subscriptions per daemon; one more is refused `too-many-subscriptions`. */
  maxSubscriptions: number;
  /** Polls parked at once; one more is refused `too-many-waiters`. */
  maxParked: number;
  /** Undelivered events one subscription keeps in memory (the newest). */
  maxEvents: number;
  /** The longest a poll may park, whatever it asks. */
  maxWaitMs: number;
  /** A subscription neither polled nor streamed for this long is reaped. */
  idleReapMs: number;
  /** Events a poll answers when it names no limit. */
  defaultPollLimit: number;
  /** The largest `limit` a poll may ask for. */
  maxPollLimit: number;
  /** Durable-log events one poll examines before answering with the cursor it reached. */
  maxScanEvents: number;
  /**
   * Milliseconds one slice of a log replay may run on the writer's thread before it yields
   * (a poll answers with the cursor it reached, a stream goes on after a turn).
   */
  maxScanMs: number;
}

export const DEFAULT_FEED_LIMITS: FeedLimits = {
  maxSubscriptions: 256,
  maxParked: 1024,
  maxEvents: 256,
  maxWaitMs: 30_000,
  idleReapMs: 300_000,
  defaultPollLimit: 1000,
  maxPollLimit: 10_000,
  maxScanEvents: 10_000,
  maxScanMs: 10,
};

/** Who is asking: subscriptions belong to their owner; the admin may see and act on all. */
export interface FeedPrincipal {
  id: string;
  admin: boolean;
}

export interface WatchRequest {
  goal?: string;
  context?: string;
  /** A seq; anything else is `bad-cursor`. */
  from?: unknown;
}

export interface WatchAnswer {
  token: string;
  cursor: number;
  maxEvents: number;
  lagged: number;
}

export interface PollRequest {
  token: string;
  cursor: unknown;
  waitMs?: number;
  limit?: number;
}

export interface PollAnswer {
  events: WireEvent[];
  cursor: number;
  lagged: number;
}

export interface WatcherInfo {
  token: string;
  owner: string;
  goal?: string;
  context?: string;
  cursor: number;
  pending: number;
  lagged: number;
  /** Polls parked on this subscription now. */
  parked: number;
  /** Whether a stream is reading it now. */
  streaming: boolean;
}

/** Counters the daemon turns into metrics. */
export interface FeedHooks {
  onEvent?(seq: number): void;
  onLost?(count: number): void;
}

export interface HubOptions {
  now?: () => number;
  parseLimits?: Partial<EngineLimits>;
  /**
   * True while a cursor ahead of this hub's head may still be reached: a follower, whose
   * writer may have published seqs it has not applied yet. Such a cursor waits (see
   * awaitCursor) instead of being `bad-cursor`. Default: never (a lone writer's cursor
   * ahead of its head was never issued).
   */
  cursorsMayLead?: () => boolean;
}

/** Let the writer and every other request run before the next slice of a long loop (K11). */
const yieldTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

export interface PreparedStream {
  readonly sub: Subscription;
  readonly cursor: number;
}

/**
 * A sink a stream writes Server-Sent-Event frames to, as bytes: an event's frame is one
 * Buffer shared by every stream that carries it (see sseFrame), so a sink must not modify it.
 */
export interface StreamSink {
  /** false = the socket's buffer is full: wait for `drained`. */
  write(frame: Buffer): boolean;
  /** Resolves once the buffer has room again; at once when it already has (the drain came first). */
  drained(): Promise<void>;
  readonly closed: boolean;
  /** Resolves when the peer goes away. */
  readonly gone: Promise<void>;
  end(): void;
}

export class FeedHub {
  readonly limits: FeedLimits;
  private readonly subs = new Map<string, Subscription>();
  private published: number;
  private parkedPolls = 0;
  private reapedAt = -Infinity;
  private closing = false;
  private readonly unlisten: () => void;
  private readonly reaper: NodeJS.Timeout;
  private readonly sees: (viewer: string, seen: string) => boolean;
  /** Requests waiting for the head to reach a cursor another node gave (see awaitCursor). */
  private readonly reaching = new Set<{ seq: number; done: (reached: boolean) => void }>();
  private readonly cursorsMayLead: () => boolean;

  private constructor(
    private readonly kb: Kb,
    limits: Partial<FeedLimits>,
    private readonly hooks: FeedHooks,
    private readonly now: () => number,
    private readonly parseLimits: Partial<EngineLimits> | undefined,
    cursorsMayLead: (() => boolean) | undefined,
  ) {
    this.cursorsMayLead = cursorsMayLead ?? (() => false);
    this.limits = { ...DEFAULT_FEED_LIMITS, ...limits };
    for (const [k, v] of Object.entries(this.limits)) {
      if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`feed limit ${k} must be a positive integer, got ${v}`);
    }
    this.published = kb.headSeq;
    this.sees = (a, b) => kb.sees(a, b);
    this.unlisten = kb.onEvent((ev) => this.onEvent(ev));
    this.reaper = setInterval(() => this.reapIdle(), Math.max(250, Math.min(60_000, Math.floor(this.limits.idleReapMs / 4))));
    this.reaper.unref();
  }

  /**
   * Attach to a KB. Waits for any write in flight to commit first, so the starting head is
   * a committed seq (no event at or below it can still arrive).
   */
  static async open(kb: Kb, limits: Partial<FeedLimits> = {}, hooks: FeedHooks = {}, opts: HubOptions = {}): Promise<FeedHub> {
    await kb.store.durable();
    return FeedHub.attach(kb, limits, hooks, opts);
  }

  /**
   * Attach at once (the local medium's constructor is synchronous). The head is the KB's
   * published seq; a write still in flight is published after it, so nothing is missed.
   */
  static attach(kb: Kb, limits: Partial<FeedLimits> = {}, hooks: FeedHooks = {}, opts: HubOptions = {}): FeedHub {
    return new FeedHub(kb, limits, hooks, opts.now ?? Date.now, opts.parseLimits, opts.cursorsMayLead);
  }

  /** The newest committed and published seq: the head every reader may see. */
  get headSeq(): number {
    return this.published;
  }

  get subscriptionCount(): number {
    return this.subs.size;
  }

  get parkedCount(): number {
    return this.parkedPolls;
  }

  get streamCount(): number {
    let n = 0;
    for (const s of this.subs.values()) if (s.streaming) n++;
    return n;
  }

  /** Undelivered events held in memory across every ring. */
  get pendingCount(): number {
    let n = 0;
    for (const s of this.subs.values()) n += s.ring.size;
    return n;
  }

  /**
   * Fan one durable event out. Never throws by contract: a throw here is a broken invariant,
   * and the KB stops on it (K12) rather than let a subscriber silently miss the event.
   */
  private onEvent(ev: FeedEvent): void {
    // K2: seq strictly increases by one per published event.
    if (ev.seq !== this.published + 1) throw new Error(`invariant: feed seq ${ev.seq} published after ${this.published}`);
    this.published = ev.seq;
    this.hooks.onEvent?.(ev.seq);
    for (const w of this.reaching) if (w.seq <= ev.seq) w.done(true);
    if (this.subs.size === 0) return;
    const view = new EventView(ev);
    // Subscriptions with the same goal and context share one filtered event (and so one
    // serialization, see sse()).
    const shared = new Map<string, WireEvent | null>();
    let lost = 0;
    for (const sub of this.subs.values()) {
      let f = shared.get(sub.filterKey);
      if (f === undefined) shared.set(sub.filterKey, (f = filterEvent(sub.watch, view, this.sees)));
      if (!f) continue;
      // A stream that is caught up takes the frame straight onto its socket: no ring, no
      // wakeup, no promise per event (64 streams cost 64 socket writes, nothing more).
      if (sub.live?.(f)) continue;
      if (sub.push(f)) lost++;
    }
    if (lost) this.hooks.onLost?.(lost);
  }

  /**
   * A cursor is global across the nodes of a cluster: on a node that may still reach it
   * (`cursorsMayLead`), wait until this hub has published `cursor`, at most `waitMs`
   * (Infinity: until it has, or the daemon shuts down). Resolves whether it was reached;
   * at once for anything that is not a seq ahead of the head (the caller's own check
   * refuses it as before).
   */
  awaitCursor(cursor: unknown, waitMs: number): Promise<boolean> {
    if (typeof cursor !== "number" || !Number.isSafeInteger(cursor) || cursor <= this.published) return Promise.resolve(true);
    if (this.closing || !this.cursorsMayLead() || waitMs <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = Number.isFinite(waitMs) ? setTimeout(() => w.done(false), waitMs) : undefined;
      const w = {
        seq: cursor,
        done: (reached: boolean) => {
          clearTimeout(timer);
          this.reaching.delete(w);
          resolve(reached);
        },
      };
      this.reaching.add(w);
    });
  }

  /** Register a subscription; `from` replays the durable log after that seq. */
  watch(p: FeedPrincipal, req: WatchRequest): WatchAnswer {
    if (this.closing) throw new FeedError("shutting-down", "the feed is shut down");
    this.reapIfDue();
    const watch: CompiledWatch = compileWatch(req, this.parseLimits);
    let start = this.published;
    if (req.from !== undefined) {
      start = this.checkCursorValue(req.from, 0);
    }
    if (this.subs.size >= this.limits.maxSubscriptions) {
      throw new FeedError("too-many-subscriptions", `this daemon holds ${this.subs.size} subscriptions, its ceiling (maxSubscriptions ${this.limits.maxSubscriptions}); unwatch one first`);
    }
    const token = `sub_${nanoid(24)}`;
    this.subs.set(token, new Subscription(token, p.id, watch, start, this.published, this.limits.maxEvents, this.now()));
    return { token, cursor: start, maxEvents: this.limits.maxEvents, lagged: this.retentionLag(start, this.published) };
  }

  /** Drop a subscription: its parked polls answer `unknown-subscription`, its stream closes. */
  unwatch(p: FeedPrincipal, token: unknown): boolean {
    const sub = typeof token === "string" ? this.subs.get(token) : undefined;
    if (!sub || !this.owns(p, sub)) return false;
    this.drop(sub, "dropped");
    return true;
  }

  watchers(p: FeedPrincipal): WatcherInfo[] {
    this.reapIfDue();
    const out: WatcherInfo[] = [];
    for (const s of this.subs.values()) {
      if (!this.owns(p, s)) continue;
      const cursor = Math.max(s.ackSeq, s.answeredSeq);
      const w: WatcherInfo = { token: s.token, owner: s.owner, cursor, pending: s.ring.countAfter(cursor), lagged: s.lostCount + s.reportedCount, parked: s.parked, streaming: s.streaming !== undefined };
      if (s.watch.goal !== undefined) w.goal = s.watch.goal;
      if (s.watch.context !== undefined) w.context = s.watch.context;
      out.push(w);
    }
    return out.sort((a, b) => (a.token < b.token ? -1 : 1));
  }

  /**
   * The matching events after `cursor`, at most `limit`, and the cursor to send next; with
   * `waitMs`, parks until an event arrives (a parked poll is a promise: it never holds the
   * writer). Refusals: `unknown-subscription`, `bad-cursor`, `too-many-waiters`.
   */
  async poll(p: FeedPrincipal, req: PollRequest): Promise<PollAnswer> {
    // After shutdown a poll would answer at once with nothing, and a client that polls again
    // at once would spin: refuse it instead (the poll loop backs off and stops).
    if (this.closing) throw new FeedError("shutting-down", "the feed is shut down");
    this.reapIfDue();
    const sub = this.get(p, req.token);
    let waitMs = Math.min(req.waitMs ?? 0, this.limits.maxWaitMs);
    const began = this.now();
    if (!(await this.awaitCursor(req.cursor, waitMs))) {
      // Still behind a cursor another node gave: nothing yet, and the cursor stands.
      if (this.cursorsMayLead() && !this.closing && typeof req.cursor === "number" && this.subs.get(sub.token) === sub) {
        this.checkLimit(req.limit);
        return { events: [], cursor: req.cursor, lagged: 0 };
      }
    }
    waitMs = Math.max(0, waitMs - (this.now() - began));
    const cursor = this.checkCursor(sub, req.cursor);
    const limit = this.checkLimit(req.limit);
    sub.ack(cursor);
    sub.polledAt = this.now();
    let answer = await this.collect(sub, cursor, limit);
    // A log scan that stopped at maxScanEvents with nothing matched goes on after yielding
    // the event loop, so an answer without events always means "caught up" (docs/wire.md).
    while (answer.events.length === 0 && answer.lagged === 0 && answer.cursor < sub.logUpTo) {
      await yieldTurn();
      if (this.subs.get(sub.token) !== sub) throw unknownSubscription();
      answer = await this.collect(sub, answer.cursor, limit);
    }
    if (answer.events.length > 0 || answer.lagged > 0 || waitMs <= 0 || this.closing || answer.cursor < this.published) {
      sub.answeredSeq = answer.cursor;
      return answer;
    }
    if (this.parkedPolls >= this.limits.maxParked) {
      throw new FeedError("too-many-waiters", `${this.parkedPolls} polls are parked, the ceiling (maxParked ${this.limits.maxParked}); poll without waitMs or retry later`);
    }
    this.parkedPolls++;
    let reason: WakeReason;
    try {
      reason = await sub.park(waitMs);
    } finally {
      this.parkedPolls--;
    }
    if (reason === "dropped") throw unknownSubscription();
    sub.polledAt = this.now();
    answer = await this.collect(sub, cursor, limit);
    sub.answeredSeq = answer.cursor;
    return answer;
  }

  /**
   * Check a stream request before any header is sent: the token, and the cursor to start
   * after (the caller passes Last-Event-ID when reconnecting; none = where the reader left
   * off). Throws `unknown-subscription` / `bad-cursor`.
   */
  prepareStream(p: FeedPrincipal, token: unknown, cursorIn: unknown): PreparedStream {
    this.reapIfDue();
    const sub = this.get(p, token);
    const cursor = cursorIn === undefined ? sub.ackSeq : this.checkCursor(sub, cursorIn);
    return { sub, cursor };
  }

  /**
   * Serve a prepared stream as Server-Sent Events into `sink` until the peer goes away, the
   * subscription is dropped, or the daemon shuts down. One stream per token: a new stream
   * (a reconnect) takes over from the old one.
   */
  async runStream(prepared: PreparedStream, sink: StreamSink, heartbeatMs: number): Promise<void> {
    const { sub } = prepared;
    let cursor = prepared.cursor;
    sub.streaming?.close();
    const stop = new AbortController();
    const handle = { close: () => stop.abort() };
    sub.streaming = handle;
    const follower: { leave?: () => void } = {};
    const stopped = new Promise((r) => stop.signal.addEventListener("abort", r, { once: true }));
    void stopped.then(() => follower.leave?.());
    // A sink that throws has lost its peer: end this stream, never the caller (onEvent).
    const write = (frame: Buffer): boolean => {
      try {
        return sink.write(frame);
      } catch {
        handle.close();
        return true;
      }
    };
    const heartbeat = setInterval(() => write(HEARTBEAT_FRAME), heartbeatMs);
    void sink.gone.then(() => handle.close());
    try {
      // K11: a replay is sliced (maxScanEvents, maxScanMs); between two slices that awaited
      // nothing (no drain, no live follow) the loop yields a turn, so the writer runs.
      let mustYield = false;
      while (!stop.signal.aborted && !sink.closed && !this.closing && this.subs.get(sub.token) === sub) {
        if (mustYield) {
          await yieldTurn();
          if (stop.signal.aborted || sink.closed || this.closing || this.subs.get(sub.token) !== sub) break;
        }
        mustYield = true;
        sub.ack(cursor);
        sub.polledAt = this.now();
        const answer = await this.collect(sub, cursor, this.limits.defaultPollLimit);
        let ok = true;
        if (answer.lagged > 0) ok = write(Buffer.from(`event: lagged\ndata: ${JSON.stringify({ lagged: answer.lagged })}\n\n`)) && ok;
        for (const e of answer.events) ok = write(sseFrame(e)) && ok;
        // Acknowledge only what was written; a reconnect re-reads after its Last-Event-ID
        // (the durable log backs what the ring let go).
        if (answer.events.length > 0) cursor = sub.answeredSeq = answer.events[answer.events.length - 1]!.seq;
        if (answer.lagged > 0) cursor = Math.max(cursor, answer.cursor);
        if (ok && answer.events.length === 0 && answer.lagged === 0) {
          cursor = answer.cursor; // nothing matched up to here: move on (a log scan may have stopped at its bound)
          if (cursor < this.published) continue;
          const followed = await this.follow(sub, write, cursor, follower);
          mustYield = false;
          cursor = followed.cursor;
          ok = !followed.pushedBack;
        }
        if (!ok && !stop.signal.aborted) {
          await Promise.race([sink.drained(), sink.gone, stopped]);
          mustYield = false;
        }
      }
    } finally {
      clearInterval(heartbeat);
      if (sub.streaming === handle) sub.streaming = undefined;
      sub.polledAt = this.now();
      sink.end();
    }
  }

  /**
   * A caught-up stream follows the feed live: onEvent hands each matching event to
   * `sub.live`, which writes its frame at once and acknowledges it (only what was written),
   * with no ring, wakeup or promise per event. Resolves with the cursor reached when the
   * socket pushes back (the loop then waits for drain and reads on from the ring, which
   * fills meanwhile) or when `exit.leave` is called (the stream stops).
   */
  private follow(sub: Subscription, write: (frame: Buffer) => boolean, from: number, exit: { leave?: () => void }): Promise<{ cursor: number; pushedBack: boolean }> {
    let cursor = from;
    return new Promise((resolve) => {
      const leave = (pushedBack: boolean) => {
        exit.leave = undefined;
        if (sub.live === live) sub.live = undefined;
        resolve({ cursor, pushedBack });
      };
      const live = (e: WireEvent): boolean => {
        const ok = write(sseFrame(e));
        cursor = sub.answeredSeq = e.seq;
        sub.ack(cursor);
        if (!ok) leave(true);
        return true;
      };
      sub.live = live;
      exit.leave = () => leave(false);
    });
  }

  /** Answer every parked poll, close every stream, stop listening. */
  shutdown(): void {
    this.closing = true;
    clearInterval(this.reaper);
    for (const w of this.reaching) w.done(false);
    for (const s of this.subs.values()) {
      s.streaming?.close();
      s.wake("shutdown");
    }
    this.unlisten();
  }

  /**
   * Reap on a request path at most every quarter of idleReapMs (and at least every second):
   * a full scan per poll would cost O(subscriptions) per poll, O(n^2) per event when every
   * subscription re-polls.
   */
  private reapIfDue(): void {
    if (this.now() - this.reapedAt >= Math.min(1000, Math.ceil(this.limits.idleReapMs / 4))) this.reapIdle();
  }

  /** Reap subscriptions idle past `idleReapMs` (none parked, none streaming). */
  reapIdle(): number {
    const now = this.now();
    this.reapedAt = now;
    const cutoff = now - this.limits.idleReapMs;
    let n = 0;
    for (const s of this.subs.values()) {
      if (s.polledAt < cutoff && s.parked === 0 && !s.streaming) {
        this.drop(s, "dropped");
        n++;
      }
    }
    return n;
  }

  // ------------------------------------------------------------ internals

  private drop(sub: Subscription, reason: WakeReason): void {
    this.subs.delete(sub.token);
    sub.streaming?.close();
    sub.wake(reason);
  }

  private owns(p: FeedPrincipal, s: Subscription): boolean {
    return p.admin || s.owner === p.id;
  }

  private get(p: FeedPrincipal, token: unknown): Subscription {
    const sub = typeof token === "string" ? this.subs.get(token) : undefined;
    if (!sub || !this.owns(p, sub)) throw unknownSubscription();
    return sub;
  }

  private checkCursorValue(c: unknown, start: number): number {
    if (typeof c !== "number" || !Number.isSafeInteger(c) || c < 0) throw new FeedError("bad-cursor", `a cursor is a whole number (a seq), got ${shown(c)}`);
    if (c > this.published) throw new FeedError("bad-cursor", `cursor ${c} is ahead of the head seq ${this.published}`);
    if (c < start) throw new FeedError("bad-cursor", `cursor ${c} is below this subscription's start ${start}; watch with from to replay`);
    return c;
  }

  private checkCursor(sub: Subscription, c: unknown): number {
    return this.checkCursorValue(c, sub.startSeq);
  }

  private checkLimit(limit: number | undefined): number {
    if (limit === undefined) return this.limits.defaultPollLimit;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > this.limits.maxPollLimit) {
      throw new FeedError("bad-request", `limit must be a whole number from 1 to ${this.limits.maxPollLimit} (maxPollLimit)`);
    }
    return limit;
  }

  /** Events a `from` older than the retained log can no longer replay (an upper bound: all events, not only matching ones). */
  private retentionLag(cursor: number, upTo: number): number {
    if (cursor >= upTo) return 0;
    const oldest = this.kb.oldestRetainedSeq();
    return oldest > cursor + 1 ? Math.min(oldest - 1, upTo) - cursor : 0;
  }

  /**
   * Read what is after `cursor`: the durable log up to `logUpTo` (an awaited read: the store
   * may answer asynchronously, and events published meanwhile go to the ring), then the ring.
   */
  private async collect(sub: Subscription, cursor: number, limit: number): Promise<PollAnswer> {
    const events: WireEvent[] = [];
    let pos = cursor;
    let lagged = 0;
    if (pos < sub.logUpTo) {
      lagged += this.retentionLag(pos, sub.logUpTo);
      pos = Math.max(pos, Math.min(this.kb.oldestRetainedSeq() - 1, sub.logUpTo));
      let scanned = 0;
      const startedMs = performance.now();
      while (pos < sub.logUpTo && events.length < limit) {
        if (scanned >= this.limits.maxScanEvents || performance.now() - startedMs > this.limits.maxScanMs) return { events, cursor: pos, lagged };
        const batch = await this.kb.readEvents(pos, Math.min(100, sub.logUpTo - pos));
        if (batch.length === 0) {
          pos = sub.logUpTo;
          break;
        }
        for (const ev of batch) {
          if (ev.seq > sub.logUpTo) break;
          pos = ev.seq;
          scanned++;
          const f = filterEvent(sub.watch, new EventView(ev), this.sees);
          if (f) {
            events.push(f);
            if (events.length === limit) return { events, cursor: pos, lagged };
          }
        }
      }
    }
    lagged += sub.takeLost(cursor);
    const live = sub.ring.after(pos, limit - events.length);
    for (const e of live) events.push(e);
    const full = events.length === limit;
    return { events, cursor: full ? events[events.length - 1]!.seq : this.published, lagged };
  }
}

/**
 * An event's JSON, serialized once per event object however many polls and streams carry
 * it (subscriptions with the same filter share the object, see onEvent).
 */
const serialized = new WeakMap<WireEvent, string>();
export function eventJson(e: WireEvent): string {
  let f = serialized.get(e);
  if (f === undefined) serialized.set(e, (f = JSON.stringify(e)));
  return f;
}

/**
 * An event's SSE frame as UTF-8 bytes, encoded once per event object: every stream that
 * carries it is handed the same Buffer (64 streams, one encoding, no string per stream).
 */
const frames = new WeakMap<WireEvent, Buffer>();
export function sseFrame(e: WireEvent): Buffer {
  let f = frames.get(e);
  if (f === undefined) frames.set(e, (f = Buffer.from(`id: ${e.seq}\ndata: ${eventJson(e)}\n\n`)));
  return f;
}

const HEARTBEAT_FRAME = Buffer.from(": heartbeat\n\n");

/**
 * The body of a caught-up poll's answer carrying one event (the answer a parked poll gets
 * when one event wakes it: `cursor` is that event's seq, nothing lagged), encoded once per
 * event object and shared by every poll woken by it.
 */
const oneEventAnswers = new WeakMap<WireEvent, Buffer>();

/** A poll's answer body, built from each event's shared JSON; a one-event caught-up answer is shared bytes. */
export function pollAnswerBody(a: PollAnswer): Buffer | string {
  const only = a.events.length === 1 ? a.events[0]! : undefined;
  if (only !== undefined && a.lagged === 0 && a.cursor === only.seq) {
    let b = oneEventAnswers.get(only);
    if (b === undefined) oneEventAnswers.set(only, (b = Buffer.from(answerJson(a))));
    return b;
  }
  return answerJson(a);
}

function answerJson(a: PollAnswer): string {
  return `{"ok":true,"events":[${a.events.map(eventJson).join(",")}],"cursor":${a.cursor},"lagged":${a.lagged}}`;
}

/** A refused value, shown short: a deep or huge one is named by its kind, never serialized whole (that overflowed the stack). */
function shown(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  if (typeof v === "number" || typeof v === "boolean" || v === null || v === undefined) return String(v);
  return Array.isArray(v) ? "an array" : `a ${typeof v}`;
}

function unknownSubscription(): FeedError {
  return new FeedError("unknown-subscription", "no such subscription: never issued, dropped, reaped, or not yours; watch again");
}
