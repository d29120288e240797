/**
 * Adjudication (issue 6, reference §8.5): policies that move a dispute on. None runs by
 * itself; a deployment (or an agent) calls them.
 *
 * - Leave open and notify: `notifyDisputes` marks each open dispute the channel sees as
 *   notified, once per episode; `sweepStale` marks the ones older than a timeout stale.
 *   Nothing is ever dropped: stale disputes stay listed.
 * - Arbiter rulings: `rule` asserts the upheld side at monotonic strength in the arbiter's
 *   own context (lifted under the channel), which defeats the default loser where both are
 *   seen. One standing ruling per arbiter per dispute, replaced atomically in one edit; an
 *   arbiter who holds either side as a claim is refused (`arbiter-is-party`); retracting a
 *   ruling reopens the dispute.
 * - Majority vote: `resolveByMajority` counts distinct voters (a voter on both sides is
 *   spoiled and counted on neither) and rules as AgentMajority; a tie (0-0 included)
 *   upholds nothing and withdraws a standing majority ruling.
 *
 * A ruling is two sentexes in the arbiter's context: the upheld sentence (monotonic) and a
 * mark `(ruling Arbiter (dispute ...) "upheld text")` saying which dispute it settles.
 */
import { KbError } from "./errors.js";
import type { Kb } from "./kb.js";
import type { Node } from "./node.js";
import { OUT } from "./write.js";
import { parseTerm, printTerm, stringAtom, stringValue } from "./term.js";
import { literalShape } from "./sentence.js";
import { contextFor, agentFor, isAgentId } from "./identity.js";
import { type Dispute, disputesIn, disputeHandles, disputeKey, disputeTerm, markNotified, markStale, markHandles, negation } from "./disputes.js";

export const MAJORITY_ARBITER = "AgentMajority";
export const DEFAULT_STALE_TIMEOUT_MS = 24 * 60 * 60 * 1000;

export interface AdjudicationOptions {
  /** The clock, epoch ms. */
  now?: () => number;
  /** Pushed each dispute as it is notified / goes stale. */
  notifySink?: (d: Dispute) => void;
  staleSink?: (d: Dispute) => void;
  /** How long a dispute may stay un-ruled before it is marked stale. */
  staleTimeoutMs?: number;
}

/** Mark every open dispute the channel sees as notified (once per episode) and push it to the sink. */
export async function notifyDisputes(kb: Kb, channel: string, opts: AdjudicationOptions = {}): Promise<Dispute[]> {
  const now = (opts.now ?? Date.now)();
  const out: Dispute[] = [];
  for (const d of disputesIn(kb, channel)) {
    if (d.state !== "open") continue;
    await markNotified(kb, d.id, now);
    const notified = { ...d, state: "notified" as const };
    opts.notifySink?.(notified);
    out.push(notified);
  }
  return out;
}

/** Mark stale (reason TimedOut) every dispute the channel sees, not already stale, opened before now - timeout. */
export async function sweepStale(kb: Kb, channel: string, opts: AdjudicationOptions = {}): Promise<Dispute[]> {
  const now = (opts.now ?? Date.now)();
  const timeout = opts.staleTimeoutMs ?? DEFAULT_STALE_TIMEOUT_MS;
  const out: Dispute[] = [];
  for (const d of disputesIn(kb, channel)) {
    if (d.state === "stale" || d.openedAt > now - timeout) continue;
    await markStale(kb, d.id, now, "TimedOut");
    const stale = { ...d, state: "stale" as const };
    opts.staleSink?.(stale);
    out.push(stale);
  }
  return out;
}

/** notify, then sweep. */
export async function pollDisputes(kb: Kb, channel: string, opts: AdjudicationOptions = {}): Promise<{ notified: Dispute[]; stale: Dispute[] }> {
  const notified = await notifyDisputes(kb, channel, opts);
  const stale = await sweepStale(kb, channel, opts);
  return { notified, stale };
}

interface RulingMark {
  mark: number;
  disputeId: string;
  upheld: string;
}

function rulingMarks(kb: Kb, arbiter: string, id?: string): RulingMark[] {
  const term = id ? disputeTerm(id) : "?d";
  return kb.match(`(ruling ${arbiter} ${term} ?text)`, contextFor(arbiter)).map((r) => {
    const t = parseTerm(r.sentence) as string[][];
    const d = t[2] as unknown as string[][];
    const a = Number((d[1] as string[])[1]);
    const b = Number((d[2] as string[])[1]);
    return { mark: r.handle, disputeId: a < b ? `${a}-${b}` : `${b}-${a}`, upheld: stringValue(t[3] as unknown as string) };
  });
}

function storedIn(kb: Kb, sentence: string, ctx: string): Node | undefined {
  const lit = literalShape(parseTerm(sentence));
  return kb.engine.index.find(ctx, lit.neg, lit.atom);
}

