/**
 * The responder as a channel member: connects (and reconnects) to the daemon, turns each
 * ingested DM into a query node, hands it to the `Responder` (one at a time), writes the
 * outcome back as knowledge, and catches up unanswered DM nodes on every (re)connect.
 *
 *   ingest (HTTP / NATS) -> pose (queries Agent (dm ...)) -> Responder.handle -> answers | refuse + record
 *   (re)connect -> subscribe to DM nodes of other trusted askers -> catch-up (age, count, dedup) -> handle
 */
import { type AgentHandle, type Handle, type Subscription, subscribe } from "../../channel/index.js";
import type { Booted } from "./boot.js";
import { type ChannelKb, type DmNode, KbUnavailableError } from "./channelkb.js";
import { dmQueryGoal, parseDmNode } from "./dmnode.js";
import { inWindow } from "./killswitch.js";
import type { Dm } from "./gate.js";
import type { Clock, Outcome } from "./responder.js";

/** Catch-up bounds (named, configurable; docs/agents-responder.md "Catch-up"). */
export interface CatchupLimits {
  /** A DM node older than this (by the daemon's createdAt) is left for a human. */
  maxAgeMs: number;
  /** At most this many DMs per catch-up: the newest ones; the rest wait for the next catch-up. */
  maxCount: number;
}

export const defaultCatchupLimits: CatchupLimits = { maxAgeMs: 24 * 3600_000, maxCount: 20 };
/** Backoff between reconnect attempts. */
export const reconnectBackoffMs = { first: 250, max: 10_000 } as const;
/** Message ids listed in one catch-up audit record (the counts are always complete). */
const maxIdsInCatchupRecord = 50;

export type Via = "http" | "nats" | "channel" | "catchup";

export interface ServiceOptions {
  booted: Booted;
  kb: ChannelKb;
  /** Open a medium and join the channel; called again on every reconnect. */
  connect: () => Promise<AgentHandle>;
  catchup?: CatchupLimits;
  clock: Clock;
  log: (msg: string, extra?: Record<string, unknown>) => void;
}

export interface IngestResult {
  query: Handle;
}

export interface ServiceStatus {
  connected: boolean;
  connects: number;
  catchups: number;
  lastCatchup: { atMs: number; found: number; queued: number; processed: number; tooOld: number; switchedOff: number; overCount: number } | null;
  inflight: number;
  pendingRecords: number;
  ingested: Record<Via, number>;
}

type PendingRecord = { q: Handle; messageId: string | null; outcome: Outcome };

export class ResponderService {
  private closed = false;
  /** Ingests between their call and their enqueue (a pose in flight): `close` waits for them. */
  private readonly ingesting = new Set<Promise<unknown>>();
  private sub: Subscription | null = null;
  private loop: Promise<void> | null = null;
  private readonly inflight = new Map<Handle, Promise<Outcome>>();
  private pending: PendingRecord[] = [];
  private wake: (() => void) | null = null;
  private readonly st: ServiceStatus = {
    connected: false,
    connects: 0,
    catchups: 0,
    lastCatchup: null,
    inflight: 0,
    pendingRecords: 0,
    ingested: { http: 0, nats: 0, channel: 0, catchup: 0 },
  };
  private readonly limits: CatchupLimits;

  constructor(private readonly o: ServiceOptions) {
    this.limits = o.catchup ?? defaultCatchupLimits;
    // Outcomes decided before the last stop that the KB never acknowledged: written at the first connect.
    this.pending = o.booted.unrecorded.map((u) => ({ q: u.query, messageId: u.messageId, outcome: u.outcome }));
    if (!(this.limits.maxAgeMs >= 0) || !Number.isSafeInteger(this.limits.maxCount) || this.limits.maxCount < 0) {
      throw new RangeError(`catch-up limits must be non-negative, got ${JSON.stringify(this.limits)}`);
    }
  }

  private audit(action: string, detail: Record<string, unknown>): void {
    try {
      this.o.booted.audit.append(action, detail, this.o.clock.nowMs());
    } catch (e) {
      this.o.log("audit append failed", { action, error: (e as Error).message });
    }
  }

  /** Start the connect loop (it retries until `close`). */
  start(): void {
    this.loop ??= this.connectLoop();
  }

