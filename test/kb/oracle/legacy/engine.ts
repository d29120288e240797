// The engine as it was before the row engine (main at 6f4d6a3), kept unchanged (only its
// imports now point into src/) as an independent oracle for the differential test
// test/kb/rowengine-differential.test.ts: a second implementation of the same writes,
// outcomes, reads and rebuild. Not used by src/.
/**
 * The engine: stored sentexes as TMS nodes, forward chaining, and belief settling.
 *
 * Semantics (design.md "The model", reference §1.5, §1.6, §3), stated as the fixpoint the
 * incremental code must always agree with:
 *  1. MONO = monotonic premises, plus every conclusion of a firing whose antecedents are
 *     all in MONO (a rule confers monotonic strength; a conclusion is as strong as its
 *     weakest input).
 *  2. A default sentex is DEFEATED when a MONO sentex of the opposite polarity and the same
 *     atom sits where some context sees both.
 *  3. IN = MONO, plus undefeated default premises, plus undefeated conclusions of firings
 *     whose antecedents are all IN. Everything else is OUT.
 *  4. Stored = premises, plus conclusions with at least one justification whose
 *     antecedents are all IN (a defeated conclusion stays stored, OUT, ready to revive).
 *
 * A write seeds the nodes it touched; `settle` takes the region those seeds can influence
 * (dependents through justifications, and opposite-polarity nodes through defeat),
 * forgets the region's labels and recomputes them in two passes (monotonic, then default)
 * with the rest of the KB held fixed. Firings are rediscovered semi-naively: a node fires
 * when it is established, joined only against nodes already established. A conclusion
 * that would change outside the region widens the region and the settle runs again.
 * Edge changes (genlCx) move placement and visibility everywhere: they settle every node
 * that is not inert (inert = a premise no rule reads and nothing opposes).
 */
import { KbError, type Problem } from "../../../../src/kb/errors.js";
import { type List, type Term, printTerm, parseTerm, parseTermText, isSymbol, handleOfTerm, stringAtom, type ParseLimits, DEFAULT_PARSE_LIMITS } from "../../../../src/kb/term.js";
import { type Literal, sentenceShape, checkContextName, isContextName } from "../../../../src/kb/sentence.js";
import { Topology, UNIVERSE } from "../../../../src/kb/contexts.js";
import { MemIndex } from "./memindex.js";
import { compileRule, matchPat, undo, instantiate } from "../../../../src/kb/compiled.js";
import type { RawRow } from "../../../../src/kb/write.js";
import { Node, Region, type Justification, type Label, type CompiledRule, type PremiseMark, OUT, IN_DEFAULT, IN_MONO, predKey, nodePredKey, depsAdd, depsRemove, depsCopy, depsList, justsOf, justAdd, justRemove, justSome, justFilter } from "./node.js";

export type Strength = "default" | "monotonic";
export type RemovalReason = "retracted" | "cascade" | "unsupported" | "defeated";

export interface EngineLimits extends ParseLimits {
  /** Most justifications one write may create before chaining stops (reported as `bounded`). */
  maxDerivations: number;
  /** Deepest derivation chain followed (premises are depth 0). Not the parser's maxNestingDepth. */
  maxDepth: number;
}

export const DEFAULT_ENGINE_LIMITS: EngineLimits = {
  ...DEFAULT_PARSE_LIMITS,
  maxDerivations: 2_000_000,
  maxDepth: 10_000,
};

export interface AddEntry {
  sentence: string;
  context: string;
  strength?: Strength;
  creator?: string | null;
}

/** An add as applied: its context (after genlCx placement), canonical text, premise mark and creator. */
export interface WrittenAdd {
  ctx: string;
  text: string;
  mark: PremiseMark;
  creator: string | null;
}

/** An add that passed its checks, ready to apply. */
export interface PreparedAdd {
  ctx: string;
  neg: boolean;
  atom: List;
  akey: string;
  text: string;
  rule: CompiledRule | null;
  mark: PremiseMark;
  creator: string | null;
}

export interface Bounded {
  limit: "maxDerivations" | "maxDepth";
  value: number;
}

/** What one write did: the storage changes to persist and the belief diff to publish. */
export interface WriteOutcome {
  /** Seq this write took, or undefined when it changed nothing. */
  seq: number | undefined;
  /** Handle of each add entry, in order. */
  addedHandles: number[];
  /** Whether each add entry stored a new sentex. */
  createdFlags: boolean[];
  /** Handles removed from the store (retracted, cascaded, unsupported). */
  removedHandles: number[];
  created: Node[];
  updated: Node[];
  deleted: { node: Node; reason: RemovalReason }[];
  beliefAdded: Node[];
  beliefRemoved: { node: Node; reason: RemovalReason }[];
  bounded: Bounded | undefined;
}

export interface Clash {
  kind: "contradiction" | "conflict";
  sides: [Node, Node];
}

/** Markers that declare a predicate's arity, each with the arity it declares (null: read from `(arity P N)`). */
const ARITY_MARKERS: readonly (readonly [string, number | null])[] = [
  ["arity", null],
  ["unaryPredicate", 1],
  ["binaryPredicate", 2],
  ["ternaryPredicate", 3],
  ["quaternaryPredicate", 4],
];

const NONE_REMOVED: ReadonlySet<number> = new Set();

/**
 * The predicates whose stored sentexes the checks' declaration lookups read (DeclMemo), and
 * genlCx, which moves the cones they read through: a write that touches a sentex of one of
 * them drops what the checks have memoized.
 */
const DECLARING: ReadonlySet<string> = new Set([...ARITY_MARKERS.map(([m]) => m), "functional", "leasePredicate", "targetFollowingPredicate", "genlCx"]);