/** Handles of the upheld sentences of `arbiter`'s standing rulings on dispute `id`, ascending. */
export function standingRulings(kb: Kb, arbiter: string, id: string): number[] {
  const ctx = contextFor(arbiter);
  const out = new Set<number>();
  for (const m of rulingMarks(kb, arbiter, disputeKey(id))) {
    const n = storedIn(kb, m.upheld, ctx);
    if (n) out.add(n.h);
  }
  return [...out].sort((a, b) => a - b);
}

/** Who ruled with the sentex `h` (an upheld sentence), on which disputes, and when. */
export function whoRuled(kb: Kb, h: number): { arbiter: string; disputeIds: string[]; at: number } | undefined {
  const n = kb.engine.index.byHandle.get(h);
  if (!n) return undefined;
  const arbiter = agentFor(n.ctx);
  if (!arbiter) return undefined;
  const ids = rulingMarks(kb, arbiter)
    .filter((m) => m.upheld === n.text)
    .map((m) => m.disputeId);
  if (!ids.length) return undefined;
  return { arbiter, disputeIds: [...new Set(ids)].sort(), at: n.createdAt };
}

/**
 * Rule on dispute `id`, upholding `upheld` (one of the two sides' sentences, or either
 * polarity of their atom), as `arbiter`, seen by `channel`. Returns the ruling's handle
 * and the handles of rulings it replaced.
 */
export async function rule(kb: Kb, arbiter: string, id: string, upheld: string, channel: string): Promise<{ ruling: number; withdrawn: number[] }> {
  const key = disputeKey(id);
  const [a, b] = disputeHandles(key);
  const sides = [kb.engine.index.byHandle.get(a), kb.engine.index.byHandle.get(b)];
  const atom = sides.find((s) => s)?.akey;
  if (!atom) throw new KbError("unknown-handle", `dispute ${key}: neither side is stored`);
  const lit = literalShape(parseTerm(upheld, kb.engine.limits));
  if (printTerm(lit.atom) !== atom) throw new KbError("bad-request", `a ruling on dispute ${key} upholds ${atom} or (not ${atom}), not ${printTerm(lit.atom)}`);
  const text = lit.neg ? `(not ${atom})` : atom;
  const ctx = contextFor(arbiter);
  const marks = rulingMarks(kb, arbiter);
  // Party check: a side held in the arbiter's own context as a claim, not as a ruling.
  for (const s of sides) {
    if (!s) continue;
    const held = kb.engine.index.find(ctx, s.neg, s.atom);
    if (held && held.label !== OUT && !marks.some((m) => m.upheld === held.text)) {
      throw new KbError("arbiter-is-party", `${arbiter} is a party to dispute ${key}: it claims ${held.text} (handle ${held.h})`);
    }
  }
  await kb.edit({
    add: [
      { sentence: `(genlCx ${channel} ${ctx})`, context: "CxUniverse", strength: "monotonic" },
      { sentence: `(genlCx ${ctx} CxSpeechActs)`, context: "CxUniverse", strength: "monotonic" },
    ],
  });
  // The episode ends with the ruling, in the same edit: no reader sees the marks gone
  // without the ruling, and a refused ruling leaves them standing.
  const remove: number[] = markHandles(kb, key);
  // The arbiter upholds one side of the atom: ruling this side withdraws its ruling of the
  // other, with every mark that names it, also the marks of other disputes it settled.
  const withdrawn: number[] = [];
  const replaced = marks.filter((m) => m.upheld === negation(text));
  const old = replaced.length ? storedIn(kb, negation(text), ctx) : undefined;
  for (const m of replaced) remove.push(m.mark);
  if (old) {
    remove.push(old.h);
    withdrawn.push(old.h);
  }
  const result = await kb.edit({
    add: [
      { sentence: text, context: ctx, strength: "monotonic", creator: arbiter },
      { sentence: `(ruling ${arbiter} ${disputeTerm(key)} ${stringAtom(text)})`, context: ctx, creator: arbiter },
    ],
    remove,
  });
  return { ruling: result.added[0]!, withdrawn };
}

/** Withdraw every standing ruling of `arbiter` on dispute `id`. Returns the withdrawn handles. */
export async function withdrawRulings(kb: Kb, arbiter: string, id: string): Promise<number[]> {
  const key = disputeKey(id);
  const ctx = contextFor(arbiter);
  const marks = rulingMarks(kb, arbiter);
  const remove: number[] = [];
  const withdrawn: number[] = [];
  for (const m of marks.filter((x) => x.disputeId === key)) {
    remove.push(m.mark);
    const stillUsed = marks.some((o) => o.upheld === m.upheld && o.disputeId !== key);
    const n = storedIn(kb, m.upheld, ctx);
    if (n && !stillUsed && !withdrawn.includes(n.h)) {
      remove.push(n.h);
      withdrawn.push(n.h);
    }
  }
  if (remove.length) await kb.edit({ remove });
  return withdrawn.sort((x, y) => x - y);
}

