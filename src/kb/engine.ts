/**
 * The engine: stored sentexes, the checks a write passes, forward chaining and belief
 * settling. The checks (parse, shape, declarations, functional, leases, targets) are here;
 * the sentexes and the settling are the row engine's (rowengine.ts): integer rows, a view
 * made when a reader asks.
 *
 * Semantics (docs/rules.md "The semantics the engine keeps"), stated as the fixpoint the
 * incremental code must always agree with:
 *  1. MONO = monotonic premises, plus every conclusion of a firing whose antecedents are
 *     all in MONO (a rule confers monotonic strength; a conclusion is as strong as its
 *     weakest input).
 *  2. A default sentex is DEFEATED when a MONO sentex of the opposite polarity and the same
 *     atom sits where some context sees both.
 *  3. IN = MONO, plus undefeated default premises, plus undefeated conclusions of firings
 *     whose antecedents are all IN. Everything else is OUT.
 *  4. Stored = premises, plus conclusions with at least one firing whose antecedents are
 *     all IN (a defeated conclusion stays stored, OUT, ready to revive).
 */
import { KbError, type Problem } from "./errors.js";
import { type List, type Term, printTerm, parseTerm, parseTermText, isSymbol, handleOfTerm, type ParseLimits, DEFAULT_PARSE_LIMITS } from "./term.js";
import { type Literal, sentenceShape, checkContextName, isContextName } from "./sentence.js";
import { UNIVERSE } from "./contexts.js";
import { compileRule } from "./compiled.js";
import type { CompiledRule } from "./compiled.js";
import type { Node, Justification } from "./node.js";
import { OUT, type PremiseMark, type Strength, type RemovalReason, type Bounded, type PreparedAdd, type RawRow } from "./write.js";
import { RowEngine, type RowOutcome } from "./rowengine.js";

export interface EngineLimits extends ParseLimits {
  /** Most new conclusions one write may store before chaining stops (reported as `bounded`). */
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
  private readonly rows: RowEngine;
  /** The stored sentexes, read as views (the index's read API over the rows). */
  readonly index;
  readonly topology;
  /** What the checks have looked up about declarations since a write last touched one (DeclMemo). */
  private decls = new DeclMemo();
  readonly limits: EngineLimits;
  private readonly now: () => number;

  constructor(opts: { limits?: Partial<EngineLimits>; now?: () => number } = {}) {
    this.limits = { ...DEFAULT_ENGINE_LIMITS, ...opts.limits };
    this.now = opts.now ?? Date.now;
    this.rows = new RowEngine({ limits: this.limits, now: this.now });
    this.index = this.rows.index;
    this.topology = this.rows.topology;
  }

  get nextHandle(): number {
    return this.rows.nextHandle;
  }
  get headSeq(): number {
    return this.rows.headSeq;
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

  /** A target-following meta-sentex must name stored targets (docs/wire.md: never outlives nor predates its target). */
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
    return this.outcome(this.rows.write(adds, removes, seq), adds);
  }

  /**
   * Rebuild from stored rows (premises and derived) in handle order, then settle every
   * sentex once. Derived rows keep their handles when re-derived; rows no longer derivable
   * are reported in `removedHandles`.
   */
  rebuild(rows: Iterable<RawRow>, nextHandle: number, headSeq: number): WriteOutcome {
    this.decls = new DeclMemo();
    return this.outcome(this.rows.rebuild(rows, nextHandle, headSeq), []);
  }

  /**
   * The row engine's outcome with views for handles, each list made when first read (the kb
   * reads them all to persist; a caller that reads none makes none). A write touching a
   * declaration drops the checks' memo.
   */
  private outcome(o: RowOutcome, adds: readonly PreparedAdd[]): WriteOutcome {
    if (this.rows.wrote(DECLARING)) this.decls = new DeclMemo();
    return new ViewedOutcome(o, this.rows, adds);
  }

  // ---------------------------------------------------------------- reads