/** What one check has looked up about one predicate's declarations (see DeclMemo). */
class PredDecls {
  /** Declared arity where each context is (null: none). */
  readonly arity = new Map<string, number | null>();
  /** Whether it is functional where each context is. */
  readonly functional = new Map<string, boolean>();
  lease: boolean | undefined;
  targetFollowing: boolean | undefined;
}

/**
 * The declarations the checks have looked up, by predicate: they hold until a write touches
 * a DECLARING sentex, so each is looked up once between such writes, not once per entry or
 * per assert (the engine keeps one, and drops it in `endWrite`). Keyed by the predicate and
 * context strings themselves, never by a concatenation (a fresh string would be hashed on
 * every lookup).
 */
export class DeclMemo {
  private readonly preds = new Map<string, PredDecls>();
  /** The context name last found well-formed (a batch's entries mostly share one). */
  context: string | undefined;

  of(pred: string): PredDecls {
    let d = this.preds.get(pred);
    if (d === undefined) this.preds.set(pred, (d = new PredDecls()));
    return d;
  }
}

export class Engine {
  readonly index = new MemIndex();
  readonly topology = new Topology();
  private readonly rulesByKey = new Map<string, { rule: Node; i: number }[]>();
  /** Predicate keys some stored rule reads: nodes under them are never inert. */
  private readonly ruleReads = new Map<string, number>();
  nextHandle = 1;
  headSeq = 0;
  /** What the checks have looked up about declarations since a write last touched one (DeclMemo). */
  private decls = new DeclMemo();
  readonly limits: EngineLimits;
  private readonly now: () => number;

  // Per-write state.
  /**
   * Nodes whose label this write may move, each with its label before the write in
   * `n.before` (-1 = created by this write). A field on the node, not a map: a write can
   * touch millions.
   */
  private touched: Node[] = [];
  private writeNo = 0;
  private removalReason = new Map<Node, RemovalReason>();
  private created: Node[] = [];
  private updated = new Set<Node>();
  private deletedNodes: { node: Node; reason: RemovalReason }[] = [];
  private derivations = 0;
  /** New conclusions this write may make: `maxDerivations`, and on rebuild the stored ones besides. */
  private derivationLimit = 0;
  private bounded: Bounded | undefined;
  private writeSeq = 0;
  /** The clock as this write first read it: every createdAt one write sets is the same time. */
  private writeAt: number | undefined;
  private topologyChanged = false;
  /** Nodes outside the settling region found to need relabelling (see relabel). */
  private widening = new Set<Node>();
  /**
   * Identity -> the stored row of a derived sentex (handle, seq, creator, time), read from the
   * store and reused on rebuild. A derived row holds a creator and time when it was a premise
   * once (retracted while still derived): first writer wins, across a restart too.
   */
  private reuse: Map<string, { h: number; seq: number; creator: string | null; createdAt: number }> | undefined;

  constructor(opts: { limits?: Partial<EngineLimits>; now?: () => number } = {}) {
    this.limits = { ...DEFAULT_ENGINE_LIMITS, ...opts.limits };
    this.now = opts.now ?? Date.now;
  }

  // ---------------------------------------------------------------- checks

  /**
   * Parse and check one add against the KB as it stands (minus the handles `removing`).
   * Throws a KbError; returns the prepared entry.
   */
  prepare(entry: AddEntry, removing: ReadonlySet<number> = NONE_REMOVED, batch: PreparedAdd[] = [], decls: DeclMemo = this.decls): PreparedAdd {
    if (entry === null || typeof entry !== "object") throw new KbError("shape", "an add entry must be {sentence, context, strength?}");
    if (typeof entry.sentence !== "string") throw new KbError("shape", "sentence must be text");
    let ctx = entry.context === decls.context ? decls.context : (decls.context = checkContextName(entry.context));
    const strength = entry.strength ?? "default";
    if (strength !== "default" && strength !== "monotonic") throw new KbError("shape", `strength must be "default" or "monotonic", got ${JSON.stringify(strength)}`);
    let mark: PremiseMark = strength === "monotonic" ? 2 : 1;
    const { term, canonical } = parseTermText(entry.sentence, this.limits);
    const parsed = sentenceShape(term);
    if (parsed.kind === "rule") {
      const text = canonical ? entry.sentence : printTerm(parsed.term);
      const rule: CompiledRule = compileRule(parsed.rule);
      for (const lit of [...rule.antecedents, rule.consequent]) this.checkArity(lit, ctx, decls.of(lit.atom[0] as string));
      return { ctx, neg: false, atom: parsed.term, akey: text, text, rule, mark, creator: entry.creator ?? null };
    }
    const { neg, atom } = parsed.lit;
    if (atom[0] === "genlCx") {
      if (atom.length !== 3 || !isContextName(atom[1]) || !isContextName(atom[2])) {
        throw new KbError("naming", "(genlCx Sub Super) takes two context names such as CxDeploy");
      }
      ctx = UNIVERSE; // forced into CxUniverse, monotonic topology (reference §2.1)
      mark = 2;
    }
    // A mask is monotonic however it is asserted: a default one would still be OUT while the
    // monotonic pass fires, so what it hid would follow the settle's order (docs/kb.md, Masks).
    if (atom[0] === "except" && !neg) mark = 2;
    const d = decls.of(atom[0] as string);
    this.checkArity(parsed.lit, ctx, d);
    if (!neg) this.checkFunctional(atom, ctx, removing, batch, d);
    this.checkTarget(atom, removing, d);
    if (!neg) this.checkLease(atom, removing, d);
    // Canonical input text is kept as it is (its atom's text is the text, or inside `(not ...)`), not printed again.
    const akey = canonical ? (neg ? entry.sentence.slice(5, -1) : entry.sentence) : printTerm(atom);
    const text = canonical ? entry.sentence : neg ? `(not ${akey})` : akey;
    return { ctx, neg, atom, akey, text, rule: null, mark, creator: entry.creator ?? null };
  }

