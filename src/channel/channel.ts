/**
 * The agent's moves and reads over a channel (docs/channel.md). Written once against
 * Medium, so every call runs the same over `wire` and `local`. A handle is `{medium, agent,
 * context, channel}`, threaded first into every call; every write goes to the agent's own
 * context (D8), creator-stamped.
 *
 *   const h = await join(wire({ url }), "CxDeploy", "AgentAtlas");
 *   const q = await poseQuery(h, "(usesDatabase ProdCluster ?db)");
 *   const a = await answer(h2, str("Postgres 16"), q);
 */
import * as terms from "../kb/term.js";
import { isContextName } from "../kb/sentence.js";
import { ChannelError } from "./errors.js";
import { contextFor, isAgentId, SPEECH_ACTS_CONTEXT, UNIVERSE_CONTEXT, CORE_CONTEXT } from "./names.js";
import type { Medium, AgentId, ContextName, Handle, SentexRecord, EditAnswer, Strength, AddEntry } from "./medium.js";

export interface AgentHandle {
  readonly medium: Medium;
  readonly agent: AgentId;
  /** The agent's own context (contextFor(agent)): the only one it writes. */
  readonly context: ContextName;
  readonly channel: ContextName;
}

const sx = (h: Handle): string => {
  if (!Number.isSafeInteger(h) || h < 1) throw new ChannelError("bad-request", `a handle is a positive integer, got ${JSON.stringify(h)}`);
  return `(sentexHandle ${h})`;
};

/**
 * Bind `agentId` to `medium` and `channel`: lifts the agent's own context under the channel
 * (`(genlCx channel CxAtlas)`, so the channel sees its moves) and roots it in the move
 * vocabulary (`(genlCx CxAtlas CxSpeechActs)`, override with `speaks`). Both edges are
 * written in one edit; re-joining stores nothing new. Needs CxSpeechActs loaded.
 *
 *   const h = await join(m, "CxDeploy", "AgentAtlas"); // h.context === "CxAtlas"
 */
export async function join(medium: Medium, channel: ContextName, agentId: AgentId, opts: { speaks?: ContextName } = {}): Promise<AgentHandle> {
  if (!isAgentId(agentId)) throw new ChannelError("naming", `agent id ${JSON.stringify(agentId)} must be Agent followed by CapitalCamelCase, e.g. AgentAtlas`);
  const speaks = opts.speaks ?? SPEECH_ACTS_CONTEXT;
  for (const c of [channel, speaks]) if (!isContextName(c)) throw new ChannelError("naming", `context ${JSON.stringify(c)} must be Cx followed by CapitalCamelCase`);
  const context = contextFor(agentId);
  // The edges land in CxUniverse whatever context names them; the agent's own context is
  // named so that the daemon's write boundary accepts them from an agent token (K4).
  await medium.edit({
    add: [
      { sentence: `(genlCx ${channel} ${context})`, context, creator: agentId },
      { sentence: `(genlCx ${context} ${speaks})`, context, creator: agentId },
    ],
  });
  return Object.freeze({ medium, agent: agentId, context, channel });
}

// ------------------------------------------------------------------ moves

/**
 * Originate a claim in the agent's own context, creator-stamped. Returns its sentex handle;
 * an identical claim returns the same handle.
 *
 *   const c = await assert(h, "(usesDatabase ProdCluster Postgres)");
 */
export async function assert(h: AgentHandle, sentence: string, opts: { strength?: Strength } = {}): Promise<Handle> {
  return (await h.medium.assert(sentence, h.context, { creator: h.agent, ...opts })).handle;
}

/** A query node `(queries Agent Question)`; Question is a term (often a sentence with variables). Returns its handle. */
export const poseQuery = (h: AgentHandle, question: string): Promise<Handle> => assert(h, `(queries ${h.agent} ${question})`);

/**
 * `(answers Agent Content (sentexHandle Q))`: reply to query Q. Content is a term in text
 * (`str("Postgres 16")` for a string). A re-answer with the same content returns the same handle.
 */
export const answer = (h: AgentHandle, content: string, queryHandle: Handle): Promise<Handle> => assert(h, `(answers ${h.agent} ${content} ${sx(queryHandle)})`);

