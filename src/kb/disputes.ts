/**
 * Disputes (issue 6, reference §8.4): a dispute is a believed clash — P and (not P) —
 * seen by a context exactly where it sees both sides. Its id is its two handles in
 * ascending order (independent of side order). Its lifecycle:
 *
 *   open -> notified -> resolved, with stale for the un-ruled
 *
 * `open` and `resolved` are derived from belief (is the clash still believed?); `notified`
 * and `stale` are stored marks in CxDisputes, and retracting a mark reopens the dispute.
 * The marks are target-following, so a side that leaves the store takes its marks along.
 *
 *   disputesIn(kb, "CxApartment")  // [{ id: "12-15", state: "open", sides: [...] }]
 *   disputed(kb, "(adoptDog Flat)", "CxApartment")  // true, without scanning the KB
 */
import { KbError } from "./errors.js";
import { type Kb, type ClashSide, clashId } from "./kb.js";
import type { Node } from "./node.js";
import { OUT } from "./write.js";
import { parseTerm, printTerm } from "./term.js";
import { literalShape } from "./sentence.js";

export const DISPUTES_CONTEXT = "CxDisputes";

export type DisputeState = "open" | "notified" | "stale" | "resolved";

export interface Dispute {
  id: string;
  class: "contradiction" | "conflict";
  sides: [ClashSide, ClashSide];
  state: DisputeState;
  /** When the later side was asserted (a derived side: when the premises it rests on were, see assertedAt). */
  openedAt: number;
}

/** Parse "12-15" (or "15-12") into its two handles, ascending. */
export function disputeHandles(id: string): [number, number] {
  const m = /^([0-9]+)-([0-9]+)$/.exec(String(id));
  if (!m) throw new KbError("bad-request", `a dispute id is two handles joined by '-', such as "12-15"; got ${JSON.stringify(id)}`);
  const a = Number(m[1]);
  const b = Number(m[2]);
  return a < b ? [a, b] : [b, a];
}

/** Canonical form of an id: "15-12" -> "12-15". */
export const disputeKey = (id: string): string => {
  const [a, b] = disputeHandles(id);
  return clashId(a, b);
};

/** The term naming a dispute in its marks: `(dispute (sentexHandle 12) (sentexHandle 15))`. */
export function disputeTerm(id: string): string {
  const [a, b] = disputeHandles(id);
  return `(dispute (sentexHandle ${a}) (sentexHandle ${b}))`;
}

/** Is the clash between these two handles still believed somewhere (some context sees both)? */
function live(kb: Kb, a: number, b: number): [Node, Node] | undefined {
  const x = kb.engine.index.byHandle.get(a);
  const y = kb.engine.index.byHandle.get(b);
  if (!x || !y || x.label === OUT || y.label === OUT || x.neg === y.neg || x.akey !== y.akey) return undefined;
  return kb.engine.topology.meet(x.ctx, y.ctx) ? [x, y] : undefined;
}

function marks(kb: Kb, pred: "disputeNotified" | "disputeStale", id: string) {
  const pattern = pred === "disputeNotified" ? `(disputeNotified ${disputeTerm(id)} ?at)` : `(disputeStale ${disputeTerm(id)} ?at ?reason)`;
  return kb.match(pattern, DISPUTES_CONTEXT);
}

/** The lifecycle state of a dispute, derived from belief and the stored marks. */
export function disputeState(kb: Kb, id: string): DisputeState {
  const [a, b] = disputeHandles(id);
  if (!live(kb, a, b)) return "resolved";
  if (marks(kb, "disputeStale", id).length) return "stale";
  if (marks(kb, "disputeNotified", id).length) return "notified";
  return "open";
}