  /**
   * An add as a writer applied it, rebuilt without checks: a follower replays what the
   * writer already checked, against the same state, so it must not check again (a lease's
   * expiry, say, reads the clock).
   */
  replayAdd(w: WrittenAdd): PreparedAdd {
    const parsed = sentenceShape(parseTerm(w.text, { maxSentenceChars: Infinity, maxNestingDepth: Infinity }));
    const base = { ctx: w.ctx, mark: w.mark, creator: w.creator };
    let prepared: PreparedAdd;
    if (parsed.kind === "rule") {
      const text = printTerm(parsed.term);
      prepared = { ...base, neg: false, atom: parsed.term, akey: text, text, rule: compileRule(parsed.rule) };
    } else {
      const akey = printTerm(parsed.lit.atom);
      prepared = { ...base, neg: parsed.lit.neg, atom: parsed.lit.atom, akey, text: parsed.lit.neg ? `(not ${akey})` : akey, rule: null };
    }
    if (prepared.text !== w.text) throw new Error(`invariant: a replayed add reads back as ${prepared.text}, not ${w.text}`);
    return prepared;
  }

  /** What a follower needs to replay an add (see replayAdd). */
  static written(a: PreparedAdd): WrittenAdd {
    return { ctx: a.ctx, text: a.text, mark: a.mark, creator: a.creator };
  }

  /** Every problem of a batch, each with where it is; stores nothing. */
  checkEdit(add: readonly AddEntry[], remove: readonly unknown[]): { problems: Problem[]; prepared: PreparedAdd[] } {
    const problems: Problem[] = [];
    const removing = new Set<number>();
    remove.forEach((h, index) => {
      if (typeof h !== "number" || !Number.isSafeInteger(h) || h < 1) {
        problems.push({ type: "bad-request", error: `remove entries are handles (positive integers), got ${JSON.stringify(h)}`, in: "remove", index });
      } else if (!this.index.byHandle.has(h)) {
        problems.push({ type: "unknown-handle", error: `no sentex has handle ${h}`, in: "remove", index });
      } else removing.add(h);
    });
    const prepared: PreparedAdd[] = [];
    add.forEach((entry, index) => {
      try {
        prepared.push(this.prepare(entry, removing, prepared));
      } catch (e) {
        if (!(e instanceof KbError)) throw e;
        problems.push({ type: e.type, error: e.message, in: "add", index });
      }
    });
    return { problems, prepared };
  }

  private declaredArity(pred: string, ctx: string, decls: PredDecls): number | undefined {
    const memo = decls.arity;
    const known = memo.get(ctx);
    if (known !== undefined) return known ?? undefined;
    const found = this.lookUpArity(pred, ctx);
    memo.set(ctx, found ?? null);
    return found;
  }

  private lookUpArity(pred: string, ctx: string): number | undefined {
    const cone = this.topology.up(ctx);
    for (const [marker, n] of ARITY_MARKERS) {
      for (const m of this.index.candidates(marker, [marker, pred])) {
        if (m.label === OUT || !cone.has(m.ctx) || m.atom[1] !== pred) continue;
        if (n !== null) return n;
        const v = m.atom[2];
        if (typeof v === "string" && /^[0-9]+$/.test(v)) return Number(v);
      }
    }
    return undefined;
  }

  private checkArity(lit: Literal, ctx: string, decls: PredDecls): void {
    const pred = lit.atom[0] as string;
    const declared = this.declaredArity(pred, ctx, decls);
    const given = lit.atom.length - 1;
    if (declared !== undefined && declared !== given) {
      throw new KbError("arity", `${pred} takes ${declared} argument${declared === 1 ? "" : "s"} where ${ctx} is, got ${given}: ${printTerm(lit.atom)}`);
    }
  }

  private isMarked(marker: string, pred: string, ctx?: string): boolean {
    const cone = ctx ? this.topology.up(ctx) : undefined;
    for (const m of this.index.candidates(marker, [marker, pred])) {
      if (m.label !== OUT && m.atom[1] === pred && (!cone || cone.has(m.ctx))) return true;
    }
    return false;
  }

  private checkFunctional(atom: List, ctx: string, removing: ReadonlySet<number>, batch: readonly PreparedAdd[], decls: PredDecls): void {
    const pred = atom[0] as string;
    if (atom.length < 3) return;
    const functional = decls.functional;
    let marked = functional.get(ctx);
    if (marked === undefined) functional.set(ctx, (marked = this.isMarked("functional", pred, ctx)));
    if (!marked) return;
    const value = atom[2]!;
    if (isSymbol(value) || typeof value !== "string") return; // symbols merge by equality; only other values clash
    const cone = this.topology.up(ctx);
    const clash = (other: Term) => typeof other === "string" && !isSymbol(other) && other !== value;
    for (const n of this.index.candidates(pred, [pred, atom[1]!])) {
      if (n.label === OUT || removing.has(n.h) || !cone.has(n.ctx) || printTerm(n.atom[1]!) !== printTerm(atom[1]!)) continue;
      if (clash(n.atom[2]!)) {
        throw new KbError("functional", `${pred} is functional: ${printTerm(atom[1]!)} already has ${printTerm(n.atom[2]!)} (handle ${n.h}); retract it first or replace it in one edit`);
      }
    }
    for (const b of batch) {
      if (!b.neg && b.atom[0] === pred && printTerm(b.atom[1]!) === printTerm(atom[1]!) && clash(b.atom[2]!) && this.topology.up(ctx).has(b.ctx)) {
        throw new KbError("functional", `${pred} is functional: this batch gives ${printTerm(atom[1]!)} two values`);
      }
    }
  }