  /**
   * `(except (sentexHandle H))` stored in context M hides H from M and from every context
   * that sees M: from reads there, and from firings that would conclude there.
   */
  hiddenFrom(n: Node, ctx: string): boolean {
    return this.rows.hides(n.h, ctx);
  }

  /** Every firing over believed sentexes that concludes n (none for a premise only, or a rule). */
  justsOf(n: Node): Justification[] {
    return this.rows.firings(n.h).map((f) => ({ rule: this.rows.view(f.rule)!, ants: f.ants.map((a) => this.rows.view(a)!), concl: n }));
  }

  /** Believed clashes visible from `ctx`: default/default contradictions and monotonic conflicts. */
  clashes(ctx: string): Clash[] {
    return this.rows.clashPairs(ctx).map((c) => ({ kind: c.kind, sides: [this.rows.view(c.pos)!, this.rows.view(c.neg)!] }));
  }

  /** The genlCx edge handles a justification's firing crossed from its placement up to each source. */
  edgesCrossed(j: Justification): number[] {
    const edges = new Set<number>();
    for (const src of [j.rule.ctx, ...j.ants.map((a) => a.ctx)]) for (const e of this.topology.path(j.concl.ctx, src)) edges.add(e);
    return [...edges].sort((a, b) => a - b);
  }
}

/** A write's outcome with views for its handles, each list made when first read. */
class ViewedOutcome implements WriteOutcome {
  readonly seq: number | undefined;
  readonly addedHandles: number[];
  readonly createdFlags: boolean[];
  removedHandles: number[];
  readonly bounded: Bounded | undefined;
  private made: { created?: Node[]; updated?: Node[]; deleted?: WriteOutcome["deleted"]; beliefAdded?: Node[]; beliefRemoved?: WriteOutcome["beliefRemoved"] } = {};

  constructor(
    private readonly o: RowOutcome,
    private readonly rows: RowEngine,
    private readonly adds: readonly PreparedAdd[],
  ) {
    this.seq = o.seq;
    this.addedHandles = o.addedHandles;
    this.createdFlags = o.createdFlags;
    this.removedHandles = o.removedHandles;
    this.bounded = o.bounded;
  }

  private view = (h: number): Node => this.rows.view(h)!;
  /**
   * Views of the sentexes stored new, those of the write's adds with the add's texts (the
   * adds that stored a sentex were minted its handles first and in order, so one walk finds
   * them in the created list, which ascends by handle).
   */
  get created(): Node[] {
    if (this.made.created) return this.made.created;
    const out = this.o.created.map(this.view);
    let j = 0;
    this.adds.forEach((a, i) => {
      if (!this.createdFlags[i]) return;
      const h = this.addedHandles[i]!;
      while (j < out.length && out[j]!.h < h) j++;
      if (j < out.length && out[j]!.h === h) out[j]!.known(a.akey, a.text);
    });
    return (this.made.created = out);
  }
  get updated(): Node[] {
    return (this.made.updated ??= this.o.updated.map(this.view));
  }
  get deleted(): WriteOutcome["deleted"] {
    return (this.made.deleted ??= this.o.deleted.map((d) => ({ node: this.view(d.h), reason: d.reason })));
  }
  /**
   * Views of the sentexes newly believed: the created list's own where it holds the handle (both
   * lists ascend by handle, so one walk finds them), so a sentex persisted and published is one
   * view, its text printed once and compared by identity.
   */
  get beliefAdded(): Node[] {
    if (this.made.beliefAdded) return this.made.beliefAdded;
    const created = this.made.created ?? [];
    let i = 0;
    return (this.made.beliefAdded = this.o.beliefAdded.map((h) => {
      while (i < created.length && created[i]!.h < h) i++;
      return i < created.length && created[i]!.h === h ? created[i]! : this.view(h);
    }));
  }
  get beliefRemoved(): WriteOutcome["beliefRemoved"] {
    return (this.made.beliefRemoved ??= this.o.beliefRemoved.map((d) => ({ node: this.view(d.h), reason: d.reason })));
  }
}
