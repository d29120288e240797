/**
 * Disputes, adjudication and belief from the channel (issue 6, docs/disputes.md), agent
 * handle first like every channel call. Each is one Medium call: a daemon route over
 * `wire`, the in-process core over `local`, with the same answers. Defaults come from the
 * handle: the context read is the channel, the arbiter and the believer are the agent.
 *
 *   const [d] = await disputesIn(h);                        // what the channel sees
 *   await vote(h, "for", claim);                           // a ballot is a move (channel.ts)
 *   await resolveByMajority(admin, d.id, claim);           // admin: rules as AgentMajority
 *   (await disputeState(h, d.id)).state;                   // "resolved"
 *   const sub = await watchDisputes(h, (c) => console.log(c.id, c.from, "->", c.to));
 *
 * The lifecycle's marks and the rulings are sentexes, so they also arrive through the
 * ordinary feed: subscribe to `(disputeNotified ?d ?at)` / `(disputeStale ?d ?at ?why)` in
 * CxDisputes, `(ruling ?arbiter ?d ?upheld)` in the channel, `(contested ?t)` in the channel.
 */
import type { AgentHandle } from "./channel.js";
import { DISPUTES_CONTEXT } from "./names.js";
import type {
  AgentId, ContextName, Handle, Dispute, DisputeState, RulingAnswer, WhoRuled, Tally, MajorityOutcome, BeliefAnswer, Disagreement,
  Subscription, SubscribeOptions,
} from "./medium.js";

/** Every dispute `context` (default: the channel) sees, contradictions then conflicts, each with its state. */
export const disputesIn = (h: AgentHandle, context: ContextName = h.channel): Promise<Dispute[]> => h.medium.disputesIn(context);

/** Hot path: are `sentence` and its negation both believed where `context` looks? */
export const disputed = (h: AgentHandle, sentence: string, context: ContextName = h.channel): Promise<boolean> => h.medium.disputed(sentence, context);

/** A dispute's canonical id and state ("15-12" answers id "12-15"); an id that is no live clash is `resolved`. */
export const disputeState = (h: AgentHandle, id: string): Promise<{ id: string; state: DisputeState }> => h.medium.disputeState(id);

/** Admin over the wire: mark the channel's open disputes notified (once per episode). */
export const notifyDisputes = (h: AgentHandle, context: ContextName = h.channel): Promise<Dispute[]> => h.medium.notifyDisputes(context);

/** Admin over the wire: mark stale the channel's disputes un-ruled for `staleTimeoutMs` (default 24 h). */
export const sweepStale = (h: AgentHandle, opts: { context?: ContextName; staleTimeoutMs?: number } = {}): Promise<Dispute[]> =>
  h.medium.sweepStale(opts.context ?? h.channel, opts.staleTimeoutMs === undefined ? {} : { staleTimeoutMs: opts.staleTimeoutMs });

/** Admin over the wire: retract a dispute's marks (it is open again while the clash stands). */
export const reopenDispute = (h: AgentHandle, id: string): Promise<number> => h.medium.reopenDispute(id);

/**
 * Rule on dispute `id`, upholding `upheld` (its atom or `(not atom)`), as `arbiter` (default:
 * the agent itself; an agent token may rule only as itself), seen by `channel` (default the
 * handle's). Replaces the arbiter's standing ruling on that dispute in one edit.
 */
export const rule = (h: AgentHandle, id: string, upheld: string, opts: { arbiter?: AgentId; channel?: ContextName } = {}): Promise<RulingAnswer> =>
  h.medium.rule({ arbiter: opts.arbiter ?? h.agent, id, upheld, channel: opts.channel ?? h.channel });

/** Withdraw the arbiter's (default: the agent's) standing rulings on `id`. */
export const withdrawRulings = (h: AgentHandle, id: string, arbiter: AgentId = h.agent): Promise<Handle[]> => h.medium.withdrawRulings(arbiter, id);

/** The handles of `arbiter`'s standing rulings on `id`. */
export const standingRulings = (h: AgentHandle, arbiter: AgentId, id: string): Promise<Handle[]> => h.medium.standingRulings(arbiter, id);

/** Who ruled with sentex `handle`, on which disputes, when; null when it is no ruling. */
export const whoRuled = (h: AgentHandle, handle: Handle): Promise<WhoRuled | null> => h.medium.whoRuled(handle);

/** Distinct voters on `claim`; a voter on both sides is spoiled. */
export const tally = (h: AgentHandle, claim: Handle): Promise<Tally> => h.medium.tally(claim);

/** Admin over the wire: count the ballots on `claim` and rule `id` as AgentMajority (a tie withdraws). */
export const resolveByMajority = (h: AgentHandle, id: string, claim: Handle, channel: ContextName = h.channel): Promise<MajorityOutcome> =>
  h.medium.resolveByMajority(id, claim, channel);

/** Handles in `sentence`'s support that are a side of a dispute `context` sees. */
export const contestedPremises = (h: AgentHandle, sentence: string, context: ContextName = h.channel): Promise<Handle[]> => h.medium.contestedPremises(sentence, context);