  /**
   * Leases (`(leasePredicate claims)`): `(claims Agent Target UntilMs)` is refused `claimed`
   * while another agent holds a live lease on the same target (its UntilMs is still ahead
   * of the clock). An expired lease blocks nothing: expiry needs no write.
   */
  private checkLease(atom: List, removing: ReadonlySet<number>, decls: PredDecls): void {
    const pred = atom[0] as string;
    if (atom.length !== 4) return;
    if (!(decls.lease ??= this.isMarked("leasePredicate", pred))) return;
    const now = this.now();
    const until = Number(atom[3]);
    if (typeof atom[3] !== "string" || !Number.isFinite(until) || !/^[0-9]+$/.test(atom[3])) {
      throw new KbError("shape", `${pred} takes (${pred} Agent Target UntilMs) with UntilMs a whole number of epoch milliseconds`);
    }
    const target = printTerm(atom[2]!);
    for (const n of this.index.candidates(pred, [pred, "?a", atom[2]!])) {
      if (n.label === OUT || removing.has(n.h) || n.atom[1] === atom[1] || printTerm(n.atom[2]!) !== target) continue;
      const held = Number(n.atom[3]);
      if (held > now) {
        throw new KbError("claimed", `${printTerm(atom[2]!)} is claimed by ${printTerm(n.atom[1]!)} until ${held} (handle ${n.h}); the lease frees it when it expires or is retracted`, {
          details: { holder: printTerm(n.atom[1]!), until: held, handle: n.h },
        });
      }
    }
  }

  /** A target-following meta-sentex must name stored targets (wire.md: never outlives nor predates its target). */
  private checkTarget(atom: List, removing: ReadonlySet<number>, decls: PredDecls): void {
    const pred = atom[0] as string;
    if (!(decls.targetFollowing ??= this.isMarked("targetFollowingPredicate", pred))) return;
    const visit = (t: Term): void => {
      if (typeof t === "string") return;
      const h = handleOfTerm(t);
      if (h !== undefined) {
        if (!this.index.byHandle.has(h) || removing.has(h)) throw new KbError("dangling-target", `${pred} names (sentexHandle ${h}), which is not stored`);
        return;
      }
      for (const x of t) visit(x);
    };
    for (let i = 1; i < atom.length; i++) visit(atom[i]!);
  }

  // ---------------------------------------------------------------- writes

  /**
   * Apply a checked batch: adds, then removes (with the target-following cascade), settled
   * as one write. Callers check first (prepare/checkEdit): apply never refuses.
   */
  apply(adds: readonly PreparedAdd[], removes: readonly number[], seq: number): WriteOutcome {
    this.beginWrite(seq);
    const addedHandles: number[] = [];
    const createdFlags: boolean[] = [];
    // The seeds may repeat a node: settle's region takes each once, at its first place.
    let seeds: Node[] = [];
    for (const a of adds) this.applyAdd(a, seeds, addedHandles, createdFlags);
    let retracting: Node[] = [];
    for (const h of removes) {
      const n = this.index.byHandle.get(h);
      if (n) retracting.push(n);
    }
    let reason: RemovalReason = "retracted";
    let cascadedUpTo = 0;
    for (;;) {
      for (const n of retracting) {
        if (n.gone || n.premise === 0) continue;
        n.premise = 0;
        this.updated.add(n);
        if (!this.removalReason.has(n)) this.removalReason.set(n, reason);
        if (n.atom[0] === "genlCx" && this.topology.removeEdge(n.atom[1] as string, n.atom[2] as string)) this.topologyChanged = true;
        this.seedMaskTarget(n, seeds);
        seeds.push(n);
      }
      this.settle(seeds);
      seeds = [];
      // K-cascade: every marked meta-sentex naming a sentex that left the store goes too.
      const next: Node[] = [];
      for (; cascadedUpTo < this.deletedNodes.length; cascadedUpTo++) {
        const gone = this.deletedNodes[cascadedUpTo]!.node;
        for (const m of this.index.mentioning(gone.h)) {
          if (!m.gone && m.premise !== 0 && this.isMarked("targetFollowingPredicate", m.atom[0] as string)) next.push(m);
        }
        for (const m of this.sentenceFollowers(gone)) next.push(m);
      }
      if (next.length === 0) break;
      retracting = next;
      reason = "cascade";
    }
    return this.endWrite(addedHandles, createdFlags);
  }

  /** Apply one add: its handle and whether it stored a new sentex go to `handles` and `createdFlags`. */
  private applyAdd(a: PreparedAdd, seeds: Node[], handles: number[], createdFlags: boolean[]): void {
    const existing = this.index.find(a.ctx, a.neg, a.atom);
    if (existing) {
      if (existing.premise < a.mark) {
        if (existing.premise === 0 && existing.creator === null) {
          existing.creator = this.index.intern(a.creator);
          existing.createdAt = this.writeTime();
        }
        existing.premise = a.mark;
        this.updated.add(existing);
        seeds.push(existing);
      }
      handles.push(existing.h);
      createdFlags.push(false);
      return;
    }
    const n = this.newNode(a.ctx, a.neg, a.atom, a.akey, a.rule, a.mark, a.creator);
    if (a.atom[0] === "genlCx" && !a.neg) {
      n.label = IN_MONO; // topology is read during this very settle
      if (this.topology.addEdge(a.atom[1] as string, a.atom[2] as string, n.h)) this.topologyChanged = true;
    }
    this.seedMaskTarget(n, seeds);
    seeds.push(n);
    handles.push(n.h);
    createdFlags.push(true);
  }