  status(): ServiceStatus {
    return { ...this.st, connected: this.o.kb.connected, inflight: this.inflight.size, pendingRecords: this.pending.length, ingested: { ...this.st.ingested } };
  }

  /**
   * A DM from an ingress: write its query node, then queue it. Resolves with the node once it
   * is stored (the DM is then durable: a crash from here on is caught up); throws
   * `KbUnavailableError` while disconnected, so an HTTP caller can retry.
   */
  async ingest(dm: Dm, via: "http" | "nats"): Promise<IngestResult> {
    const run = this.ingestNow(dm, via);
    this.ingesting.add(run);
    void run.catch(() => undefined).finally(() => this.ingesting.delete(run));
    return run;
  }

  private async ingestNow(dm: Dm, via: "http" | "nats"): Promise<IngestResult> {
    let q: Handle;
    try {
      if (this.closed) throw new KbUnavailableError();
      q = await this.o.kb.pose(dm);
    } catch (e) {
      this.audit("ingest_failed", { via, from: dm.senderId, convo: dm.conversationId, message_id: dm.messageId, error: String((e as Error)?.message ?? e).slice(0, 200) });
      if (!(e instanceof KbUnavailableError)) this.kick();
      throw e;
    }
    this.st.ingested[via]++;
    this.audit("dm_received", { via, query: q, from: dm.senderId, convo: dm.conversationId, message_id: dm.messageId });
    void this.enqueue(q, dm);
    return { query: q };
  }

  /** An ingress event that is not a DM the responder can take: audited (`ingest_refused`), nothing else. */
  refuseIngest(via: "http" | "nats", error: string, extra: Record<string, unknown> = {}): void {
    this.audit("ingest_refused", { via, error: error.slice(0, 300), ...extra });
  }

  /** Queue one DM node unless it is already queued; resolves with the outcome once recorded. */
  enqueue(q: Handle, dm: Dm): Promise<Outcome> {
    const existing = this.inflight.get(q);
    if (existing !== undefined) return existing;
    const run = (async () => {
      const outcome = await this.o.booted.responder.handle(dm, { query: q });
      await this.record({ q, messageId: dm.messageId, outcome });
      return outcome;
    })();
    this.inflight.set(q, run);
    void run.finally(() => this.inflight.delete(q)).catch(() => undefined);
    return run;
  }

  /** Write an outcome to the KB; a failure is audited and retried after the next (re)connect. */
  private async record(p: PendingRecord): Promise<void> {
    const { q, outcome } = p;
    try {
      if (outcome.action === "replied") await this.o.kb.recordReply(q, outcome.text);
      else if (outcome.action === "escalated") await this.o.kb.recordEscalation(q, outcome.reason);
      else return;
      this.audit("kb_recorded", { query: q, message_id: p.messageId, action: outcome.action });
    } catch (e) {
      this.pending.push(p);
      this.audit("kb_record_failed", { query: q, message_id: p.messageId, action: outcome.action, error: String((e as Error)?.message ?? e).slice(0, 200) });
      if (!(e instanceof KbUnavailableError)) this.kick();
    }
  }

  /** The subscription may not have noticed a dead connection yet: end it so the loop reconnects. */
  private kick(): void {
    void this.sub?.stop();
  }