/** `(endorses Agent (sentexHandle T))`: stand behind T. */
export const endorse = (h: AgentHandle, target: Handle): Promise<Handle> => assert(h, `(endorses ${h.agent} ${sx(target)})`);

/** `(justifies Agent Ground (sentexHandle T))`: offer Ground as a reason for T. */
export const justify = (h: AgentHandle, ground: string, target: Handle): Promise<Handle> => assert(h, `(justifies ${h.agent} ${ground} ${sx(target)})`);

/** `(notUnderstood Agent (sentexHandle T))`: not target-following, it outlives T. */
export const notUnderstood = (h: AgentHandle, target: Handle): Promise<Handle> => assert(h, `(notUnderstood ${h.agent} ${sx(target)})`);

/** `(refuse Agent (sentexHandle T))`: decline to act on T; not target-following. */
export const refuse = (h: AgentHandle, target: Handle): Promise<Handle> => assert(h, `(refuse ${h.agent} ${sx(target)})`);

/**
 * A ballot: "for" -> `(votesFor Agent (sentexHandle T))`, "against" -> `(votesAgainst ...)`;
 * any other stance is refused `bad-stance` before anything is written. One ballot per agent
 * per stance (identity); to change a vote, retract the old ballot.
 */
export async function vote(h: AgentHandle, stance: "for" | "against", target: Handle): Promise<Handle> {
  const pred = stance === "for" ? "votesFor" : stance === "against" ? "votesAgainst" : undefined;
  if (!pred) throw new ChannelError("bad-stance", `a stance is "for" or "against", got ${JSON.stringify(stance)}`);
  return assert(h, `(${pred} ${h.agent} ${sx(target)})`);
}

/** The negation of a stored sentence: `S` -> `(not S)`, `(not S)` -> `S`. */
export function negationOf(sentence: string): string {
  const t = terms.parseTerm(sentence);
  if (terms.isList(t) && t[0] === "not" && t.length === 2) return terms.printTerm(t[1]!);
  return `(not ${terms.printTerm(t)})`;
}

/**
 * Challenge the claim at `target`: the rebutting claim (the negation of the target's
 * sentence, so the pair surfaces in contradictions) and `(disputes Agent (sentexHandle T))`,
 * both in the agent's own context, in ONE edit (K3: both or neither). Returns the dispute
 * edge's handle. The rebuttal is a plain claim: it outlives the target (reference §8.2).
 */
export async function dispute(h: AgentHandle, target: Handle): Promise<Handle> {
  const t = await h.medium.sentex(target);
  const r = await h.medium.edit({
    add: [
      { sentence: negationOf(t.sentence), context: h.context, creator: h.agent },
      { sentence: `(disputes ${h.agent} ${sx(target)})`, context: h.context, creator: h.agent },
    ],
  });
  return r.added[1]!;
}

/** Retract a move (or any sentex the agent may remove); target-following replies go with it, in the same event. */
export const retract = (h: AgentHandle, handle: Handle): Promise<{ seq: number; removed: Handle[] }> => h.medium.retract(handle);

/**
 * Assert several linked claims as one reply: the whole batch is checked first (check-edit)
 * and, if any entry has a problem, nothing is stored and `reply-inadmissible` is thrown with
 * the problems; otherwise it is committed in one edit (one seq, one event).
 *
 *   await replyMany(h, [`(answers ${h.agent} X (sentexHandle ${q}))`, "(usesDatabase Prod X)"]);
 */
export async function replyMany(h: AgentHandle, sentences: readonly string[]): Promise<EditAnswer> {
  const add: AddEntry[] = sentences.map((sentence) => ({ sentence, context: h.context, creator: h.agent }));
  const problems = await h.medium.checkEdit({ add });
  if (problems.length > 0) {
    throw new ChannelError("reply-inadmissible", `the reply has ${problems.length} problem${problems.length === 1 ? "" : "s"}; nothing was stored`, { problems });
  }
  return h.medium.edit({ add });
}

// ------------------------------------------------------------------ reads