  /**
   * `(sentenceFollowingPredicate P N)`: a stored P sentex whose argument N is a string holding
   * the text of a sentence stored in the same context follows that sentence out of the store
   * (a ruling's mark names its upheld sentence by text, which exists only in the same edit).
   */
  private sentenceFollowers(gone: Node): Node[] {
    if (this.index.predSize("sentenceFollowingPredicate") === 0) return [];
    const text = stringAtom(gone.text);
    const out: Node[] = [];
    for (const decl of this.index.candidates("sentenceFollowingPredicate", ["sentenceFollowingPredicate"])) {
      const [, pred, pos] = decl.atom;
      if (decl.label === OUT || typeof pred !== "string" || typeof pos !== "string" || !/^[1-9][0-9]?$/.test(pos)) continue;
      const pattern: Term[] = [pred];
      for (let i = 1; i <= Number(pos); i++) pattern.push(i === Number(pos) ? text : `?a${i}`);
      for (const m of this.index.candidates(pred, pattern)) {
        if (!m.gone && !m.neg && m.premise !== 0 && m.ctx === gone.ctx && m.atom[Number(pos)] === text) out.push(m);
      }
    }
    return out;
  }

  /** A mask added or removed moves what its target supports where the mask is seen. */
  private seedMaskTarget(n: Node, seeds: Node[]): void {
    if (n.atom[0] !== "except" || n.neg) return;
    const h = handleOfTerm(n.atom[1]!);
    const target = h === undefined ? undefined : this.index.byHandle.get(h);
    if (target) seeds.push(target);
  }

  /**
   * `(except (sentexHandle H))` stored in context M hides H from M and from every context
   * that sees M: from reads there, and from firings that would conclude there.
   */
  hiddenFrom(n: Node, ctx: string): boolean {
    if (this.index.predSize("except") === 0) return false;
    for (const m of this.index.mentioning(n.h)) {
      if (m.atom[0] === "except" && !m.neg && m.label !== OUT && m.atom[1] !== undefined && handleOfTerm(m.atom[1]) === n.h && this.topology.sees(ctx, m.ctx)) return true;
    }
    return false;
  }

  private newNode(ctx: string, neg: boolean, atom: List, akey: string | undefined, rule: CompiledRule | null, mark: PremiseMark, creator: string | null): Node {
    const reused = mark === 0 && this.reuse ? this.reuse.get(identityKey(ctx, neg, akey ?? printTerm(atom))) : undefined;
    const n = reused
      ? new Node(reused.h, this.index.intern(ctx), neg, atom, akey, rule, 0, this.index.intern(reused.creator), reused.createdAt, reused.seq)
      : new Node(this.nextHandle++, this.index.intern(ctx), neg, atom, akey, rule, mark, mark === 0 ? null : this.index.intern(creator), mark === 0 ? 0 : this.writeTime(), this.writeSeq);
    this.enter(n);
    n.writeNo = this.writeNo;
    n.before = -1;
    this.touched.push(n);
    if (!reused) this.created.push(n);
    return n;
  }

  /** A new node into the indexes (and the rules' index), flagged when it declares (DECLARING). */
  private enter(n: Node): void {
    this.index.add(n);
    if (n.rule) this.indexRule(n);
    n.declaring = DECLARING.has(n.atom[0] as string);
  }

  private indexRule(n: Node): void {
    const r = n.rule!;
    r.keys.forEach((key, i) => {
      let list = this.rulesByKey.get(key);
      if (!list) this.rulesByKey.set(key, (list = []));
      list.push({ rule: n, i });
      this.ruleReads.set(key, (this.ruleReads.get(key) ?? 0) + 1);
    });
  }

  private unindexRule(n: Node): void {
    n.rule!.keys.forEach((key) => {
      const list = this.rulesByKey.get(key);
      if (list) {
        const kept = list.filter((e) => e.rule !== n);
        if (kept.length) this.rulesByKey.set(key, kept);
        else this.rulesByKey.delete(key);
      }
      const c = (this.ruleReads.get(key) ?? 1) - 1;
      if (c > 0) this.ruleReads.set(key, c);
      else this.ruleReads.delete(key);
    });
  }

  /** Remember n's label before this write (once per write). */
  private touch(n: Node): void {
    if (n.writeNo === this.writeNo) return;
    n.writeNo = this.writeNo;
    n.before = n.label;
    this.touched.push(n);
  }

  private beginWrite(seq: number): void {
    this.touched = [];
    this.writeNo++;
    this.removalReason = new Map();
    this.created = [];
    this.updated = new Set();
    this.deletedNodes = [];
    this.derivations = 0;
    this.derivationLimit = this.limits.maxDerivations;
    this.bounded = undefined;
    this.writeSeq = seq;
    this.writeAt = undefined;
    this.topologyChanged = false;
  }

  /** The write's time, read from the clock once per write (not once per sentex it creates). */
  private writeTime(): number {
    return (this.writeAt ??= this.now());
  }

