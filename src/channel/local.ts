/**
 * The local medium: an in-process KB (the single-process shape). Writes are the KB's own
 * calls; reads answer at a durable seq (`kb.read`, K11); the cursor feed, subscriptions and
 * catch-up run on the daemon's own feed hub (src/feed) and poll loop, and agents register
 * through the one registry module, so every guarantee proven for the wire holds here by
 * construction.
 *
 * No tokens in-process: every caller is trusted (like the daemon's open mode), and the
 * write boundary is kept by construction (a handle writes only its own context).
 *
 *   const m = local(await openKb({ path: ":memory:", contextsDir: "contexts" }));
 */
import { disputes, adjudication, belief, registry, KbError, type Kb } from "../kb/index.js";
import { FeedHub, type FeedLimits } from "../feed/index.js";
import { ChannelError, fromLocal } from "./errors.js";
import { startPollLoop } from "./pollloop.js";
import type {
  Medium, AssertAnswer, EditAnswer, EditBatch, QueryAnswer, WatchSpec, FeedOpenAnswer, FeedPollOptions, FeedPollAnswer,
  AgentRegistration, AgentInfo, SentexRecord, Problem, Subscription, SubscribeOptions, EventCallback, Strength,
  Dispute, DisputeState, RulingAnswer, WhoRuled, Tally, MajorityOutcome, BeliefAnswer, Disagreement,
} from "./medium.js";

/** In-process, every caller is the KB's owner: the hub's admin principal. */
const OWNER = { id: "local", admin: true } as const;

async function guard<T>(f: () => T | Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw fromLocal(e);
  }
}

export class LocalMedium implements Medium {
  readonly kind = "local" as const;
  /** The feed: the same hub (rings, cursors, parked polls, lagged) the daemon serves. */
  readonly hub: FeedHub;

  constructor(
    readonly kb: Kb,
    feedLimits: Partial<FeedLimits> = {},
  ) {
    this.hub = FeedHub.attach(kb, feedLimits, {}, { parseLimits: kb.engine.limits });
  }

