/**
 * The local medium: an in-process KB (the single-process shape). Writes and reads are the
 * KB's own calls; a subscription is a `kb.onEvent` listener with in-process filtering whose
 * callbacks are queued (Delivery) so a slow or throwing one never runs inside the KB's
 * publish; the cursor feed that catch-up needs reads the KB's durable event log
 * (`kb.readEvents`), so openConsumer/sync run unchanged over both media.
 *
 * No tokens in-process: every caller is trusted (like the daemon's open mode), and the
 * write boundary is kept by construction (a handle writes only its own context).
 *
 *   const m = local(await openKb({ path: ":memory:", contextsDir: "contexts" }));
 */
import { nanoid } from "nanoid";
import { terms, disputes, adjudication, belief, KbError, type Kb } from "../kb/index.js";
import { ChannelError, fromLocal } from "./errors.js";
import { Delivery, report, DEFAULT_MAX_QUEUED_EVENTS } from "./delivery.js";
import { compileLocalWatch, filterLocal, type LocalWatch } from "./filter.js";
import { contextFor, isAgentId, REGISTRY_CONTEXT } from "./names.js";
import type {
  Medium, AssertAnswer, EditAnswer, EditBatch, QueryAnswer, WatchSpec, FeedOpenAnswer, FeedPollOptions, FeedPollAnswer,
  AgentRegistration, AgentInfo, SentexRecord, Problem, Subscription, SubscribeOptions, EventCallback, FeedEvent, Strength,
  Dispute, DisputeState, RulingAnswer, WhoRuled, Tally, MajorityOutcome, BeliefAnswer, Disagreement,
} from "./medium.js";

/** Local cursor feeds open at once (the daemon's default subscription ceiling). */
export const MAX_LOCAL_FEEDS = 256;
/** Durable-log events one local poll examines (the daemon's maxScanEvents). */
export const MAX_SCAN_EVENTS = 10_000;
const DEFAULT_POLL_LIMIT = 1000;

interface LocalFeed {
  watch: LocalWatch;
  start: number;
}

async function guard<T>(f: () => T | Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw fromLocal(e);
  }
}

export class LocalMedium implements Medium {
  readonly kind = "local" as const;
  private readonly feeds = new Map<string, LocalFeed>();

  constructor(readonly kb: Kb) {}

  assert(sentence: string, context: string, opts: { strength?: Strength; creator?: string } = {}): Promise<AssertAnswer> {
    return guard(async () => {
      const { handle, seq, created } = await this.kb.assert(sentence, context, opts);
      return { handle, seq, created };
    });
  }

  edit(batch: EditBatch): Promise<EditAnswer> {
    return guard(async () => {
      const { seq, added, removed } = await this.kb.edit(batch);
      return { seq, added, removed };
    });
  }

  checkEdit(batch: EditBatch): Promise<Problem[]> {
    return guard(() => this.kb.checkEdit(batch));
  }

  retract(handle: number): Promise<{ seq: number; removed: number[] }> {
    return guard(() => this.kb.retract(handle));
  }

  sentex(handle: number): Promise<SentexRecord> {
    return guard(() => {
      const s = this.kb.sentex(handle);
      if (!s) throw new ChannelError("unknown-handle", `no sentex has handle ${handle}`);
      return s;
    });
  }

  match(sentence: string, context: string): Promise<SentexRecord[]> {
    return guard(() => this.kb.match(sentence, context));
  }

  query(goal: string, context: string, opts: { limit?: number } = {}): Promise<QueryAnswer> {
    return guard(() => this.kb.query(goal, context, opts));
  }

  feedOpen(spec: WatchSpec): Promise<FeedOpenAnswer> {
    return guard(() => {
      if (this.feeds.size >= MAX_LOCAL_FEEDS) throw new ChannelError("too-many-subscriptions", `at most ${MAX_LOCAL_FEEDS} local feeds are open at once`);
      const watch = compileLocalWatch(spec);
      const head = this.kb.headSeq;
      if (spec.from !== undefined && (!Number.isSafeInteger(spec.from) || spec.from < 0 || spec.from > head)) {
        throw new ChannelError("bad-cursor", `from must be a seq between 0 and the head ${head}`);
      }
      const start = spec.from ?? head;
      const token = "local_" + nanoid();
      this.feeds.set(token, { watch, start });
      return { token, cursor: start, maxEvents: MAX_SCAN_EVENTS };
    });
  }

  feedPoll(token: string, cursor: number, opts: FeedPollOptions = {}): Promise<FeedPollAnswer> {
    return guard(async () => {
      const feed = this.feeds.get(token);
      if (!feed) throw new ChannelError("unknown-subscription", `no local feed has token ${token}`);
      const head = this.kb.headSeq;
      if (!Number.isSafeInteger(cursor) || cursor < feed.start || cursor > head) {
        throw new ChannelError("bad-cursor", `cursor ${cursor} is outside ${feed.start}..${head}`);
      }
      let answer = this.scan(feed, cursor, opts.limit ?? DEFAULT_POLL_LIMIT);
      if (answer.events.length === 0 && answer.lagged === 0 && (opts.waitMs ?? 0) > 0 && answer.cursor === this.kb.headSeq) {
        await this.nextEvent(opts.waitMs!, opts.signal);
        if (!this.feeds.has(token)) throw new ChannelError("unknown-subscription", `local feed ${token} was closed`);
        answer = this.scan(feed, answer.cursor, opts.limit ?? DEFAULT_POLL_LIMIT);
      }
      return answer;
    });
  }