function argOf(s: SentexRecord | string, i: number, what: string): string {
  const sentence = typeof s === "string" ? s : s.sentence;
  const t = terms.parseTerm(sentence);
  if (!terms.isList(t) || t.length <= i) throw new ChannelError("shape", `${what} needs a move sentence with at least ${i} arguments, got ${sentence}`);
  return terms.printTerm(t[i]!);
}

/** Who made a move: the first argument of its sentence (equal to the creator the daemon stamped). */
export const speakerOf = (move: SentexRecord | string): AgentId => argOf(move, 1, "speakerOf");

/** The content of an `answers` move: its second argument, as canonical term text. */
export const answerContent = (move: SentexRecord | string): string => argOf(move, 2, "answerContent");

/** Every believed answer to query `q`, in any context. Pair with speakerOf and answerContent. */
export const answersTo = (h: AgentHandle, q: Handle): Promise<SentexRecord[]> => h.medium.match(`(answers ?agent ?content ${sx(q)})`, "?ctx");

/** Every believed endorsement of `target`, in any context. */
export const endorsementsOf = (h: AgentHandle, target: Handle): Promise<SentexRecord[]> => h.medium.match(`(endorses ?agent ${sx(target)})`, "?ctx");

/** Cone-aware solutions for `goal` in `context` (default: the channel), as binding maps. */
export async function query(h: AgentHandle, goal: string, context: ContextName = h.channel): Promise<Record<string, string>[]> {
  return (await h.medium.query(goal, context)).solutions;
}

/**
 * Every context `context` sees, computed client-side from the genlCx edges (stored in
 * CxUniverse): itself, everything reachable over edges, and CxCore with its own cone. One
 * read, so a read over the channel costs the same whatever the number of agents.
 */
export async function coneOf(medium: Medium, context: ContextName): Promise<Set<ContextName>> {
  const supers = new Map<string, string[]>();
  for (const e of await medium.match("(genlCx ?sub ?super)", UNIVERSE_CONTEXT)) {
    const t = terms.parseTerm(e.sentence) as terms.List;
    const sub = t[1] as string;
    const list = supers.get(sub) ?? [];
    list.push(t[2] as string);
    supers.set(sub, list);
  }
  const cone = new Set<string>();
  const stack = [context, CORE_CONTEXT];
  while (stack.length) {
    const c = stack.pop()!;
    if (cone.has(c)) continue;
    cone.add(c);
    for (const s of supers.get(c) ?? []) stack.push(s);
  }
  return cone;
}

export interface ClaimStatus {
  holder: AgentId;
  /** Epoch ms the lease runs to. */
  until: number;
  handle: Handle;
}

export interface OpenQuery {
  handle: Handle;
  sentex: SentexRecord;
  /** Who asked (the query node's first argument). */
  agent: AgentId;
  /** The question term, canonical text. */
  question: string;
  /** Believed answers visible from the channel. */
  answers: number;
  /** The live claim on it (the latest lease still running), if any. */
  claim?: ClaimStatus;
}

function targetOf(sentence: string, i: number): { t: terms.List; target: number | undefined } {
  const t = terms.parseTerm(sentence) as terms.List;
  return { t, target: terms.handleOfTerm(t[i]!) };
}

/**
 * K7: the query nodes the channel sees (its cone), oldest first, each with its answer count
 * and its live claim; `{unanswered: true}` keeps those with no answer. Four reads whatever
 * the number of queries. `now` (epoch ms) decides which leases are live (default: this
 * machine's clock; the daemon refuses claims with its own).
 */