  private endWrite(addedHandles: number[], createdFlags: boolean[]): WriteOutcome {
    const beliefAdded: Node[] = [];
    const beliefRemoved: { node: Node; reason: RemovalReason }[] = [];
    let declaring = false;
    for (const n of this.touched) {
      declaring ||= n.declaring;
      const wasIn = n.before > 0;
      const isIn = !n.gone && n.label > 0;
      if (!wasIn && isIn) beliefAdded.push(n);
      else if (wasIn && !isIn) beliefRemoved.push({ node: n, reason: n.gone ? (this.removalReason.get(n) ?? "unsupported") : "defeated" });
    }
    beliefAdded.sort((a, b) => a.h - b.h);
    beliefRemoved.sort((a, b) => a.node.h - b.node.h);
    // Created by this write: its before-label is -1 for this write number.
    const isNew = (n: Node) => n.writeNo === this.writeNo && n.before === -1;
    const created = this.created.filter((n) => !n.gone);
    const deleted = this.deletedNodes.filter((d) => !isNew(d.node));
    const updated = [...this.updated].filter((n) => !n.gone && !isNew(n));
    const changed = created.length + updated.length + deleted.length + beliefAdded.length + beliefRemoved.length > 0;
    if (changed) this.headSeq = this.writeSeq; // else the write takes no seq
    const out: WriteOutcome = {
      seq: changed ? this.writeSeq : undefined,
      addedHandles,
      createdFlags,
      removedHandles: deleted.map((d) => d.node.h).sort((a, b) => a - b),
      created,
      updated,
      deleted,
      beliefAdded,
      beliefRemoved,
      bounded: this.bounded,
    };
    this.touched = [];
    this.removalReason = new Map();
    if (declaring) this.decls = new DeclMemo();
    return out;
  }

  // ---------------------------------------------------------------- settle

  private settle(seeds: readonly Node[]): void {
    let region: Region;
    if (this.topologyChanged) {
      region = new Region();
      for (const n of this.index.byHandle.values()) if (!this.isInert(n)) region.add(n);
      for (const s of seeds) region.add(s);
      this.topologyChanged = false;
    } else region = this.closure(seeds);
    for (;;) {
      for (const n of region) this.touch(n);
      const widen = this.relabel(region);
      if (widen.size === 0) break;
      for (const n of widen) region.add(n);
      region = this.closure(region);
    }
    this.finalize(region);
  }

  /** A premise that no rule reads and nothing opposes: no write elsewhere can move it. */
  private isInert(n: Node): boolean {
    return n.premise !== 0 && !n.rule && !n.just && !this.ruleReads.has(nodePredKey(n)) && !this.index.hasOpposite(n) && n.atom[0] !== "genlCx";
  }

  /** The seeds plus everything their labels can reach: dependents and opposites. */
  private closure(seeds: Iterable<Node>): Region {
    const region = new Region();
    const stack: Node[] = [];
    for (const s of seeds) if (!s.gone && !region.has(s)) {
      region.add(s);
      stack.push(s);
    }
    while (stack.length) {
      const n = stack.pop()!;
      for (const j of depsList(n.deps)) if (!region.has(j.concl)) {
        region.add(j.concl);
        stack.push(j.concl);
      }
      if (n.rule) for (const c of this.concludedBy(n)) if (!region.has(c)) {
        region.add(c);
        stack.push(c);
      }
      if (this.index.hasOpposite(n)) for (const o of this.index.withAtom(n.atom)) if (o.neg !== n.neg && !region.has(o)) {
        region.add(o);
        stack.push(o);
      }
    }
    return region;
  }

  /**
   * Nodes a rule has justified. Rules keep no back-links (a rule can justify millions of
   * conclusions); retracting a rule is rare, so its conclusions are found by predicate.
   */
  private concludedBy(r: Node): Node[] {
    const c = r.rule!.consequent;
    const out: Node[] = [];
    for (const n of this.index.candidates(predKey(c.neg, c.atom[0] as string), c.atom)) {
      if (justSome(n.just, (j) => j.rule === r)) out.push(n);
    }
    return out;
  }

  /** Recompute labels inside `region`; returns nodes outside it that would change. */
  private relabel(region: Region): Set<Node> {
    const widen = (this.widening = new Set<Node>());
    // Reset: forget labels, and forget justifications that lean on the region (they are
    // rediscovered by firing if still valid).
    for (const n of region) n.label = OUT;
    for (const n of region) {
      if (!n.just) continue;
      n.just = justFilter(n.just, (j) => {
        const keep = !region.has(j.rule) && !j.ants.some((a) => region.has(a));
        if (!keep) this.unlinkDeps(j);
        return keep;
      });
    }
    const queue: Node[] = [];
    const establish = (n: Node, label: Label) => {
      n.label = label;
      queue.push(n);
    };
    const conclude = (c: Node, strength: Label, pass: 1 | 2) => {
      if (region.has(c)) {
        if (pass === 2 && strength === IN_MONO && c.label !== IN_MONO) establish(c, IN_MONO);
        else if (pass === 1 && c.label === OUT && !this.defeated(c)) establish(c, IN_DEFAULT);
      } else if ((strength === IN_MONO && c.label !== IN_MONO) || (c.label === OUT && !this.defeated(c))) {
        widen.add(c);
      }
    };
    // Pass 1: the monotonic closure. Rules are established first so they fire once fully.
    for (const n of region) if (n.rule && n.premise !== 0) establish(n, IN_MONO);
    for (const n of region) {
      if (n.rule || n.label !== OUT) continue;
      if (n.premise === 2 || this.validJust(n, IN_MONO)) establish(n, IN_MONO);
    }
    this.drain(queue, region, (c, s) => conclude(c, s, 2));
    // Pass 2: defaults, with defeat fixed by the monotonic labels.
    for (const n of region) {
      if (n.label !== OUT || n.rule) continue;
      if ((n.premise === 1 || this.validJust(n, IN_DEFAULT)) && !this.defeated(n)) establish(n, IN_DEFAULT);
    }
    this.drain(queue, region, (c, s) => conclude(c, s, 1));
    return widen;
  }

  private drain(queue: Node[], region: Region, conclude: (c: Node, strength: Label) => void): void {
    while (queue.length) {
      const n = queue.pop()!;
      if (n.rule) this.fireRule(n, region, conclude);
      else this.fireFact(n, region, conclude);
    }
  }

