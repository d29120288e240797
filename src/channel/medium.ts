/**
 * The transport a channel runs over (docs/channel.md). Two implementations: `wire`
 * (a daemon connection, the cross-process shape) and `local` (an in-process KB). Everything
 * in channel.ts, identity.ts and catchup.ts is written once against this interface; the two
 * differ only where the engine does, in how a subscription is delivered.
 */
import type { SentexRecord, RemovedEntry, Problem, Strength, Dispute, DisputeState, ClashSide, adjudication, belief } from "../kb/index.js";

export type Handle = number;
export type Seq = number;
export type ContextName = string;
export type AgentId = string;

export type { SentexRecord, RemovedEntry, Problem, Strength, Dispute, DisputeState, ClashSide };

/** A ruling's answer: the upheld sentence's handle and the handles of the rulings it replaced. */
export interface RulingAnswer {
  ruling: Handle;
  withdrawn: Handle[];
}

/** Who ruled with a sentex, on which disputes (canonical ids), and when (epoch ms). */
export interface WhoRuled {
  arbiter: AgentId;
  disputeIds: string[];
  at: number;
}

export type Tally = ReturnType<typeof adjudication.tally>;
export type MajorityOutcome = adjudication.MajorityOutcome;
export type Disagreement = belief.Disagreement;

export interface BeliefAnswer {
  believed: boolean;
  solutions: Record<string, string>[];
}

/**
 * Disputes, adjudication and belief (issue 6, docs/disputes.md): the daemon's routes over
 * the wire, the in-process core over local; each call answers alike on both.
 */
export interface DisputeMedium {
  disputesIn(context: ContextName): Promise<Dispute[]>;
  disputed(sentence: string, context: ContextName): Promise<boolean>;
  /** The canonical id and the lifecycle state. */
  disputeState(id: string): Promise<{ id: string; state: DisputeState }>;
  notifyDisputes(context: ContextName): Promise<Dispute[]>;
  sweepStale(context: ContextName, opts?: { staleTimeoutMs?: number }): Promise<Dispute[]>;
  /** Retract the dispute's marks; answers how many went. */
  reopenDispute(id: string): Promise<number>;
  rule(req: { arbiter: AgentId; id: string; upheld: string; channel: ContextName }): Promise<RulingAnswer>;
  withdrawRulings(arbiter: AgentId, id: string): Promise<Handle[]>;
  standingRulings(arbiter: AgentId, id: string): Promise<Handle[]>;
  whoRuled(handle: Handle): Promise<WhoRuled | null>;
  tally(claim: Handle): Promise<Tally>;
  resolveByMajority(id: string, claim: Handle, channel: ContextName): Promise<MajorityOutcome>;
  contestedPremises(sentence: string, context: ContextName): Promise<Handle[]>;
  quarantine(context: ContextName, handle: Handle): Promise<Handle>;
  unquarantine(context: ContextName, handle: Handle): Promise<boolean>;
  quarantined(context: ContextName): Promise<Handle[]>;
  believes(agent: AgentId, goal: string): Promise<BeliefAnswer>;
  /** Answers every agent the context now sees. */
  convene(context: ContextName, agents: AgentId[]): Promise<AgentId[]>;
  disagreements(context: ContextName): Promise<{ agents: AgentId[]; disagreements: Disagreement[] }>;
  disregard(agent: AgentId, handle: Handle): Promise<Handle>;
  restore(agent: AgentId, handle: Handle): Promise<boolean>;
  disregards(agent: AgentId): Promise<Handle[]>;
}

/** An added entry as a feed delivers it (a standing query adds its `bindings`). */
export type FeedAdded = SentexRecord & { bindings?: Record<string, string> };
export type FeedRemoved = RemovedEntry & { bindings?: Record<string, string> };

/** One settle's belief diff, filtered to what the subscription watches (docs/wire.md "The change feed"). */
export interface FeedEvent {
  seq: Seq;
  added: FeedAdded[];
  removed: FeedRemoved[];
}

export interface AddEntry {
  sentence: string;
  context: ContextName;
  strength?: Strength;
  /** Honoured for the admin and the local medium; an agent token's writes are stamped by the daemon. */
  creator?: string;
}