export async function openQueries(h: AgentHandle, opts: { unanswered?: boolean; now?: number } = {}): Promise<OpenQuery[]> {
  const [cone, queries, answers, claims] = await Promise.all([
    coneOf(h.medium, h.channel),
    h.medium.match("(queries ?agent ?question)", "?ctx"),
    h.medium.match("(answers ?agent ?content ?target)", "?ctx"),
    h.medium.match("(claims ?agent ?target ?until)", "?ctx"),
  ]);
  const now = opts.now ?? Date.now();
  const counts = new Map<number, number>();
  for (const a of answers) {
    if (!cone.has(a.context)) continue;
    const { target } = targetOf(a.sentence, 3);
    if (target !== undefined) counts.set(target, (counts.get(target) ?? 0) + 1);
  }
  const live = new Map<number, ClaimStatus>();
  for (const c of claims) {
    if (!cone.has(c.context)) continue;
    const { t, target } = targetOf(c.sentence, 2);
    const until = Number(t[3]);
    if (target === undefined || !(until > now)) continue;
    const prev = live.get(target);
    if (!prev || until > prev.until) live.set(target, { holder: t[1] as string, until, handle: c.handle });
  }
  const out: OpenQuery[] = [];
  for (const q of queries) {
    if (!cone.has(q.context)) continue;
    const n = counts.get(q.handle) ?? 0;
    if (opts.unanswered && n > 0) continue;
    const t = terms.parseTerm(q.sentence) as terms.List;
    const entry: OpenQuery = { handle: q.handle, sentex: q, agent: t[1] as string, question: terms.printTerm(t[2]!), answers: n };
    const claim = live.get(q.handle);
    if (claim) entry.claim = claim;
    out.push(entry);
  }
  return out.sort((a, b) => a.handle - b.handle);
}

// ------------------------------------------------------------------ claims

/**
 * Take query `q` for `leaseMs`: writes `(claims Agent (sentexHandle Q) UntilMs)`. The agent's
 * older claims on Q are removed in the same edit (renewal replaces, one seq). While another
 * agent's lease on Q is live the engine refuses it `claimed`; an expired lease frees Q with
 * no write; the claim follows its target.
 *
 *   const { until } = await claim(h, q, { leaseMs: 30_000 });
 */
export async function claim(h: AgentHandle, q: Handle, opts: { leaseMs: number; now?: number }): Promise<ClaimStatus> {
  if (!Number.isSafeInteger(opts.leaseMs) || opts.leaseMs < 1) throw new ChannelError("bad-request", `leaseMs must be a positive whole number, got ${opts.leaseMs}`);
  const until = (opts.now ?? Date.now()) + opts.leaseMs;
  const sentence = `(claims ${h.agent} ${sx(q)} ${until})`;
  const mine = await h.medium.match(`(claims ${h.agent} ${sx(q)} ?until)`, h.context);
  const remove = mine.filter((m) => m.sentence !== sentence).map((m) => m.handle);
  try {
    // A first claim is a plain assert, so the daemon's own refusal (409 claimed) comes through as is;
    // a renewal is one edit (add the new lease, remove the older ones).
    const handle =
      remove.length === 0
        ? (await h.medium.assert(sentence, h.context, { creator: h.agent })).handle
        : (await h.medium.edit({ add: [{ sentence, context: h.context, creator: h.agent }], remove })).added[0]!;
    return { holder: h.agent, until, handle };
  } catch (e) {
    throw asClaimed(e);
  }
}

/** An edit refused because of a live lease is reported as the lease's own type, `claimed` (its status stays the edit's 400). */
function asClaimed(e: unknown): unknown {
  if (e instanceof ChannelError && e.type === "inadmissible" && e.problems?.some((p) => p.type === "claimed")) {
    const p = e.problems.find((x) => x.type === "claimed")!;
    return new ChannelError("claimed", p.error, { status: e.status, problems: e.problems, details: e.details, cause: e });
  }
  return e;
}

/** Drop the agent's own claims on `q` (one edit); answers how many were removed. */
export async function release(h: AgentHandle, q: Handle): Promise<number> {
  const mine = await h.medium.match(`(claims ${h.agent} ${sx(q)} ?until)`, h.context);
  if (mine.length === 0) return 0;
  await h.medium.edit({ remove: mine.map((m) => m.handle) });
  return mine.length;
}

/** The live claim on `q` (the latest lease still running), if any. */
export async function claimOf(h: AgentHandle, q: Handle, opts: { now?: number } = {}): Promise<ClaimStatus | undefined> {
  const now = opts.now ?? Date.now();
  let best: ClaimStatus | undefined;
  for (const c of await h.medium.match(`(claims ?agent ${sx(q)} ?until)`, "?ctx")) {
    const t = terms.parseTerm(c.sentence) as terms.List;
    const until = Number(t[3]);
    if (until > now && (!best || until > best.until)) best = { holder: t[1] as string, until, handle: c.handle };
  }
  return best;
}