/** Does `sentence` rest on a contested premise where `context` looks? */
export const restsOnContested = async (h: AgentHandle, sentence: string, context: ContextName = h.channel): Promise<boolean> =>
  (await h.medium.contestedPremises(sentence, context)).length > 0;

/** Admin over the wire: hide `handle` from the channel with an except mask. Answers the mask's handle. */
export const quarantine = (h: AgentHandle, handle: Handle, context: ContextName = h.channel): Promise<Handle> => h.medium.quarantine(context, handle);

/** Admin over the wire: lift the channel's mask on `handle`. */
export const unquarantine = (h: AgentHandle, handle: Handle, context: ContextName = h.channel): Promise<boolean> => h.medium.unquarantine(context, handle);

/** The handles the channel's masks hide. */
export const quarantined = (h: AgentHandle, context: ContextName = h.channel): Promise<Handle[]> => h.medium.quarantined(context);

/** K6: does `agent` (default: the handle's) believe `goal`, proved in its own context's cone? */
export const believes = (h: AgentHandle, goal: string, agent: AgentId = h.agent): Promise<BeliefAnswer> => h.medium.believes(agent, goal);

/** Admin over the wire: let `context` see each agent's belief context. Answers every agent it now sees. */
export const convene = (h: AgentHandle, context: ContextName, agents: AgentId[]): Promise<AgentId[]> => h.medium.convene(context, agents);

/** Contradictions `context` sees between convened agents' own statements. */
export const disagreements = (h: AgentHandle, context: ContextName): Promise<{ agents: AgentId[]; disagreements: Disagreement[] }> => h.medium.disagreements(context);

/** Hide one of the agent's own statements from its belief context (`not-own-statement` otherwise). Answers the mask. */
export const disregard = (h: AgentHandle, handle: Handle): Promise<Handle> => h.medium.disregard(h.agent, handle);

/** Undo a disregard. */
export const restore = (h: AgentHandle, handle: Handle): Promise<boolean> => h.medium.restore(h.agent, handle);

/** The handles the agent has disregarded. */
export const disregards = (h: AgentHandle, agent: AgentId = h.agent): Promise<Handle[]> => h.medium.disregards(agent);

// ------------------------------------------------------------------ lifecycle through the feed

/** One lifecycle transition: `from` undefined = the dispute appeared; `to` "resolved" = it left the channel's view. */
export interface DisputeChange {
  id: string;
  from: DisputeState | undefined;
  to: DisputeState;
  /** The seq of the event after which the change was read (the two feeds interleave, so not always the moving one). */
  seq: number;
}

export interface DisputeWatch {
  /** The states as last read, by canonical id. */
  readonly states: ReadonlyMap<string, DisputeState>;
  stop(): Promise<void>;
}

/**
 * Watch the lifecycle of the disputes `context` (default: the channel) sees through the
 * ordinary feed: one subscription on the context's cone (sides entering and leaving belief,
 * rulings) and one on CxDisputes (the marks); after each event the disputes are read again
 * and every change of state is handed to `onChange`, one at a time. A state that lasts less
 * than one read (the writes outrun the reader) may be skipped. A dispute that leaves the
 * view is reported `resolved` (ruled, a side retracted, or quarantined from the channel).
 */
export async function watchDisputes(
  h: AgentHandle,
  onChange: (c: DisputeChange) => void | Promise<void>,
  opts: { context?: ContextName } & SubscribeOptions = {},
): Promise<DisputeWatch> {
  const context = opts.context ?? h.channel;
  const states = new Map<string, DisputeState>();
  // Subscribe first, read the starting states second: an event landing in between is
  // queued behind the first read and re-read after it, so no transition is missed.
  let ready!: () => void;
  let chain = new Promise<void>((r) => (ready = r));
  const step = async (seq: number) => {
    const now = new Map((await h.medium.disputesIn(context)).map((d) => [d.id, d.state] as const));
    const changes: DisputeChange[] = [];
    for (const [id, to] of now) if (states.get(id) !== to) changes.push({ id, from: states.get(id), to, seq });
    for (const [id, from] of states) if (!now.has(id)) changes.push({ id, from, to: "resolved", seq });
    states.clear();
    for (const [id, s] of now) states.set(id, s);
    for (const c of changes) await onChange(c);
  };
  // Both subscriptions funnel into one chain, so reads and callbacks never interleave; a
  // failed read or a throwing onChange goes to onError and the next event is handled.
  const reread = (seq: number) =>
    (chain = chain.then(async () => {
      try {
        await step(seq);
      } catch (e) {
        opts.onError?.(e);
      }
    }));
  const { context: _context, ...subOpts } = opts;
  const subs: Subscription[] = [];
  try {
    subs.push(await h.medium.subscribe({ context }, (ev) => reread(ev.seq), subOpts));
    subs.push(await h.medium.subscribe({ context: DISPUTES_CONTEXT }, (ev) => reread(ev.seq), subOpts));
    for (const d of await h.medium.disputesIn(context)) states.set(d.id, d.state);
  } catch (e) {
    for (const s of subs) await s.stop();
    throw e;
  } finally {
    ready();
  }
  return {
    states,
    async stop() {
      for (const s of subs) await s.stop();
      await chain;
    },
  };
}