export interface EditBatch {
  add?: AddEntry[];
  remove?: Handle[];
}

export interface AssertAnswer {
  handle: Handle;
  seq: Seq;
  created: boolean;
}

export interface EditAnswer {
  seq: Seq;
  added: Handle[];
  removed: Handle[];
}

export interface QueryAnswer {
  solutions: Record<string, string>[];
  truncated: boolean;
  /** The durable seq the answer reflects. */
  asOf?: Seq;
}

export interface WatchSpec {
  goal?: string;
  context?: ContextName;
  /** Replay the durable log after this seq. */
  from?: Seq;
}

export interface FeedOpenAnswer {
  token: string;
  cursor: Seq;
  maxEvents: number;
}

export interface FeedPollOptions {
  /** Park until an event arrives or this many ms pass (the daemon caps it at 30 000). */
  waitMs?: number;
  /** Most events in one answer. */
  limit?: number;
  /** Aborts a parked poll (stop). */
  signal?: AbortSignal;
}

export interface FeedPollAnswer {
  events: FeedEvent[];
  cursor: Seq;
  lagged: number;
}

export interface AgentRegistration {
  agent: AgentId;
  context: ContextName;
  /** The agent's bearer token; undefined over the local medium (no tokens in-process). */
  token: string | undefined;
}

export interface AgentInfo {
  id: AgentId;
  context: ContextName;
  displayName: string | null;
  trust: number | null;
}

export interface SubscribeOptions {
  /** Long-poll wait per poll, wire only (default 20 000 ms). */
  waitMs?: number;
  /** Called with the count of events the subscription could not keep. Resync from the KB. */
  onLagged?: (dropped: number) => void;
  /** Called with whatever a callback threw, and with a poll error that ended the loop. */
  onError?: (error: unknown) => void;
  /** Events queued for the callback before polling pauses (wire) or the oldest is dropped (local). */
  maxQueuedEvents?: number;
}

export type EventCallback = (event: FeedEvent) => void | Promise<void>;

/** A live subscription. `stop` is idempotent and resolves once the daemon dropped the token. */
export interface Subscription {
  readonly token: string;
  readonly medium: Medium;
  /** Resolves when the subscription has ended (stopped, or a poll error ended it). */
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

export interface Medium extends DisputeMedium {
  readonly kind: "wire" | "local";
  assert(sentence: string, context: ContextName, opts?: { strength?: Strength; creator?: string }): Promise<AssertAnswer>;
  edit(batch: EditBatch): Promise<EditAnswer>;
  checkEdit(batch: EditBatch): Promise<Problem[]>;
  retract(handle: Handle): Promise<{ seq: Seq; removed: Handle[] }>;
  /** The stored sentex; throws `unknown-handle` when none has that handle. */
  sentex(handle: Handle): Promise<SentexRecord>;
  /** Believed sentexes stored exactly in `context` (`?ctx` = any context) matching a literal. */
  match(sentence: string, context: ContextName | "?ctx"): Promise<SentexRecord[]>;
  /** Cone-aware solutions for `goal` in `context`. */
  query(goal: string, context: ContextName, opts?: { limit?: number }): Promise<QueryAnswer>;
  /** Open a raw cursor feed (the catch-up primitive). */
  feedOpen(spec: WatchSpec): Promise<FeedOpenAnswer>;
  feedPoll(token: string, cursor: Seq, opts?: FeedPollOptions): Promise<FeedPollAnswer>;
  /** Drop a cursor feed; false when it was not there. */
  feedClose(token: string): Promise<boolean>;
  /** Deliver events matching goal in context to callback (goal and context undefined = every event). */
  subscribe(spec: { goal?: string; context?: ContextName }, callback: EventCallback, opts?: SubscribeOptions): Promise<Subscription>;
  /** Admin: register an agent (registry facts and, over the wire, a fresh token). */
  registerAgent(id: AgentId, opts?: { displayName?: string; trust?: number }): Promise<AgentRegistration>;
  agents(): Promise<AgentInfo[]>;
  /** The head seq. */
  headSeq(): Promise<Seq>;
  /** Release the connection (wire) or nothing (local: the KB belongs to the caller). */
  close(): Promise<void>;
}