  private validJust(n: Node, atLeast: Label): boolean {
    return justSome(n.just, (j) => this.justStrength(j) >= atLeast);
  }

  private justStrength(j: Justification): Label {
    if (j.rule.label === OUT) return OUT;
    let s: Label = IN_MONO;
    for (const a of j.ants) if (a.label < s) s = a.label;
    return s;
  }

  /** A default sentex is defeated by a monotonic opposite where some context sees both. */
  private defeated(n: Node): boolean {
    if (!this.index.hasOpposite(n)) return false;
    for (const o of this.index.withAtom(n.atom)) {
      if (o.neg !== n.neg && o.label === IN_MONO && this.topology.meet(n.ctx, o.ctx)) return true;
    }
    return false;
  }

  private fireFact(n: Node, region: Region, conclude: (c: Node, s: Label) => void): void {
    const rules = this.rulesByKey.get(nodePredKey(n));
    if (!rules) return;
    for (const { rule, i } of rules) {
      if (rule.label === OUT) continue;
      const r = rule.rule!;
      const slots: (Term | undefined)[] = new Array(r.slots);
      const trail: number[] = [];
      if (!matchPat(r.lits[i]!.pat, n.atom, slots, trail)) continue;
      const ants: Node[] = new Array(r.lits.length);
      ants[i] = n;
      this.join(rule, 0, i, slots, trail, ants, region, conclude);
    }
  }

  private fireRule(r: Node, region: Region, conclude: (c: Node, s: Label) => void): void {
    const ants: Node[] = new Array(r.rule!.lits.length);
    this.join(r, 0, -1, new Array(r.rule!.slots), [], ants, region, conclude);
  }

  /** Join antecedent `k` onward (skipping `fixed`) against established nodes. */
  private join(r: Node, k: number, fixed: number, slots: (Term | undefined)[], trail: number[], ants: Node[], region: Region, conclude: (c: Node, s: Label) => void): void {
    if (this.bounded) return;
    const rule = r.rule!;
    if (k === rule.lits.length) {
      this.fire(r, ants, slots, region, conclude);
      return;
    }
    if (k === fixed) {
      this.join(r, k + 1, fixed, slots, trail, ants, region, conclude);
      return;
    }
    const lit = rule.lits[k]!;
    const found = this.index.bucketFor(lit.key, lit.pat, slots);
    if (found === null) {
      for (const c of this.index.all(lit.key)) this.step(r, k, fixed, c, slots, trail, ants, region, conclude);
    } else if (Array.isArray(found)) {
      // Firing may append to this very bucket; what it appends is established later and fires itself.
      const len = found.length;
      for (let i = 0; i < len; i++) this.step(r, k, fixed, found[i]!, slots, trail, ants, region, conclude);
    } else this.step(r, k, fixed, found as Node, slots, trail, ants, region, conclude);
  }

  /** Try candidate `c` for antecedent `k`, and join the rest when it matches. */
  private step(r: Node, k: number, fixed: number, c: Node, slots: (Term | undefined)[], trail: number[], ants: Node[], region: Region, conclude: (c: Node, s: Label) => void): void {
    if (c.label === OUT) return;
    const lit = r.rule!.lits[k]!;
    const mark = trail.length;
    if (matchPat(lit.pat, c.atom, slots, trail)) {
      ants[k] = c;
      this.join(r, k + 1, fixed, slots, trail, ants, region, conclude);
    }
    undo(slots, trail, mark);
  }

  private fire(r: Node, antsIn: Node[], slots: (Term | undefined)[], region: Region, conclude: (c: Node, s: Label) => void): void {
    const ants = antsIn.slice();
    let sameCtx = true;
    for (const a of ants) if (a.ctx !== r.ctx) sameCtx = false;
    const places = sameCtx ? this.single(r.ctx) : this.topology.placement([r.ctx, ...ants.map((a) => a.ctx)]);
    if (places.length === 0) return;
    let depth = 0;
    let strength: Label = IN_MONO;
    for (const a of ants) {
      if (a.depth > depth) depth = a.depth;
      if (a.label < strength) strength = a.label;
    }
    depth += 1;
    if (depth > this.limits.maxDepth) {
      this.bounded = { limit: "maxDepth", value: this.limits.maxDepth };
      return;
    }
    const cons = r.rule!.consequent;
    const atom = instantiate(r.rule!.head.pat, slots) as List;
    const masked = this.index.predSize("except") > 0;
    for (const ctx of places) {
      if (masked && (this.hiddenFrom(r, ctx) || ants.some((a) => this.hiddenFrom(a, ctx)))) continue;
      let c = this.index.find(ctx, cons.neg, atom);
      if (!c) {
        if (++this.derivations > this.derivationLimit) {
          this.bounded = { limit: "maxDerivations", value: this.limits.maxDerivations };
          return;
        }
        c = this.newNode(ctx, cons.neg, atom, undefined, null, 0, null);
        c.depth = depth;
        region.add(c);
        // A new conclusion can defeat (or be defeated by) opposites outside the region:
        // the region must stay closed under opposites, so they join it.
        if (this.index.hasOpposite(c)) for (const o of this.index.withAtom(atom)) if (o.neg !== c.neg && !region.has(o)) this.widening.add(o);
      } else if (justSome(c.just, (j) => j.rule === r && sameAnts(j.ants, ants))) {
        conclude(c, strength);
        continue;
      }
      const j: Justification = { rule: r, ants, concl: c, dead: false };
      c.just = justAdd(c.just, j);
      for (const a of ants) a.deps = depsAdd(a.deps, j);
      if (c.premise === 0 && (c.depth === 0 || depth < c.depth)) c.depth = depth;
      conclude(c, strength);
    }
  }