  /**
   * Catch up: the unanswered, unrefused DM nodes the channel sees, minus those already
   * processed (dedup) or older than `maxAgeMs`; of the rest the newest `maxCount`, handled
   * oldest first through the same queue and gate as live DMs. One `catchup` audit record
   * says what was found and what was left, and why.
   */
  async catchUp(): Promise<Outcome[]> {
    const now = this.o.clock.nowMs();
    const nodes = await this.o.kb.openDms();
    const processed: DmNode[] = [];
    const tooOld: DmNode[] = [];
    const switchedOff: DmNode[] = [];
    const fresh: DmNode[] = [];
    for (const n of nodes) {
      if (n.dm.messageId !== null && this.o.booted.processed.has(n.dm.messageId)) processed.push(n);
      else if (now - n.createdAt > this.limits.maxAgeMs) tooOld.push(n);
      else if (inWindow(this.o.booted.offWindows, n.createdAt)) switchedOff.push(n);
      else fresh.push(n);
    }
    fresh.sort((a, b) => a.handle - b.handle);
    const take = this.limits.maxCount === 0 ? [] : fresh.slice(-this.limits.maxCount);
    const overCount = fresh.slice(0, fresh.length - take.length);
    const ids = (ns: DmNode[]) => ns.slice(0, maxIdsInCatchupRecord).map((n) => n.dm.messageId);
    this.st.catchups++;
    this.st.lastCatchup = { atMs: now, found: nodes.length, queued: take.length, processed: processed.length, tooOld: tooOld.length, switchedOff: switchedOff.length, overCount: overCount.length };
    this.audit("catchup", {
      found: nodes.length,
      queued: take.length,
      already_processed: processed.length,
      too_old: tooOld.length,
      switched_off: switchedOff.length,
      over_count: overCount.length,
      max_age_ms: this.limits.maxAgeMs,
      max_count: this.limits.maxCount,
      queued_ids: ids(take),
      too_old_ids: ids(tooOld),
      switched_off_ids: ids(switchedOff),
      over_count_ids: ids(overCount),
    });
    for (const n of take) this.st.ingested.catchup++;
    return Promise.all(take.map((n) => this.enqueue(n.handle, n.dm)));
  }

  private async retryPending(): Promise<void> {
    const todo = this.pending;
    this.pending = [];
    for (const p of todo) await this.record(p);
  }

  private async connectLoop(): Promise<void> {
    let failures = 0;
    while (!this.closed) {
      let h: AgentHandle | null = null;
      try {
        h = await this.o.connect();
        if (this.closed) break;
        this.o.kb.setHandle(h);
        this.st.connects++;
        const self = h.agent;
        // Live DM nodes other trusted askers write; our own are queued by `ingest` itself.
        this.sub = await subscribe(h, dmQueryGoal, h.channel, (ev) => {
          for (const a of ev.added) {
            const parsed = parseDmNode(a.sentence);
            if (this.closed || parsed === null || parsed.agent === self || !this.o.kb.trusts(parsed.agent, a.creator)) continue;
            // A processed id goes through the queue too: the responder audits it as a duplicate.
            this.st.ingested.channel++;
            void this.enqueue(a.handle, parsed.dm);
          }
        }, { onError: (e) => this.o.log("channel subscription error", { error: (e as Error)?.message ?? String(e) }) });
        this.audit("kb_connected", { agent: h.agent, channel: h.channel, connects: this.st.connects });
        this.o.log("connected to the knowledge base", { agent: h.agent, channel: h.channel });
        await this.retryPending();
        await this.catchUp();
        failures = 0;
        await this.sub.done;
      } catch (e) {
        failures++;
        this.o.log("knowledge base connection failed", { error: (e as Error)?.message ?? String(e), failures });
      }
      this.o.kb.setHandle(null);
      const sub = this.sub;
      this.sub = null;
      await sub?.stop().catch(() => undefined);
      await h?.medium.close().catch(() => undefined);
      if (this.closed) break;
      this.audit("kb_disconnected", { failures });
      const delay = Math.min(reconnectBackoffMs.max, reconnectBackoffMs.first * 2 ** Math.min(failures, 6));
      await new Promise<void>((r) => {
        const t = setTimeout(r, delay);
        this.wake = () => {
          clearTimeout(t);
          r();
        };
      });
      this.wake = null;
    }
  }

  /**
   * Drain, then disconnect: wait for every ingest in flight (a pose the caller may already
   * have been told about), every queued DM and its KB record, and retry the records that
   * failed while the connection is still up; only then stop reconnecting and end the
   * subscription. Ingress must be stopped first (the HTTP server and the bus); a DM node
   * the subscription delivers during the drain is drained too. A record that still fails is
   * in the audit without its `kb_recorded`, so the next boot writes it.
   */
  async close(): Promise<void> {
    while (this.ingesting.size > 0 || this.inflight.size > 0) {
      await Promise.allSettled([...this.ingesting, ...this.inflight.values()]);
    }
    if (this.pending.length > 0 && this.o.kb.connected) await this.retryPending();
    this.closed = true;
    this.wake?.();
    await this.sub?.stop().catch(() => undefined);
    await this.loop?.catch(() => undefined);
  }
}