/** Distinct voters for and against the claim `claimHandle`; a voter on both sides is spoiled. */
export function tally(kb: Kb, claimHandle: number): { for: number; against: number; spoiled: number; voters: { for: string[]; against: string[]; spoiled: string[] } } {
  const ballots = (pred: string) =>
    new Set(
      kb
        .match(`(${pred} ?a (sentexHandle ${claimHandle}))`, "?ctx")
        // A ballot counts for its speaker only from the speaker's own context; a first argument
        // that is no agent id (anyone may write `(votesFor Bob ...)`) is not a ballot.
        .filter((r) => {
          const voter = (parseTerm(r.sentence) as string[])[1]!;
          return isAgentId(voter) && contextFor(voter) === r.context;
        })
        .map((r) => (parseTerm(r.sentence) as string[])[1]!),
    );
  const pro = ballots("votesFor");
  const con = ballots("votesAgainst");
  const spoiled = [...pro].filter((v) => con.has(v)).sort();
  const f = [...pro].filter((v) => !con.has(v)).sort();
  const g = [...con].filter((v) => !pro.has(v)).sort();
  return { for: f.length, against: g.length, spoiled: spoiled.length, voters: { for: f, against: g, spoiled } };
}

export interface MajorityOutcome {
  for: number;
  against: number;
  outcome: "for" | "against" | "tie";
  ruling: number | null;
  withdrawn: number[];
}

/**
 * Count the ballots on `claimHandle` and rule dispute `id` as AgentMajority: more for
 * upholds the claim, more against upholds its negation, a tie upholds nothing and withdraws
 * a standing majority ruling. Idempotent on an unchanged count.
 */
export async function resolveByMajority(kb: Kb, id: string, claimHandle: number, channel: string): Promise<MajorityOutcome> {
  const claim = kb.sentex(claimHandle);
  if (!claim) throw new KbError("unknown-handle", `no sentex has handle ${claimHandle}`);
  const t = tally(kb, claimHandle);
  if (t.for === t.against) {
    const withdrawn = await withdrawRulings(kb, MAJORITY_ARBITER, id);
    return { for: t.for, against: t.against, outcome: "tie", ruling: null, withdrawn };
  }
  const upheld = t.for > t.against ? claim.sentence : negation(claim.sentence);
  const { ruling, withdrawn } = await rule(kb, MAJORITY_ARBITER, id, upheld, channel);
  return { for: t.for, against: t.against, outcome: t.for > t.against ? "for" : "against", ruling, withdrawn };
}

/** Handles in the transitive support of `sentence` (as seen from ctx) that are a side of a dispute ctx sees. */
export function contestedPremises(kb: Kb, sentence: string, ctx: string): number[] {
  const lit = literalShape(parseTerm(sentence, kb.engine.limits));
  const visible = kb.visibleFrom(ctx);
  const sides = new Set<number>();
  for (const d of disputesIn(kb, ctx)) for (const s of d.sides) sides.add(s.handle);
  const seen = new Set<number>(); // by handle: each read makes a fresh view of a sentex
  const stack = kb.engine.index.withAtom(lit.atom).filter((n) => n.neg === lit.neg && n.label !== OUT && visible(n));
  const out = new Set<number>();
  while (stack.length) {
    const n = stack.pop()!;
    if (seen.has(n.h)) continue;
    seen.add(n.h);
    if (sides.has(n.h)) out.add(n.h);
    for (const j of kb.engine.justsOf(n)) for (const a of j.ants) stack.push(a);
  }
  return [...out].sort((a, b) => a - b);
}

export const restsOnContested = (kb: Kb, sentence: string, ctx: string): boolean => contestedPremises(kb, sentence, ctx).length > 0;

/** Hide sentex `h` from the channel (and what sees it) with a monotonic except mask. Off unless called. */
export async function quarantine(kb: Kb, channel: string, h: number): Promise<number> {
  if (!kb.sentex(h)) throw new KbError("unknown-handle", `no sentex has handle ${h}`);
  return (await kb.assert(`(except (sentexHandle ${h}))`, channel, { strength: "monotonic" })).handle;
}

export async function unquarantine(kb: Kb, channel: string, h: number): Promise<boolean> {
  const mask = kb.match(`(except (sentexHandle ${h}))`, channel)[0];
  if (!mask) return false;
  await kb.retract(mask.handle);
  return true;
}

/** Handles the channel's except masks hide. */
export function quarantined(kb: Kb, channel: string): number[] {
  return kb
    .match("(except ?h)", channel)
    .map((r) => Number(/\(sentexHandle ([0-9]+)\)/.exec(r.sentence)?.[1]))
    .filter((h) => Number.isFinite(h))
    .sort((a, b) => a - b);
}