  private readonly singles = new Map<string, readonly string[]>();
  /** A shared one-element placement list per context (no allocation per firing). */
  private single(ctx: string): readonly string[] {
    let s = this.singles.get(ctx);
    if (!s) this.singles.set(ctx, (s = [ctx]));
    return s;
  }

  private unlinkDeps(j: Justification): void {
    if (j.dead) return; // an antecedent of its own conclusion is unlinked once
    j.dead = true;
    for (const a of j.ants) a.deps = depsRemove(a.deps, j);
  }

  /** After relabelling: drop what lost all support; keep defeated sentexes stored. */
  private finalize(region: Region): void {
    for (const n of region) {
      if (n.gone || n.label !== OUT || n.premise !== 0) continue;
      if (justSome(n.just, (j) => j.rule.label !== OUT && j.ants.every((a) => a.label !== OUT))) continue;
      this.deleteNode(n);
    }
  }

  private deleteNode(n: Node): void {
    n.gone = true;
    for (const j of justsOf(n)) this.unlinkDeps(j);
    n.just = null;
    for (const j of depsCopy(n.deps)) {
      j.concl.just = justRemove(j.concl.just, j);
      this.unlinkDeps(j);
    }
    n.deps = null;
    this.index.remove(n);
    if (n.rule) this.unindexRule(n);
    this.deletedNodes.push({ node: n, reason: this.removalReason.get(n) ?? "unsupported" });
  }

  // ---------------------------------------------------------------- rebuild

  /**
   * Rebuild from stored rows (premises and derived) in handle order, then settle every
   * node once. Derived rows keep their handles when re-derived; rows no longer derivable
   * are reported in `deleted`.
   */
  rebuild(rows: Iterable<RawRow>, nextHandle: number, headSeq: number): WriteOutcome {
    this.decls = new DeclMemo();
    this.reuse = new Map();
    this.nextHandle = nextHandle;
    this.headSeq = headSeq;
    this.beginWrite(headSeq);
    const unlimited = { maxSentenceChars: Infinity, maxNestingDepth: Infinity };
    const premises: Node[] = [];
    for (const [handle, ctx, text, premise, creator, createdAt, seq] of rows) {
      // Stored text is canonical: a literal's atom text is the text itself (or inside `(not ...)`).
      let rule: CompiledRule | null = null;
      let neg = false;
      let atom: List;
      let akey: string;
      if (text.startsWith("(implies ")) {
        const parsed = sentenceShape(parseTerm(text, unlimited));
        if (parsed.kind !== "rule") continue;
        rule = compileRule(parsed.rule);
        atom = parsed.term;
        akey = text;
      } else {
        neg = text.startsWith("(not ");
        akey = neg ? text.slice(5, -1) : text;
        atom = parseTerm(akey, unlimited) as List;
      }
      if (premise === 0) {
        this.reuse.set(identityKey(ctx, neg, akey), { h: handle, seq, creator, createdAt });
        continue;
      }
      const n = new Node(handle, this.index.intern(ctx), neg, atom, akey, rule, premise, this.index.intern(creator), createdAt, seq);
      this.enter(n);
      if (atom[0] === "genlCx" && !neg) {
        n.label = IN_MONO;
        this.topology.addEdge(atom[1] as string, atom[2] as string, n.h);
      }
      premises.push(n);
    }
    // The stored conclusions were each admitted by a write under the limit: re-deriving them
    // all at once is no runaway (one write's worth more, and chaining stops as in a write).
    this.derivationLimit = this.reuse.size + this.limits.maxDerivations;
    // Inert premises are IN right away; everything else settles together.
    for (const n of premises) if (this.isInert(n)) n.label = n.premise === 2 ? IN_MONO : IN_DEFAULT;
    this.topologyChanged = true;
    this.settle([]);
    const stale: number[] = [];
    for (const { h } of this.reuse.values()) if (this.index.byHandle.get(h)?.premise !== 0) stale.push(h);
    this.reuse = undefined;
    const out = this.endWrite([], []);
    out.removedHandles = stale;
    this.headSeq = headSeq;
    return out;
  }

  // ---------------------------------------------------------------- reads

  /** Believed clashes visible from `ctx`: default/default contradictions and monotonic conflicts. */
  clashes(ctx: string): Clash[] {
    const cone = this.topology.up(ctx);
    const out: Clash[] = [];
    for (const atom of this.index.opposed.values()) {
      const nodes = this.index.withAtom(atom).filter((n) => n.label !== OUT && cone.has(n.ctx) && !this.hiddenFrom(n, ctx));
      for (const p of nodes) {
        if (p.neg) continue;
        for (const q of nodes) {
          if (!q.neg) continue;
          out.push({ kind: p.label === IN_MONO && q.label === IN_MONO ? "conflict" : "contradiction", sides: [p, q] });
        }
      }
    }
    out.sort((a, b) => a.sides[0].h - b.sides[0].h || a.sides[1].h - b.sides[1].h);
    return out;
  }

  /** The genlCx edge handles a justification's firing crossed from its placement up to each source. */
  edgesCrossed(j: Justification): number[] {
    const edges = new Set<number>();
    for (const src of [j.rule.ctx, ...j.ants.map((a) => a.ctx)]) for (const e of this.topology.path(j.concl.ctx, src)) edges.add(e);
    return [...edges].sort((a, b) => a - b);
  }
}

export type { RawRow };

export interface StoredRow {
  handle: number;
  context: string;
  sentence: string;
  premise: PremiseMark;
  creator: string | null;
  createdAt: number;
  seq: number;
}

const identityKey = (ctx: string, neg: boolean, akey: string) => `${ctx}\u0000${neg ? "-" : "+"}\u0000${akey}`;

function sameAnts(a: readonly Node[], b: readonly Node[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