/** Every dispute `ctx` sees (it sees both sides), with its state; contradictions then conflicts. */
export function disputesIn(kb: Kb, ctx: string): Dispute[] {
  const { contradictions, conflicts } = kb.contradictions(ctx);
  return [...contradictions, ...conflicts].map((c) => ({
    id: c.id,
    class: c.kind,
    sides: c.sides,
    state: disputeState(kb, c.id),
    openedAt: Math.max(createdAt(kb, c.sides[0].handle), createdAt(kb, c.sides[1].handle)),
  }));
}

const createdAt = (kb: Kb, h: number): number => {
  const n = kb.engine.index.byHandle.get(h);
  return n ? assertedAt(kb, n, new Map()) : 0;
};

/**
 * When a sentex came to stand: a premise's createdAt; a derived sentex's is the earliest of
 * its justifications, each as late as its latest antecedent (or rule). A derived side has
 * createdAt 0, and 0 would make every dispute between derived sides older than any stale
 * timeout, so sweepStale marked it stale at its first sweep.
 */
function assertedAt(kb: Kb, n: Node, memo: Map<number, number>): number {
  if (n.premise !== 0) return n.createdAt;
  const known = memo.get(n.h); // by handle: each read makes a fresh view of a sentex
  if (known !== undefined) return known;
  memo.set(n.h, 0); // a support cycle adds nothing
  let best = Infinity;
  for (const j of kb.engine.justsOf(n)) {
    let t = assertedAt(kb, j.rule, memo);
    for (const a of j.ants) t = Math.max(t, assertedAt(kb, a, memo));
    best = Math.min(best, t);
  }
  const at = Number.isFinite(best) ? best : 0;
  memo.set(n.h, at);
  return at;
}

/**
 * Hot path: is `sentence` disputed where `ctx` looks? True when both it and its negation
 * are believed and visible from ctx. Reads one index bucket, never the whole KB.
 */
export function disputed(kb: Kb, sentence: string, ctx: string): boolean {
  const lit = literalShape(parseTerm(sentence, kb.engine.limits));
  const visible = kb.visibleFrom(ctx);
  let pos = false;
  let neg = false;
  for (const n of kb.engine.index.withAtom(lit.atom)) {
    if (n.label === OUT || !visible(n)) continue;
    if (n.neg) neg = true;
    else pos = true;
    if (pos && neg) return true;
  }
  return false;
}

/** Store the notified mark (idempotent per episode). Returns its handle. */
export async function markNotified(kb: Kb, id: string, atMs: number): Promise<number> {
  const existing = marks(kb, "disputeNotified", id);
  if (existing.length) return existing[0]!.handle;
  return (await kb.assert(`(disputeNotified ${disputeTerm(id)} ${Math.trunc(atMs)})`, DISPUTES_CONTEXT)).handle;
}

/** Store the stale mark with a reason symbol (e.g. TimedOut). Returns its handle. */
export async function markStale(kb: Kb, id: string, atMs: number, reason: string): Promise<number> {
  const existing = marks(kb, "disputeStale", id);
  if (existing.length) return existing[0]!.handle;
  return (await kb.assert(`(disputeStale ${disputeTerm(id)} ${Math.trunc(atMs)} ${reason})`, DISPUTES_CONTEXT)).handle;
}

/** The handles of a dispute's stored marks (notified and stale). */
export function markHandles(kb: Kb, id: string): number[] {
  return [...marks(kb, "disputeNotified", id), ...marks(kb, "disputeStale", id)].map((r) => r.handle);
}

/** Retract every mark of a dispute (it is open again while the clash stands). Returns how many went. */
export async function reopen(kb: Kb, id: string): Promise<number> {
  const handles = markHandles(kb, id);
  if (handles.length) await kb.edit({ remove: handles });
  return handles.length;
}

/** The stored sentence of a literal, negated: P -> (not P), (not P) -> P. */
export function negation(sentence: string): string {
  const lit = literalShape(parseTerm(sentence));
  const atom = printTerm(lit.atom);
  return lit.neg ? atom : `(not ${atom})`;
}