  /** A read at a durable seq (K11): the KB's memory may already hold a group not yet fsynced. */
  private read<T>(fn: () => T): Promise<T> {
    return guard(async () => (await this.kb.read(fn)).value);
  }

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
    return this.read(() => this.kb.checkEdit(batch));
  }

  retract(handle: number): Promise<{ seq: number; removed: number[] }> {
    return guard(() => this.kb.retract(handle));
  }

  sentex(handle: number): Promise<SentexRecord> {
    return this.read(() => {
      const s = this.kb.sentex(handle);
      if (!s) throw new ChannelError("unknown-handle", `no sentex has handle ${handle}`);
      return s;
    });
  }

  match(sentence: string, context: string): Promise<SentexRecord[]> {
    return this.read(() => this.kb.match(sentence, context));
  }

  query(goal: string, context: string, opts: { limit?: number } = {}): Promise<QueryAnswer> {
    return guard(async () => {
      const { value, asOf } = await this.kb.read(() => this.kb.query(goal, context, opts));
      return { ...value, asOf };
    });
  }

  feedOpen(spec: WatchSpec): Promise<FeedOpenAnswer> {
    return guard(() => {
      const { token, cursor, maxEvents } = this.hub.watch(OWNER, spec);
      return { token, cursor, maxEvents };
    });
  }

  /** The hub's poll; an abort answers `aborted` at once (the parked poll ends with its subscription). */
  feedPoll(token: string, cursor: number, opts: FeedPollOptions = {}): Promise<FeedPollAnswer> {
    return guard(() => {
      const poll = this.hub.poll(OWNER, { token, cursor, waitMs: opts.waitMs, limit: opts.limit });
      const signal = opts.signal;
      if (!signal) return poll;
      poll.catch(() => undefined); // an aborted poll's own end is nobody's business
      return new Promise<FeedPollAnswer>((resolve, reject) => {
        const aborted = () => reject(new ChannelError("aborted", "the poll was aborted"));
        if (signal.aborted) return aborted();
        signal.addEventListener("abort", aborted, { once: true });
        poll.then(resolve, reject).finally(() => signal.removeEventListener("abort", aborted));
      });
    });
  }

  feedClose(token: string): Promise<boolean> {
    return Promise.resolve(this.hub.unwatch(OWNER, token));
  }

  /** The wire's subscription, over the same hub: a poll loop whose callbacks never hold the writer. */
  subscribe(spec: { goal?: string; context?: string }, callback: EventCallback, opts: SubscribeOptions = {}): Promise<Subscription> {
    return guard(async () => startPollLoop(this, spec, await this.feedOpen(spec), callback, opts));
  }

  registerAgent(id: string, opts: { displayName?: string; trust?: number } = {}): Promise<AgentRegistration> {
    return guard(async () => {
      const { context } = await registry.register(this.kb, id, opts);
      return { agent: id, context, token: undefined };
    });
  }

  agents(): Promise<AgentInfo[]> {
    return this.read(() => registry.agents(this.kb));
  }

  headSeq(): Promise<number> {
    return Promise.resolve(this.kb.headSeq);
  }

  /**
   * Nothing to release: the KB (and the hub that lives with it) is the caller's. Several
   * handles may share one local medium and each closes it when it leaves; subscriptions end
   * with their own stop().
   */
  async close(): Promise<void> {}

  // ------------------------------------------------------------ disputes, adjudication, belief: the core itself
  // Same answers as the daemon's routes (src/daemon/disputes.ts); no tokens, so no access
  // checks beyond the core's own (arbiter-is-party, not-own-statement).

  disputesIn(context: string): Promise<Dispute[]> {
    return this.read(() => disputes.disputesIn(this.kb, context));
  }

  disputed(sentence: string, context: string): Promise<boolean> {
    return this.read(() => disputes.disputed(this.kb, sentence, context));
  }

  disputeState(id: string): Promise<{ id: string; state: DisputeState }> {
    return this.read(() => ({ id: disputes.disputeKey(id), state: disputes.disputeState(this.kb, id) }));
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
    return this.read(() => adjudication.standingRulings(this.kb, arbiter, id));
  }

  whoRuled(handle: number): Promise<WhoRuled | null> {
    return this.read(() => {
      this.stored(handle);
      return adjudication.whoRuled(this.kb, handle) ?? null;
    });
  }

  tally(claim: number): Promise<Tally> {
    return this.read(() => adjudication.tally(this.kb, claim));
  }

  resolveByMajority(id: string, claim: number, channel: string): Promise<MajorityOutcome> {
    return guard(() => adjudication.resolveByMajority(this.kb, id, claim, channel));
  }

  contestedPremises(sentence: string, context: string): Promise<number[]> {
    return this.read(() => adjudication.contestedPremises(this.kb, sentence, context));
  }

  quarantine(context: string, handle: number): Promise<number> {
    return guard(() => adjudication.quarantine(this.kb, context, handle));
  }

  unquarantine(context: string, handle: number): Promise<boolean> {
    return guard(() => adjudication.unquarantine(this.kb, context, handle));
  }

  quarantined(context: string): Promise<number[]> {
    return this.read(() => adjudication.quarantined(this.kb, context));
  }

  believes(agent: string, goal: string): Promise<BeliefAnswer> {
    return this.read(() => belief.believes(this.kb, agent, goal));
  }

  convene(context: string, agents: string[]): Promise<string[]> {
    return guard(async () => {
      await belief.convene(this.kb, context, agents);
      return belief.convenedAgents(this.kb, context);
    });
  }

  disagreements(context: string): Promise<{ agents: string[]; disagreements: Disagreement[] }> {
    return this.read(() => ({ agents: belief.convenedAgents(this.kb, context), disagreements: belief.disagreements(this.kb, context) }));
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
    return this.read(() => belief.disregards(this.kb, agent));
  }

  /** `unknown-handle` for a handle not stored (the daemon's routes answer 404 alike). */
  private stored(handle: number): void {
    if (!this.kb.sentex(handle)) throw new KbError("unknown-handle", `no sentex has handle ${handle}`);
  }
}

/** A channel medium over an in-process KB (the single-process shape). The KB stays the caller's to close. */
export const local = (kb: Kb, feedLimits: Partial<FeedLimits> = {}): LocalMedium => new LocalMedium(kb, feedLimits);