  /** Events after `cursor` from the durable log; `lagged` counts the seqs the log no longer holds. */
  private scan(feed: LocalFeed, cursor: number, limit: number): FeedPollAnswer {
    const oldest = this.kb.oldestRetainedSeq();
    let lagged = 0;
    if (cursor < oldest - 1) {
      lagged = oldest - 1 - cursor; // an upper bound: some of them may not have matched
      cursor = oldest - 1;
    }
    const events: FeedEvent[] = [];
    let next = cursor;
    for (const ev of this.kb.readEvents(cursor, MAX_SCAN_EVENTS)) {
      const f = filterLocal(feed.watch, ev, this.kb);
      if (f) {
        if (events.length >= limit) break;
        events.push(f);
      }
      next = ev.seq;
    }
    return { events, cursor: next, lagged };
  }

  private nextEvent(waitMs: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        off();
        signal?.removeEventListener("abort", aborted);
      };
      const aborted = () => {
        done();
        reject(new ChannelError("aborted", "the poll was aborted"));
      };
      const timer = setTimeout(() => (done(), resolve()), waitMs);
      const off = this.kb.onEvent(() => (done(), resolve()));
      if (signal?.aborted) aborted();
      else signal?.addEventListener("abort", aborted, { once: true });
    });
  }

  feedClose(token: string): Promise<boolean> {
    return Promise.resolve(this.feeds.delete(token));
  }

  /**
   * An in-process listener. Callbacks go through a bounded Delivery queue: at the bound
   * the oldest queued event is dropped and reported through onLagged (the KB's writer is
   * never made to wait for a subscriber).
   */
  subscribe(spec: { goal?: string; context?: string }, callback: EventCallback, opts: SubscribeOptions = {}): Promise<Subscription> {
    return guard(() => {
      const watch = compileLocalWatch(spec);
      const delivery = new Delivery(callback, opts.onError, opts.maxQueuedEvents ?? DEFAULT_MAX_QUEUED_EVENTS);
      let resolveDone!: () => void;
      const done = new Promise<void>((r) => (resolveDone = r));
      const off = this.kb.onEvent((ev) => {
        let f: FeedEvent | null;
        try {
          f = filterLocal(watch, ev, this.kb);
        } catch (e) {
          report(opts.onError, e);
          return;
        }
        if (!f) return;
        if (delivery.full && delivery.dropOldest() && opts.onLagged) {
          try {
            opts.onLagged(1);
          } catch (e) {
            report(opts.onError, e);
          }
        }
        delivery.push(f);
      });
      const token = "local_" + nanoid();
      let stopped: Promise<void> | undefined;
      const sub: Subscription = {
        token,
        medium: this,
        done,
        stop: () =>
          (stopped ??= (async () => {
            off();
            delivery.close();
            resolveDone();
          })()),
      };
      return sub;
    });
  }

  registerAgent(id: string, opts: { displayName?: string; trust?: number } = {}): Promise<AgentRegistration> {
    return guard(async () => {
      if (!isAgentId(id)) throw new ChannelError("naming", `agent id ${JSON.stringify(id)} must be Agent followed by CapitalCamelCase, e.g. AgentAtlas`);
      const wanted: [string, string][] = [["displayNameOf", terms.stringAtom(opts.displayName ?? id)]];
      if (opts.trust !== undefined || this.kb.match(`(trustLevel ${id} ?v)`, REGISTRY_CONTEXT).length === 0) {
        const trust = terms.canonicalNumber(String(opts.trust ?? 0));
        if (trust === undefined) throw new ChannelError("bad-request", `trust must be a plain decimal number, got ${opts.trust}`);
        wanted.push(["trustLevel", trust]);
      }
      const add = [{ sentence: `(agent ${id})`, context: REGISTRY_CONTEXT }];
      const remove: number[] = [];
      for (const [pred, value] of wanted) {
        add.push({ sentence: `(${pred} ${id} ${value})`, context: REGISTRY_CONTEXT });
        for (const old of this.kb.match(`(${pred} ${id} ?v)`, REGISTRY_CONTEXT)) {
          if ((terms.parseTerm(old.sentence) as terms.List)[2] !== value && !old.derived) remove.push(old.handle);
        }
      }
      await this.kb.edit({ add, remove });
      return { agent: id, context: contextFor(id), token: undefined };
    });
  }

  agents(): Promise<AgentInfo[]> {
    return guard(() => {
      const value = (pred: string, id: string) => {
        const hit = this.kb.match(`(${pred} ${id} ?v)`, REGISTRY_CONTEXT)[0];
        return hit ? ((terms.parseTerm(hit.sentence) as terms.List)[2] as string) : undefined;
      };
      return this.kb
        .match("(agent ?a)", REGISTRY_CONTEXT)
        .map((r) => (terms.parseTerm(r.sentence) as terms.List)[1] as string)
        .sort()
        .map((id) => {
          const name = value("displayNameOf", id);
          const trust = value("trustLevel", id);
          return {
            id,
            context: contextFor(id),
            displayName: name !== undefined && terms.isString(name) ? terms.stringValue(name) : (name ?? null),
            trust: trust !== undefined && terms.isNumber(trust) ? Number(trust) : null,
          };
        });
    });
  }

  headSeq(): Promise<number> {
    return Promise.resolve(this.kb.headSeq);
  }

  async close(): Promise<void> {
    this.feeds.clear();
  }

  // ------------------------------------------------------------ disputes, adjudication, belief: the core itself
  // Same answers as the daemon's routes (src/daemon/disputes.ts); no tokens, so no access
  // checks beyond the core's own (arbiter-is-party, not-own-statement).

  disputesIn(context: string): Promise<Dispute[]> {
    return guard(() => disputes.disputesIn(this.kb, context));
  }

  disputed(sentence: string, context: string): Promise<boolean> {
    return guard(() => disputes.disputed(this.kb, sentence, context));
  }

  disputeState(id: string): Promise<{ id: string; state: DisputeState }> {
    return guard(() => ({ id: disputes.disputeKey(id), state: disputes.disputeState(this.kb, id) }));
  }

  notifyDisputes(context: string): Promise<Dispute[]> {
    return guard(() => adjudication.notifyDisputes(this.kb, context));
  }

  sweepStale(context: string, opts: { staleTimeoutMs?: number } = {}): Promise<Dispute[]> {
    return guard(() => adjudication.sweepStale(this.kb, context, { staleTimeoutMs: opts.staleTimeoutMs }));
  }

  reopenDispute(id: string): Promise<number> {
    return guard(() => disputes.reopen(this.kb, id));
  }

  rule(req: { arbiter: string; id: string; upheld: string; channel: string }): Promise<RulingAnswer> {
    return guard(() => adjudication.rule(this.kb, req.arbiter, req.id, req.upheld, req.channel));
  }

  withdrawRulings(arbiter: string, id: string): Promise<number[]> {
    return guard(() => adjudication.withdrawRulings(this.kb, arbiter, id));
  }

  standingRulings(arbiter: string, id: string): Promise<number[]> {
    return guard(() => adjudication.standingRulings(this.kb, arbiter, id));
  }

  whoRuled(handle: number): Promise<WhoRuled | null> {
    return guard(() => {
      this.stored(handle);
      return adjudication.whoRuled(this.kb, handle) ?? null;
    });
  }

  tally(claim: number): Promise<Tally> {
    return guard(() => adjudication.tally(this.kb, claim));
  }

  resolveByMajority(id: string, claim: number, channel: string): Promise<MajorityOutcome> {
    return guard(() => adjudication.resolveByMajority(this.kb, id, claim, channel));
  }

  contestedPremises(sentence: string, context: string): Promise<number[]> {
    return guard(() => adjudication.contestedPremises(this.kb, sentence, context));
  }

  quarantine(context: string, handle: number): Promise<number> {
    return guard(() => adjudication.quarantine(this.kb, context, handle));
  }

  unquarantine(context: string, handle: number): Promise<boolean> {
    return guard(() => adjudication.unquarantine(this.kb, context, handle));
  }

  quarantined(context: string): Promise<number[]> {
    return guard(() => adjudication.quarantined(this.kb, context));
  }

  believes(agent: string, goal: string): Promise<BeliefAnswer> {
    return guard(() => belief.believes(this.kb, agent, goal));
  }

  convene(context: string, agents: string[]): Promise<string[]> {
    return guard(async () => {
      await belief.convene(this.kb, context, agents);
      return belief.convenedAgents(this.kb, context);
    });
  }

  disagreements(context: string): Promise<{ agents: string[]; disagreements: Disagreement[] }> {
    return guard(() => ({ agents: belief.convenedAgents(this.kb, context), disagreements: belief.disagreements(this.kb, context) }));
  }

  disregard(agent: string, handle: number): Promise<number> {
    return guard(() => {
      this.stored(handle);
      return belief.disregard(this.kb, agent, handle);
    });
  }

  restore(agent: string, handle: number): Promise<boolean> {
    return guard(() => belief.restore(this.kb, agent, handle));
  }

  disregards(agent: string): Promise<number[]> {
    return guard(() => belief.disregards(this.kb, agent));
  }

  /** `unknown-handle` for a handle not stored (the daemon's routes answer 404 alike). */
  private stored(handle: number): void {
    if (!this.kb.sentex(handle)) throw new KbError("unknown-handle", `no sentex has handle ${handle}`);
  }
}

/** A channel medium over an in-process KB (the single-process shape). The KB stays the caller's to close. */
export const local = (kb: Kb): LocalMedium => new LocalMedium(kb);
