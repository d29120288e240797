/**
 * The row engine: the stored sentexes and the settling of beliefs, over rows of interned ids.
 * Facts of either polarity and strength sit in contexts linked by genlCx; rules may have
 * negative antecedents; a default is defeated by a monotonic opposite where some context sees
 * both. The checks a write passes are engine.ts's; this settles what they let through.
 *
 * The semantics (docs/rules.md):
 *  - a firing matches antecedents in any context and concludes in each placement context
 *    (the sources' one context, else the most general contexts that see every source);
 *  - MONO = monotonic premises, plus conclusions of firings whose antecedents are all MONO;
 *  - a default is defeated when an opposite (same atom, other polarity) is MONO where some
 *    context sees both;
 *  - IN = MONO, plus undefeated default premises, plus undefeated conclusions of firings
 *    whose antecedents are all IN;
 *  - stored = premises, plus conclusions of firings whose antecedents are all IN.
 *
 * Representation: names and ground lists interned to ids; a relation (`Rel`) per polarity,
 * predicate and arity: a column for the context and one per argument, an open-addressing
 * hash for identity, an index per argument position as chains through the rows with a count
 * per id (a join takes the shortest bound chain; a fully bound literal is one probe). A
 * fact's state is columns of its relation: stored, premise mark, label, depth, provenance, the
 * region it last joined, the strength firings gave it in this relabelling. A row is never
 * removed: a fact that leaves is marked not stored, and one that comes back takes its row
 * again with a new handle. No justification is stored: support is found by joining a rule
 * body with its head bound. A reader gets a view (`RowNode`) read live from the columns,
 * through `RowIndex`.
 *
 * A write settles the region it can influence (dependents, found by joins instead of
 * back-links, and opposites): the region forgets its labels and is relabelled in two passes
 * (monotonic, then default) with the rest held fixed; a conclusion that would change outside
 * it widens it; what is left OUT without a firing over IN leaves the store.
 */

import { Topology } from "./contexts.js";
import { handleOfTerm, parseTerm, printTerm, stringAtom, type List, type Term } from "./term.js";
import { sentenceShape } from "./sentence.js";
import { compileRule } from "./compiled.js";
import type { CompiledRule } from "./compiled.js";
import { OUT, IN_DEFAULT as DEF, IN_MONO as MONO, type Label, type Bounded, type PreparedAdd, type RemovalReason, type RawRow } from "./write.js";
import { Rel } from "./relation.js";

/** A pattern position holding a list with variables inside (matched against the term, see `Lit.structs`). */
const STRUCT = -(2 ** 30);

/**
 * A literal compiled: its relation, and per position a constant id (>= 0, a ground term), a
 * variable slot s as -1 - s, or STRUCT: a list with variables inside, whose pattern is in
 * `structs` (variables there as slot numbers).
 */
interface Lit {
  rel: Rel;
  pat: Int32Array;
  structs: (SPat | undefined)[] | undefined;
}

/** A structure pattern: a constant term id, a slot number as `{ slot }`, or a list of patterns. */
type SPat = number | { slot: number } | SPat[];

interface Rule {
  handle: number;
  /** The context the rule is stored in (a source of every firing's placement). */
  ctx: number;
  /** Its identity, `context|text`. */
  key: string;
  mark: 1 | 2;
  creator: string | null;
  createdAt: number;
  seq: number;
  /** The write that stored it. */
  writeNo: number;
  /** The rule as compiled.ts compiled it, and its whole `(implies ...)` term (what a view shows). */
  compiled: CompiledRule;
  term: List;
  lits: Lit[];
  head: Lit;
  slots: number;
}

/** An add as the engine's checks prepared it (`PreparedAdd`). */
export type RowAdd = Pick<PreparedAdd, "ctx" | "neg" | "atom" | "text" | "rule" | "mark" | "creator">;

export interface RowLimits {
  maxDerivations: number;
  maxDepth: number;
}

/** A write's outcome (engine.ts `WriteOutcome`), by handle. */
export interface RowOutcome {
  seq: number | undefined;
  addedHandles: number[];
  createdFlags: boolean[];
  removedHandles: number[];
  created: number[];
  updated: number[];
  deleted: { h: number; reason: RemovalReason }[];
  beliefAdded: number[];
  beliefRemoved: { h: number; reason: RemovalReason }[];
  bounded: Bounded | undefined;
}

/** What a firing does with its conclusion in the current phase. */
const enum Mode {
  /** Relabelling: conclude (create, establish, or widen). */
  Conclude,
  /** Region closure: add the stored conclusion to the region. */
  Depend,
  /** Support test: stop at the first firing (antecedents at least `minLabel`). */
  Test,
  /** `why`: collect every firing (antecedents at least `minLabel`). */
  Collect,
}

export class RowEngine {
  /** @internal (read by RowIndex and RowNode) */
  readonly ids = new Map<string, number>();
  readonly names: string[] = [];
  /** id -> the term (a name, or a parsed list). */
  readonly terms: Term[] = [];
  /** Relations by predicate, every polarity and arity (a short list: looked up without building a key). */
  private readonly byPred = new Map<string, Rel[]>();
  readonly relList: Rel[] = [];
  /** Relations by predicate key (`p` or `~p`), every arity. */
  readonly relsByPred = new Map<string, Rel[]>();
  readonly rules = new Map<number, Rule>();
  /** Per relation number: the (rule, literal index) pairs that read it. */
  private readers: { rule: Rule; i: number }[][] = [];
  /** Per relation number: the rules concluding into it. */
  private writers: Rule[][] = [];
  /** handle -> fact reference, or -1 for a rule. */
  readonly handleRefs: number[] = [0];
  nextHandle = 1;

  // join state, shared: a join allocates nothing
  private slots = new Int32Array(16).fill(-1);
  private trail: number[] = [];
  private readonly t = new Int32Array(16);
  private readonly probe = new Int32Array(16);
  private readonly opProbe = new Int32Array(16);
  readonly topology = new Topology();
  /** Placement context ids by the sources' ids (cleared when the topology changes). */
  private places = new Map<string, number[]>();
  private readonly single: number[] = [0];
  /** Support test: the context of the fact tested. */
  private testCtx = -1;
  /** Antecedent references of the firing being joined, by literal. */
  private ants: number[] = [];

  private mode = Mode.Conclude;
  /** Relabelling pass: MONO establishes monotonic conclusions, DEF undefeated defaults. */
  private pass: Label = MONO;
  private found = false;
  /** Support test: antecedents must have at least this label. */
  private minLabel: Label = DEF;
  private regionNo = 0;
  private regionList: number[] = [];
  private queue: number[] = [];
  private widen: number[] = [];
  /** The firings `why` collects. */
  private collected: { rule: number; ants: number[] }[] = [];
  /** Rules new in this write: they fire once over everything in the monotonic pass. */
  private newRules: Rule[] = [];
  readonly ruleByKey = new Map<string, Rule>();
  /** Handle -> the rows (stored or not) whose arguments name `(sentexHandle handle)`. */
  readonly mentions = new Map<number, Set<number>>();
  /** Term id -> the handles it names, for a list term. */
  private readonly termHandles: (readonly number[] | undefined)[] = [];
  /** Whether some interned term names a handle (until then no row is indexed by the handles it names). */
  private handleTerms = false;
  /** The positive `except` relations (of any arity). */
  private readonly exceptRels: Rel[] = [];
  /** While rebuilding: `context|text` of each stored conclusion -> its stored row. */
  private reuse: Map<string, { h: number; seq: number; creator: string | null; createdAt: number }> | undefined;
  /** Rules taken away (a view of a retired handle still reads its context and text). */
  private readonly retiredRules = new Map<number, Rule>();
  /** Every rule handle ever minted -> its `context|text`. */
  private readonly ruleKeys = new Map<number, string>();
  headSeq = 0;
  readonly limits: RowLimits;
  /**
   * A fact reference is row * span + relation number. The span is a power of two above the
   * relation count: it doubles when a relation would not fit, and every reference held is
   * encoded again (`widenSpan`), so a reference stays a small integer while rows are few.
   */
  span: number;
  private readonly now: () => number;

  // Per-write state.
  private writeNo = 0;
  private writeSeq = 0;
  private writeAt: number | undefined;
  /** Rows whose label this write may move, each with its label before the write in `before`. */
  private touched: number[] = [];
  /** Rows stored new by this write (a rule as minus its handle). */
  private created: number[] = [];
  private updated = new Set<number>();
  private deletedRecs: { h: number; before: number; reason: RemovalReason }[] = [];
  private removalReason = new Map<number, RemovalReason>();
  private derivations = 0;
  private bounded: Bounded | undefined;
  private topologyChanged = false;

  /** `span`: the first relation span (tests start it small, so that widening it is exercised). */
  constructor(opts: { limits?: Partial<RowLimits>; now?: () => number; span?: number } = {}) {
    this.limits = { maxDerivations: 2_000_000, maxDepth: 10_000, ...opts.limits };
    this.now = opts.now ?? Date.now;
    this.span = opts.span ?? 1024;
    if (!(this.span >= 1 && Number.isInteger(Math.log2(this.span)))) throw new Error(`invariant: the relation span is a power of two, got ${this.span}`);
  }

  /** The id of a name, or of a ground term by its canonical text (the engine's identity). */
  private id(s: string, term?: Term): number {
    let i = this.ids.get(s);
    if (i === undefined) {
      this.ids.set(s, (i = this.names.length));
      this.names.push(s);
      this.terms.push(term ?? s);
      if (term !== undefined && typeof term !== "string" && this.handlesIn(i).length > 0) this.handleTerms = true;
    }
    return i;
  }

  private termId(t: Term): number {
    return typeof t === "string" ? this.id(t) : this.id(printTerm(t), t);
  }

  /** The relation of a polarity, predicate and argument count (its rows have one column more: the context). */
  private rel(neg: boolean, pred: string, args: number): Rel {
    const arity = args + 1;
    let r = this.relFor(neg, pred, arity);
    if (!r) {
      if (this.relList.length >= this.span) this.widenSpan();
      r = new Rel(this.relList.length, pred, neg, arity);
      const all = this.byPred.get(pred);
      if (all) all.push(r);
      else this.byPred.set(pred, [r]);
      this.relList.push(r);
      const pk = `${neg ? "~" : ""}${pred}`;
      const same = this.relsByPred.get(pk);
      if (same) same.push(r);
      else this.relsByPred.set(pk, [r]);
      if (!neg && pred === "except") this.exceptRels.push(r);
      this.readers.push([]);
      this.writers.push([]);
      const opp = this.relFor(!neg, pred, arity);
      if (opp) {
        r.opp = opp;
        opp.opp = r;
      }
    }
    return r;
  }

  /** The relation of a polarity, predicate and arity (argument count plus the context), if there is one. */
  relFor(neg: boolean, pred: string, arity: number): Rel | undefined {
    const all = this.byPred.get(pred);
    if (all) for (const r of all) if (r.arity === arity && r.neg === neg) return r;
    return undefined;
  }

  /**
   * Double the span and encode every reference kept between writes again: the handles' and
   * the mentions'. Called only where no other reference is in use: as a write begins, before
   * it stores anything (`write` makes its relations first), or while rebuilding (its seeds are
   * handles until the settle, and the rows it lists as created are dropped unread).
   */
  private widenSpan(): void {
    if (this.queue.length || this.touched.length || (this.created.length && !this.reuse)) throw new Error("invariant: the relation span widens only before a write stores anything");
    this.regionList = []; // the last settle's, read no more
    this.widen = [];
    const old = this.span;
    const span = old * 2;
    const again = (ref: number) => ((ref - (ref % old)) / old) * span + (ref % old);
    const refs = this.handleRefs;
    for (let h = 1; h < refs.length; h++) if (refs[h] !== undefined && refs[h]! >= 0) refs[h] = again(refs[h]!);
    for (const [h, set] of this.mentions) this.mentions.set(h, new Set([...set].map(again)));
    this.span = span;
  }

  relOf(ref: number): Rel {
    return this.relList[ref % this.span]!;
  }

  /** The row of the fact (created not stored when new). */
  private rowOf(rel: Rel, t: Int32Array): number {
    const at = rel.find(t);
    return at >= 0 ? at : this.newRow(rel, t);
  }

  /** A new row for t (not held; `at` its atom slot when known), not stored yet, with a new handle. */
  private newRow(rel: Rel, t: Int32Array, at?: number): number {
    const r = rel.add(t, this.nextHandle, at);
    this.handleRefs[this.nextHandle++] = r * this.span + rel.no;
    return r;
  }

  // ------------------------------------------------------------------ writes

  private static isVar(t: Term): t is string {
    return typeof t === "string" && t.startsWith("?");
  }

  private static ground(t: Term): boolean {
    return typeof t === "string" ? !RowEngine.isVar(t) : t.every(RowEngine.ground);
  }

  /**
   * Apply a checked batch as one write: the adds, then the removes,
   * settled together. A fact's add stores it or raises its premise mark; a rule's add stores
   * it once per context and text. A remove clears a premise mark (a fact still derived stays,
   * as a conclusion) or takes a rule away. `(genlCx A B)` is a link: every stored fact
   * resettles. The outcome names handles; a row that leaves the store and comes back gets a
   * new handle, as a new sentex does.
   */
  write(adds: readonly RowAdd[], removes: readonly number[], seq: number): RowOutcome {
    this.beginWrite(seq);
    this.relationsOf(adds);
    const seeds: number[] = [];
    const addedHandles: number[] = [];
    const createdFlags: boolean[] = [];
    for (const a of adds) {
      const [h, created] = a.rule ? this.addRule(a, seeds) : this.addFact(a, seeds);
      addedHandles.push(h);
      createdFlags.push(created);
    }
    let retracting = removes;
    let reason: RemovalReason = "retracted";
    let cascadedUpTo = 0;
    for (;;) {
      for (const h of retracting) this.remove(h, reason, seeds);
      this.settle(this.topologyChanged ? this.everything() : seeds);
      this.topologyChanged = false;
      seeds.length = 0;
      // The cascade: a target-following premise naming a sentex that left the store goes
      // too, as does a sentence-following premise holding its text.
      const next: number[] = [];
      for (; cascadedUpTo < this.deletedRecs.length; cascadedUpTo++) {
        const gone = this.deletedRecs[cascadedUpTo]!.h;
        for (const m of this.mentioning(gone)) {
          const rel = this.relOf(m);
          const r = (m - rel.no) / this.span;
          if (rel.premise[r] !== 0 && this.isMarked("targetFollowingPredicate", rel.pred)) next.push(rel.handle[r]!);
        }
        this.sentenceFollowers(gone, next);
      }
      if (next.length === 0) break;
      retracting = next;
      reason = "cascade";
    }
    return this.endWrite(addedHandles, createdFlags);
  }

  /** The stored rows whose arguments name `(sentexHandle h)`, at any depth. */
  private mentioning(h: number): number[] {
    const refs = this.mentions.get(h);
    if (!refs) return [];
    const out: number[] = [];
    for (const ref of refs) {
      const rel = this.relOf(ref);
      if (rel.stored[(ref - rel.no) / this.span]) out.push(ref);
    }
    return out;
  }

  /** The handles term id `id` names as `(sentexHandle H)`, at any depth (cached per term). */
  private handlesIn(id: number): readonly number[] {
    let hs = this.termHandles[id];
    if (hs === undefined && typeof this.terms[id] !== "string") {
      const found: number[] = [];
      const visit = (t: Term): void => {
        if (typeof t === "string") return;
        const h = handleOfTerm(t);
        if (h !== undefined) found.push(h);
        else for (const x of t) visit(x);
      };
      visit(this.terms[id]!);
      this.termHandles[id] = hs = found;
    }
    return hs ?? [];
  }

  /** Index row r under every handle its arguments name (once; a revived row is indexed already). */
  private indexMentions(rel: Rel, r: number): void {
    const ref = r * this.span + rel.no;
    for (let p = 1; p < rel.arity; p++) {
      const v = rel.cols[p]![r]!;
      for (const h of this.termHandles[v] ?? []) {
        let refs = this.mentions.get(h);
        if (!refs) this.mentions.set(h, (refs = new Set()));
        refs.add(ref);
      }
    }
  }

  /** Whether a believed `(marker pred)` is stored in some context. */
  private isMarked(marker: string, pred: string): boolean {
    const rel = this.relFor(false, marker, 2);
    const id = this.ids.get(pred);
    if (!rel || id === undefined) return false;
    const t = this.probe;
    t[1] = id;
    for (let r = rel.atomHead(t); r >= 0; r = rel.atomNext[r]!) if (rel.stored[r] && rel.label[r] !== OUT) return true;
    return false;
  }

  /**
   * `(sentenceFollowingPredicate P N)`: a stored P premise whose argument N is a string
   * holding the text of the sentex `gone`, in its context, follows it out of the store.
   */
  private sentenceFollowers(gone: number, out: number[]): void {
    const decls = this.relFor(false, "sentenceFollowingPredicate", 3);
    if (!decls) return;
    const key = this.keyOf(gone)!;
    const bar = key.indexOf("|");
    const ctx = this.ids.get(key.slice(0, bar));
    const text = this.ids.get(stringAtom(key.slice(bar + 1)));
    if (ctx === undefined || text === undefined) return;
    for (let d = 0; d < decls.n; d++) {
      if (!decls.stored[d] || decls.label[d] === OUT) continue;
      const pred = this.terms[decls.cols[1]![d]!]!;
      const pos = this.terms[decls.cols[2]![d]!]!;
      if (typeof pred !== "string" || typeof pos !== "string" || !/^[1-9][0-9]?$/.test(pos)) continue;
      const at = Number(pos);
      for (const rel of this.relList) {
        if (rel.neg || rel.pred !== pred || rel.arity <= at) continue;
        for (let r = rel.head(at, text); r >= 0; r = rel.next[at]![r]!) {
          if (rel.stored[r] && rel.premise[r] !== 0 && rel.cols[0]![r] === ctx) out.push(rel.handle[r]!);
        }
      }
    }
  }

  /** A mask added or removed moves what its target supports where the mask is seen. */
  private seedMaskTarget(rel: Rel, r: number, seeds: number[]): void {
    if (rel.neg || rel.pred !== "except" || rel.arity < 2) return;
    const h = handleOfTerm(this.terms[rel.cols[1]![r]!]!);
    if (h === undefined || !this.live(h)) return;
    const ref = this.handleRefs[h]!;
    if (ref >= 0) seeds.push(ref);
    else {
      // A rule unmasked concludes where it could not: it fires once over everything, as a new rule does.
      const rule = this.rules.get(h)!;
      if (!this.newRules.includes(rule)) this.newRules.push(rule);
      for (const c of this.conclusionsOf(rule)) seeds.push(c);
    }
  }

  /**
   * Whether a believed `(except (sentexHandle h))` hides sentex h from context `ctx`: it is
   * stored in `ctx` or in a context `ctx` sees.
   */
  private hiddenFrom(h: number, ctx: number): boolean {
    const refs = this.mentions.get(h);
    if (!refs) return false;
    for (const m of refs) {
      const rel = this.relOf(m);
      const r = (m - rel.no) / this.span;
      if (rel.neg || rel.pred !== "except" || !rel.stored[r] || rel.label[r] === OUT || rel.arity < 2) continue;
      if (handleOfTerm(this.terms[rel.cols[1]![r]!]!) === h && this.topology.sees(this.names[ctx]!, this.names[rel.cols[0]![r]!]!)) return true;
    }
    return false;
  }

  /** Whether some stored positive `except` exists (the masks' test runs only then). */
  private masked(): boolean {
    for (const rel of this.exceptRels) if (rel.storedCount > 0) return true;
    return false;
  }

  /**
   * Make the relations a write's adds read and write before it stores anything, when they
   * could outgrow the span: the span then widens while no reference is held.
   */
  private relationsOf(adds: readonly RowAdd[]): void {
    let lits = 0;
    for (const a of adds) lits += a.rule ? a.rule.antecedents.length + 1 : 1;
    if (this.relList.length + lits < this.span) return;
    for (const a of adds) {
      if (!a.rule) this.rel(a.neg, a.atom[0] as string, a.atom.length - 1);
      else for (const l of [...a.rule.antecedents, a.rule.consequent]) this.rel(l.neg, l.atom[0] as string, l.atom.length - 1);
    }
  }

  private addFact(a: RowAdd, seeds: number[]): [number, boolean] {
    const rel = this.rel(a.neg, a.atom[0] as string, a.atom.length - 1);
    const t = this.t;
    t[0] = this.id(a.ctx);
    for (let i = 1; i < a.atom.length; i++) t[i] = this.termId(a.atom[i]!);
    const at = rel.atomSlot(t);
    let r = rel.rowIn(at, t[0]!);
    if (r >= 0 && rel.stored[r]) {
      if (rel.premise[r]! < a.mark) {
        if (rel.premise[r] === 0 && rel.creator[r] === 0) {
          rel.creator[r] = this.creatorId(a.creator);
          rel.createdAt[r] = this.writeTime();
        }
        rel.premise[r] = a.mark;
        rel.changedIn = this.writeNo;
        this.updated.add(rel.handle[r]!);
        seeds.push(r * this.span + rel.no);
      }
      return [rel.handle[r]!, false];
    }
    const made = r < 0;
    r = made ? this.newRow(rel, t, at) : this.reviveRow(rel, r);
    this.storeNew(rel, r, a.mark, this.creatorId(a.creator), this.writeTime(), made);
    if (!a.neg && a.atom[0] === "genlCx" && a.atom.length === 3) {
      rel.label[r] = MONO; // the topology is read during this very settle
      if (this.topology.addEdge(a.atom[1] as string, a.atom[2] as string, rel.handle[r]!)) this.topologyChanged = true;
    }
    this.seedMaskTarget(rel, r, seeds);
    seeds.push(r * this.span + rel.no);
    return [rel.handle[r]!, true];
  }

  /**
   * Store row r as new in this write: its marks, its provenance (`creator` as `creatorId`
   * encodes it), and its place in the write's outcome (`created`; not `touched`, which holds
   * rows stored before the write). A row `Rel.add` just made has zeros in every column, so
   * only what differs is written.
   */
  private storeNew(rel: Rel, r: number, mark: 0 | 1 | 2, creator: number, createdAt: number, made = false): void {
    rel.changedIn = this.writeNo;
    rel.stored[r] = 1;
    rel.storedCount++;
    if (this.handleTerms) this.indexMentions(rel, r);
    rel.premise[r] = mark;
    rel.seq[r] = this.writeSeq;
    const listed = rel.writeNo[r] === this.writeNo && rel.before[r] === -1; // stored, gone and stored again in this write
    rel.writeNo[r] = this.writeNo;
    rel.before[r] = -1;
    if (!made) {
      rel.label[r] = OUT;
      rel.pending[r] = OUT;
      rel.depth[r] = 0;
    }
    if (creator !== 0 || !made) rel.creator[r] = creator;
    if (createdAt !== 0 || !made) rel.createdAt[r] = createdAt;
    if (!listed) this.created.push(r * this.span + rel.no);
  }

  /** A creator as the column holds it: 0 for none, else its name's id + 1. */
  private creatorId(creator: string | null): number {
    return creator === null ? 0 : this.id(creator) + 1;
  }

  /** A row that left the store comes back as a new sentex: a new handle (the old one stays retired). */
  private reviveRow(rel: Rel, r: number): number {
    rel.handle[r] = this.nextHandle;
    this.handleRefs[this.nextHandle++] = r * this.span + rel.no;
    return r;
  }

  private addRule(a: RowAdd, seeds: number[]): [number, boolean] {
    const key = `${a.ctx}|${a.text}`;
    const known = this.ruleByKey.get(key);
    if (known) {
      if (known.mark < a.mark) {
        known.mark = a.mark as 1 | 2;
        this.updated.add(known.handle);
      }
      return [known.handle, false];
    }
    const rule = this.compileRule(a.rule!, a.atom, a.ctx, key, a.mark as 1 | 2, a.creator);
    // Its stored conclusions may move: they seed the region; the rule fires fully in pass 1.
    this.newRules.push(rule);
    for (const c of this.conclusionsOf(rule)) seeds.push(c);
    this.created.push(-rule.handle);
    return [rule.handle, true];
  }

  private compileRule(cr: CompiledRule, term: List, context: string, key: string, mark: 1 | 2, creator: string | null, handle = this.nextHandle++): Rule {
    const vars = new Map<string, number>();
    const slot = (x: string) => {
      let s = vars.get(x);
      if (s === undefined) vars.set(x, (s = vars.size));
      return -1 - s;
    };
    // Column 0 of an antecedent is a variable of its own (it matches in any context); the
    // head's is filled per placement context.
    const spat = (x: Term): SPat => (RowEngine.isVar(x) ? { slot: -1 - slot(x) } : typeof x === "string" || RowEngine.ground(x) ? this.termId(x) : x.map(spat));
    const compile = (l: { neg: boolean; atom: List }, i: number): Lit => {
      const args = l.atom.slice(1);
      const pat = new Int32Array(args.length + 1);
      let structs: (SPat | undefined)[] | undefined;
      pat[0] = i < 0 ? 0 : slot(`?ctx ${i}`);
      args.forEach((x, k) => {
        if (RowEngine.isVar(x)) pat[k + 1] = slot(x);
        else if (RowEngine.ground(x)) pat[k + 1] = this.termId(x);
        else {
          pat[k + 1] = STRUCT;
          (structs ??= [])[k + 1] = spat(x);
        }
      });
      return { rel: this.rel(l.neg, l.atom[0] as string, args.length), pat, structs };
    };
    const lits = cr.antecedents.map(compile);
    const h = handle;
    this.handleRefs[h] = -1;
    const rule: Rule = {
      handle: h,
      ctx: this.id(context),
      key,
      mark,
      creator,
      createdAt: this.writeTime(),
      seq: this.writeSeq,
      writeNo: this.writeNo,
      compiled: cr,
      term,
      lits,
      head: compile(cr.consequent, -1),
      slots: vars.size,
    };
    if (rule.slots > this.slots.length) this.slots = new Int32Array(rule.slots).fill(-1);
    this.rules.set(h, rule);
    this.ruleByKey.set(key, rule);
    this.ruleKeys.set(h, key);
    lits.forEach((l, i) => this.readers[l.rel.no]!.push({ rule, i }));
    this.writers[rule.head.rel.no]!.push(rule);
    return rule;
  }

  /** Clear a premise mark, or take a rule away, seeding what that can move. */
  private remove(h: number, reason: RemovalReason, seeds: number[]): void {
    const ref = this.handleRefs[h];
    if (ref === undefined) return;
    if (ref < 0) {
      const rule = this.rules.get(h);
      if (!rule) return;
      for (const c of this.conclusionsOf(rule)) seeds.push(c);
      this.rules.delete(h);
      this.retiredRules.set(h, rule);
      this.ruleByKey.delete(rule.key);
      this.newRules = this.newRules.filter((x) => x !== rule);
      for (const l of rule.lits) this.readers[l.rel.no] = this.readers[l.rel.no]!.filter((x) => x.rule !== rule);
      this.writers[rule.head.rel.no] = this.writers[rule.head.rel.no]!.filter((x) => x !== rule);
      this.deletedRecs.push({ h, before: rule.writeNo === this.writeNo ? -1 : MONO, reason });
      return;
    }
    const rel = this.relOf(ref);
    const r = (ref - rel.no) / this.span;
    if (rel.handle[r] !== h || !rel.stored[r] || !rel.premise[r]) return;
    rel.premise[r] = 0;
    rel.changedIn = this.writeNo;
    this.updated.add(h);
    if (!this.removalReason.has(h)) this.removalReason.set(h, reason);
    if (!rel.neg && rel.pred === "genlCx" && rel.arity === 3 && this.topology.removeEdge(this.names[rel.cols[1]![r]!]!, this.names[rel.cols[2]![r]!]!)) this.topologyChanged = true;
    this.seedMaskTarget(rel, r, seeds);
    seeds.push(ref);
  }

  /** Every stored fact (a link's change resettles them all). */
  private everything(): number[] {
    this.places.clear();
    const out: number[] = [];
    for (const rel of this.relList) for (let r = 0; r < rel.n; r++) if (rel.stored[r]) out.push(r * this.span + rel.no);
    return out;
  }

  /** The stored conclusions of every firing of `rule` over stored facts. */
  private conclusionsOf(rule: Rule): number[] {
    this.regionNo++;
    this.regionList = [];
    this.mode = Mode.Depend;
    this.minLabel = OUT;
    this.join(rule, 0, -1);
    return this.regionList;
  }

  private beginWrite(seq: number): void {
    this.writeNo++;
    this.writeSeq = seq;
    this.writeAt = undefined;
    this.touched = [];
    this.created = [];
    this.updated = new Set();
    this.deletedRecs = [];
    this.removalReason = new Map();
    this.derivations = 0;
    this.bounded = undefined;
    this.topologyChanged = false;
  }

  /** The write's time, read from the clock once per write. */
  private writeTime(): number {
    return (this.writeAt ??= this.now());
  }

  /** Row r's label before this write is about to move it (recorded once per write). */
  private touch(rel: Rel, r: number): void {
    if (rel.writeNo[r] === this.writeNo) return;
    rel.changedIn = this.writeNo;
    rel.writeNo[r] = this.writeNo;
    rel.before[r] = rel.label[r] as Label;
    this.touched.push(r * this.span + rel.no);
  }

  /** Row r leaves the store: its handle, label before the write and reason go to the outcome. */
  private unstore(rel: Rel, r: number): void {
    rel.changedIn = this.writeNo;
    rel.stored[r] = 0;
    rel.storedCount--;
    const h = rel.handle[r]!;
    this.deletedRecs.push({ h, before: rel.before[r]!, reason: this.removalReason.get(h) ?? "unsupported" });
  }

  private endWrite(addedHandles: number[], createdFlags: boolean[]): RowOutcome {
    let beliefAdded: number[] = [];
    const beliefRemoved: { h: number; reason: RemovalReason }[] = [];
    const deleted: { h: number; reason: RemovalReason }[] = [];
    for (const ref of this.touched) {
      const rel = this.relOf(ref);
      const r = (ref - rel.no) / this.span;
      if (!rel.stored[r] || rel.before[r] === -1) continue; // gone: in deletedRecs; stored again: in created
      const wasIn = rel.before[r]! > 0;
      const isIn = rel.label[r]! > 0;
      if (!wasIn && isIn) beliefAdded.push(rel.handle[r]!);
      else if (wasIn && !isIn) beliefRemoved.push({ h: rel.handle[r]!, reason: "defeated" });
    }
    for (const d of this.deletedRecs) {
      if (d.before === -1) continue; // stored and gone within this write
      deleted.push({ h: d.h, reason: d.reason });
      if (d.before > 0) beliefRemoved.push({ h: d.h, reason: d.reason });
    }
    // Each row is listed once (storeNew); one stored, gone and stored again shows its last handle.
    const refs = this.created;
    const created: number[] = new Array(refs.length);
    const newlyIn: number[] = new Array(refs.length);
    const rulesAdded: number[] = [];
    let nc = 0;
    let ni = 0;
    for (let i = 0; i < refs.length; i++) {
      const ref = refs[i]!;
      if (ref < 0) {
        if (!this.rules.has(-ref)) continue;
        created[nc++] = -ref;
        rulesAdded.push(-ref);
        continue;
      }
      const rel = this.relOf(ref);
      const r = (ref - rel.no) / this.span;
      if (!rel.stored[r]) continue;
      const h = rel.handle[r]!;
      created[nc++] = h;
      if (rel.label[r]! > 0) newlyIn[ni++] = h;
    }
    created.length = nc;
    newlyIn.length = ni;
    // Rows stored before the write first (their handles are the older ones), then the new.
    if (beliefAdded.length === 0) beliefAdded = newlyIn;
    else for (let i = 0; i < ni; i++) beliefAdded.push(newlyIn[i]!);
    const updated = [...this.updated].filter((h) => this.live(h) && !this.isNew(h));
    sortHandles(beliefAdded);
    for (const h of rulesAdded) {
      let lo = 0;
      let hi = beliefAdded.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (beliefAdded[mid]! < h) lo = mid + 1;
        else hi = mid;
      }
      beliefAdded.splice(lo, 0, h);
    }
    beliefRemoved.sort((a, b) => a.h - b.h);
    const changed = created.length + updated.length + deleted.length + beliefAdded.length + beliefRemoved.length > 0;
    if (changed) this.headSeq = this.writeSeq;
    return {
      seq: changed ? this.writeSeq : undefined,
      addedHandles,
      createdFlags,
      removedHandles: deleted.map((d) => d.h).sort((a, b) => a - b),
      created,
      updated,
      deleted,
      beliefAdded,
      beliefRemoved,
      bounded: this.bounded,
    };
  }

  /** Whether stored handle h was stored by this write. */
  private isNew(h: number): boolean {
    const ref = this.handleRefs[h]!;
    if (ref < 0) return this.rules.get(h)!.writeNo === this.writeNo;
    const rel = this.relOf(ref);
    const r = (ref - rel.no) / this.span;
    return rel.writeNo[r] === this.writeNo && rel.before[r] === -1;
  }

  /**
   * Whether the last write stored, removed, relabelled or re-marked a row of a relation under
   * one of `preds` (a superset of the outcome's handles under them: what the outcome's lists
   * could name, found per relation instead of per handle, among those predicates' relations only).
   */
  wrote(preds: ReadonlySet<string>): boolean {
    for (const pred of preds) for (const rel of this.byPred.get(pred) ?? NO_RELS) if (rel.changedIn === this.writeNo) return true;
    return false;
  }

  /** The index's read API over the rows. */
  readonly index = new RowIndex(this);

  /** A view of handle h (stored or retired), or undefined for a handle never minted. */
  view(h: number): RowNode | undefined {
    const ref = this.handleRefs[h];
    if (ref === undefined) return undefined;
    if (ref < 0) {
      const rule = this.rules.get(h) ?? this.retiredRules.get(h);
      return rule ? new RowNode(this, h, undefined, 0, rule) : undefined;
    }
    const rel = this.relOf(ref);
    return new RowNode(this, h, rel, (ref - rel.no) / this.span, undefined);
  }

  /** Whether handle h names a stored sentex (a fact row still holding it, or a rule). */
  live(h: number): boolean {
    const ref = this.handleRefs[h];
    if (ref === undefined) return false;
    if (ref < 0) return this.rules.has(h);
    const rel = this.relOf(ref);
    const r = (ref - rel.no) / this.span;
    return rel.handle[r] === h && rel.stored[r] === 1;
  }

  // ------------------------------------------------------------------ rebuild

  /**
   * Rebuild from stored rows (a reopen): premises and rules re-enter with their
   * handles, every fact settles once, and a conclusion derived again takes back its stored
   * row's handle, seq, creator and time. Stored conclusions no longer derivable are listed in
   * `removedHandles`.
   */
  rebuild(rows: Iterable<RawRow>, nextHandle: number, headSeq: number): RowOutcome {
    this.nextHandle = nextHandle;
    this.headSeq = headSeq;
    this.beginWrite(headSeq);
    this.reuse = new Map();
    const unlimited = { maxSentenceChars: Infinity, maxNestingDepth: Infinity };
    const seeds: number[] = [];
    for (const [handle, ctx, text, premise, creator, createdAt, seq] of rows) {
      if (premise === 0) {
        this.reuse.set(`${ctx}|${text}`, { h: handle, seq, creator, createdAt });
        continue;
      }
      const parsed = sentenceShape(parseTerm(text, unlimited));
      if (parsed.kind === "rule") {
        const rule = this.compileRule(compileRule(parsed.rule), parsed.term, ctx, `${ctx}|${text}`, premise, creator, handle);
        rule.createdAt = createdAt;
        rule.seq = seq;
        rule.writeNo = 0;
        this.newRules.push(rule);
        continue;
      }
      const { neg, atom } = parsed.lit;
      const rel = this.rel(neg, atom[0] as string, atom.length - 1);
      const t = this.t;
      t[0] = this.id(ctx);
      for (let i = 1; i < atom.length; i++) t[i] = this.termId(atom[i]!);
      const r = rel.add(t, handle);
      this.handleRefs[handle] = r * this.span + rel.no;
      this.storeNew(rel, r, premise, this.creatorId(creator), createdAt, true);
      rel.seq[r] = seq;
      rel.before[r] = OUT; // a row read back is no change of belief by itself
      if (!neg && atom[0] === "genlCx" && atom.length === 3) this.topology.addEdge(atom[1] as string, atom[2] as string, handle);
      seeds.push(handle); // a handle, not a reference: the span may widen while rows are read
    }
    this.created = [];
    this.places.clear();
    for (let i = 0; i < seeds.length; i++) seeds[i] = this.handleRefs[seeds[i]!]!;
    this.settle(seeds);
    const stale: number[] = [];
    for (const { h } of this.reuse.values()) if (!this.live(h)) stale.push(h);
    this.reuse = undefined;
    const out = this.endWrite([], []);
    out.removedHandles = stale.sort((a, b) => a - b);
    this.headSeq = headSeq;
    return out;
  }

  // ------------------------------------------------------------------ settle

  private inRegion(rel: Rel, r: number): boolean {
    return rel.region[r] === this.regionNo;
  }

  private enter(rel: Rel, r: number): void {
    if (rel.region[r] === this.regionNo) return;
    rel.region[r] = this.regionNo;
    this.regionList.push(r * this.span + rel.no);
  }

  private settle(seeds: number[]): void {
    let region = seeds;
    for (;;) {
      this.closure(region);
      this.relabel();
      if (this.widen.length === 0) break;
      region = [...this.regionList, ...this.widen];
    }
    this.finalize();
    this.newRules = [];
  }

  /** A fresh region: the seeds, plus what their labels can reach (dependents through joins, and opposites). */
  private closure(seeds: number[]): void {
    this.regionNo++;
    this.regionList = [];
    for (const s of seeds) {
      const rel = this.relOf(s);
      const r = (s - rel.no) / this.span;
      if (rel.stored[r]) this.enter(rel, r);
    }
    this.mode = Mode.Depend;
    this.minLabel = OUT;
    for (let i = 0; i < this.regionList.length; i++) {
      const ref = this.regionList[i]!;
      const rel = this.relOf(ref);
      const r = (ref - rel.no) / this.span;
      this.fireFrom(rel, r);
      const opp = rel.opp;
      if (opp) for (const o of opp.sameAtom(rel, r, this.opProbe)) if (opp.stored[o]) this.enter(opp, o);
    }
  }

  private relabel(): void {
    this.widen = [];
    const list = this.regionList;
    for (const ref of list) {
      const rel = this.relOf(ref);
      const r = (ref - rel.no) / this.span;
      this.touch(rel, r);
      rel.label[r] = OUT;
      rel.pending[r] = OUT;
    }
    this.mode = Mode.Conclude;
    // Pass 1: the monotonic closure.
    this.pass = MONO;
    // Monotonic premises first: a mask among them hides what the support tests below see.
    for (let i = 0; i < list.length; i++) {
      const ref = list[i]!;
      const rel = this.relOf(ref);
      const r = (ref - rel.no) / this.span;
      if (rel.premise[r] === MONO) this.establish(rel, r, MONO);
    }
    for (let i = 0; i < list.length; i++) {
      const ref = list[i]!;
      const rel = this.relOf(ref);
      const r = (ref - rel.no) / this.span;
      if (rel.label[r] === OUT && !rel.fresh[r] && this.supported(rel, r, MONO)) this.establish(rel, r, MONO);
    }
    // New rules fire once over everything, after the monotonic premises (a mask among them hides from these firings too).
    for (const rule of this.newRules) this.join(rule, 0, -1);
    this.drain();
    // Pass 2: defaults, with defeat fixed by the monotonic labels.
    this.pass = DEF;
    for (let i = 0; i < list.length; i++) {
      const ref = list[i]!;
      const rel = this.relOf(ref);
      const r = (ref - rel.no) / this.span;
      if (rel.label[r] !== OUT) continue;
      const backed = rel.premise[r] === DEF || rel.pending[r] >= DEF || (!rel.fresh[r] && this.supported(rel, r, DEF));
      if (backed && !this.defeated(rel, r)) this.establish(rel, r, DEF);
    }
    this.drain();
  }

  private establish(rel: Rel, r: number, label: Label): void {
    rel.label[r] = label;
    this.queue.push(r * this.span + rel.no);
  }

  private drain(): void {
    const q = this.queue;
    while (q.length) {
      const ref = q.pop()!;
      const rel = this.relOf(ref);
      this.fireFrom(rel, (ref - rel.no) / this.span);
    }
  }

  /** A default is defeated by a monotonic opposite where some context sees both. */
  private defeated(rel: Rel, r: number): boolean {
    const opp = rel.opp;
    if (!opp) return false;
    const ctx = this.names[rel.cols[0]![r]!]!;
    for (const o of opp.sameAtom(rel, r, this.opProbe)) {
      if (opp.stored[o] === 1 && opp.label[o] === MONO && this.topology.meet(ctx, this.names[opp.cols[0]![o]!]!)) return true;
    }
    return false;
  }

  /**
   * Whether one firing over facts labelled at least `min` concludes row r. Inside a
   * relabelling a region fact's label is either reset (OUT) or final for the pass, so the
   * firings it finds are valid support.
   */
  private supported(rel: Rel, r: number, min: Label): boolean {
    const mode = this.mode;
    const minLabel = this.minLabel;
    this.mode = Mode.Test;
    this.minLabel = min;
    this.found = false;
    const testCtx = this.testCtx;
    this.testCtx = rel.cols[0]![r]!;
    for (const rule of this.writers[rel.no]!) {
      const mark = this.trail.length;
      if (this.match(rule.head, rel, r, 1)) this.join(rule, 0, -1);
      this.undo(mark);
      if (this.found) break;
    }
    const found = this.found;
    this.found = false;
    this.testCtx = testCtx;
    this.mode = mode;
    this.minLabel = minLabel;
    return found;
  }

  /** After relabelling: what is OUT, derived and without a firing over IN leaves the store. */
  private finalize(): void {
    const list = this.regionList;
    for (const ref of list) {
      const rel = this.relOf(ref);
      const r = (ref - rel.no) / this.span;
      rel.fresh[r] = 0;
      if (!rel.stored[r] || rel.label[r] !== OUT || rel.premise[r] !== 0) continue;
      if (rel.pending[r] >= DEF || this.supported(rel, r, DEF)) continue;
      this.unstore(rel, r);
    }
  }

  // ------------------------------------------------------------------ joins

  /** Every firing with row r of `rel` at one of its literals, the rest joined. */
  private fireFrom(rel: Rel, r: number): void {
    const ref = r * this.span + rel.no;
    for (const { rule, i } of this.readers[rel.no]!) {
      const mark = this.trail.length;
      if (this.match(rule.lits[i]!, rel, r)) {
        this.ants[i] = ref;
        this.join(rule, 0, i);
      }
      this.undo(mark);
    }
  }

  /** Match row r of `rel` against a literal from column `from` on (1 skips the context), binding slots. */
  private match(l: Lit, rel: Rel, r: number, from = 0): boolean {
    const cols = rel.cols;
    const pat = l.pat;
    const slots = this.slots;
    for (let p = from; p < pat.length; p++) {
      const v = cols[p]![r]!;
      const q = pat[p]!;
      if (q >= 0) {
        if (q !== v) return false;
      } else if (q === STRUCT) {
        if (!this.matchStruct(l.structs![p]!, this.terms[v]!)) return false;
      } else {
        const s = -1 - q;
        const b = slots[s]!;
        if (b < 0) {
          slots[s] = v;
          this.trail.push(s);
        } else if (b !== v) return false;
      }
    }
    return true;
  }

  /** Match a structure pattern against a ground term, binding slots to the ids of its parts. */
  private matchStruct(sp: SPat, t: Term): boolean {
    if (typeof sp === "number") return this.termId(t) === sp;
    if (!Array.isArray(sp)) {
      const v = this.termId(t);
      const s = (sp as { slot: number }).slot;
      const b = this.slots[s]!;
      if (b < 0) {
        this.slots[s] = v;
        this.trail.push(s);
        return true;
      }
      return b === v;
    }
    if (typeof t === "string" || t.length !== sp.length) return false;
    for (let i = 0; i < sp.length; i++) if (!this.matchStruct(sp[i]!, t[i]!)) return false;
    return true;
  }

  /** The term a structure pattern denotes under the bindings (every slot bound). */
  private buildStruct(sp: SPat): Term {
    if (typeof sp === "number") return this.terms[sp]!;
    if (!Array.isArray(sp)) return this.terms[this.slots[(sp as { slot: number }).slot]!]!;
    return sp.map((x) => this.buildStruct(x));
  }

  private undo(mark: number): void {
    const trail = this.trail;
    while (trail.length > mark) this.slots[trail.pop()!] = -1;
  }

  private join(rule: Rule, k: number, fixed: number): void {
    if (this.found || (this.bounded && this.mode === Mode.Conclude)) return;
    if (k === rule.lits.length) return this.fire(rule);
    if (k === fixed) return this.join(rule, k + 1, fixed);
    const l = rule.lits[k]!;
    const rel = l.rel;
    let pos = -1;
    let val = -1;
    let best = Infinity;
    let free = false;
    const t = this.probe;
    t[0] = this.slots[-1 - l.pat[0]!]!; // an antecedent's context is a variable of its own
    if (t[0]! < 0) free = true;
    for (let p = 1; p < l.pat.length; p++) {
      const q = l.pat[p]!;
      const v = q >= 0 ? q : q === STRUCT ? -1 : this.slots[-1 - q]!;
      t[p] = v;
      if (v < 0) {
        free = true;
        continue;
      }
      const len = rel.count(p, v);
      if (len < best) {
        best = len;
        pos = p;
        val = v;
      }
    }
    if (!free) {
      const at = rel.find(t);
      if (at >= 0) this.step(rule, k, fixed, rel, at);
      return;
    }
    if (t[0]! < 0 && pos > 0 && this.argsBound(t, rel.arity)) {
      // Only the context is free: the atom's rows in every context.
      for (let row = rel.atomHead(t); row >= 0; row = rel.atomNext[row]!) this.step(rule, k, fixed, rel, row);
      return;
    }
    if (best === 0) return;
    if (pos < 0) {
      const n = rel.n;
      for (let row = 0; row < n; row++) this.step(rule, k, fixed, rel, row);
      return;
    }
    const next = rel.next[pos]!;
    for (let row = rel.head(pos, val); row >= 0; row = next[row]!) this.step(rule, k, fixed, rel, row);
  }

  private argsBound(t: Int32Array, arity: number): boolean {
    for (let p = 1; p < arity; p++) if (t[p]! < 0) return false;
    return true;
  }

  private step(rule: Rule, k: number, fixed: number, rel: Rel, row: number): void {
    if (!rel.stored[row]) return;
    const label = rel.label[row]!;
    if (this.mode === Mode.Conclude) {
      if (label === OUT) return;
    } else if (this.mode === Mode.Test || this.mode === Mode.Collect) {
      if (label < this.minLabel) return;
    }
    const mark = this.trail.length;
    if (this.match(rule.lits[k]!, rel, row)) {
      this.ants[k] = row * this.span + rel.no;
      this.join(rule, k + 1, fixed);
    }
    this.undo(mark);
  }

  /** The contexts a firing of `rule` concludes in, under the current bindings (its sources' placement). */
  private placement(rule: Rule): number[] {
    const lits = rule.lits;
    let same = true;
    for (let i = 0; i < lits.length && same; i++) same = this.slots[-1 - lits[i]!.pat[0]!] === rule.ctx;
    if (same) {
      this.single[0] = rule.ctx;
      return this.single;
    }
    const sources = [rule.ctx, ...lits.map((l) => this.slots[-1 - l.pat[0]!]!)];
    const key = sources.join(" ");
    let ids = this.places.get(key);
    if (!ids) this.places.set(key, (ids = this.topology.placement(sources.map((s) => this.names[s]!)).map((c) => this.id(c))));
    return ids;
  }

  private fire(rule: Rule): void {
    let places = this.placement(rule);
    if (this.exceptRels.length > 0 && this.masked()) places = places.filter((ctx) => !this.firingHidden(rule, ctx));
    if (this.mode === Mode.Test) {
      if (places.includes(this.testCtx)) this.found = true;
      return;
    }
    if (this.mode === Mode.Collect) {
      if (places.includes(this.testCtx)) this.collected.push({ rule: rule.handle, ants: rule.lits.map((_, i) => this.ants[i]!) });
      return;
    }
    const n = places.length;
    for (let i = 0; i < n && !this.bounded; i++) this.fireIn(rule, places[i]!);
  }

  /** Whether the rule or an antecedent of the firing is hidden from context `ctx` (it concludes nothing there). */
  private firingHidden(rule: Rule, ctx: number): boolean {
    if (this.hiddenFrom(rule.handle, ctx)) return true;
    for (let i = 0; i < rule.lits.length; i++) {
      const a = this.ants[i]!;
      const rel = this.relOf(a);
      if (this.hiddenFrom(rel.handle[(a - rel.no) / this.span]!, ctx)) return true;
    }
    return false;
  }

  /** The firing's conclusion in context `ctx`. */
  private fireIn(rule: Rule, ctx: number): void {
    const h = rule.head;
    const t = this.t;
    t[0] = ctx;
    for (let p = 1; p < h.pat.length; p++) {
      const q = h.pat[p]!;
      t[p] = q >= 0 ? q : q === STRUCT ? this.termId(this.buildStruct(h.structs![p]!)) : this.slots[-1 - q]!;
    }
    const rel = h.rel;
    if (this.mode === Mode.Depend) {
      const at = rel.find(t);
      if (at >= 0 && rel.stored[at]) this.enter(rel, at);
      return;
    }
    // Conclude: the firing's strength is its weakest antecedent's label, its depth one more than its deepest.
    let strength: Label = MONO;
    let depth = 0;
    for (let i = 0; i < rule.lits.length; i++) {
      const a = this.ants[i]!;
      const ar = this.relOf(a);
      const ai = (a - ar.no) / this.span;
      const lab = ar.label[ai]! as Label;
      if (lab < strength) strength = lab;
      if (ar.depth[ai]! > depth) depth = ar.depth[ai]!;
    }
    depth += 1;
    if (depth > this.limits.maxDepth) {
      this.bounded = { limit: "maxDepth", value: this.limits.maxDepth };
      return;
    }
    const at = rel.atomSlot(t);
    let r = rel.rowIn(at, ctx);
    if (r < 0 || !rel.stored[r]) {
      // A rebuild's stored conclusions come on top of the limit (`reuse` holds them then).
      if (++this.derivations > this.limits.maxDerivations + (this.reuse?.size ?? 0)) {
        this.bounded = { limit: "maxDerivations", value: this.limits.maxDerivations };
        return;
      }
      const reused = this.reuse?.get(this.tupleKey(rel, t));
      if (reused) {
        // Rebuild: the conclusion takes back its stored row (handle, seq, and the creator and
        // time of a premise it once was); it is no new sentex.
        const made = r < 0;
        if (made) r = rel.add(t, reused.h, at);
        else rel.handle[r] = reused.h;
        this.handleRefs[reused.h] = r * this.span + rel.no;
        this.storeNew(rel, r, 0, this.creatorId(reused.creator), reused.createdAt, made);
        rel.seq[r] = reused.seq;
        rel.before[r] = OUT;
        this.created.pop();
      } else {
        const made = r < 0;
        r = made ? this.newRow(rel, t, at) : this.reviveRow(rel, r);
        this.storeNew(rel, r, 0, 0, 0, made);
      }
      rel.depth[r] = depth;
      rel.fresh[r] = 1;
      this.enter(rel, r);
      // A new conclusion can defeat, or be defeated by, an opposite outside the region.
      const opp = rel.opp;
      if (opp) for (const o of opp.sameAtom(rel, r, this.opProbe)) if (opp.stored[o] && opp.region[o] !== this.regionNo) this.widen.push(o * this.span + opp.no);
    }
    if (strength > rel.pending[r]!) rel.pending[r] = strength;
    if (rel.premise[r] === 0 && (rel.depth[r] === 0 || depth < rel.depth[r]!)) rel.depth[r] = depth;
    this.conclude(rel, r, strength);
  }

  private conclude(rel: Rel, r: number, strength: Label): void {
    const label = rel.label[r]!;
    if (rel.region[r] === this.regionNo) {
      if (this.pass === MONO) {
        if (strength === MONO && label !== MONO) this.establish(rel, r, MONO);
      } else if (label === OUT && !this.defeated(rel, r)) this.establish(rel, r, DEF);
    } else if ((strength === MONO && label !== MONO) || (label === OUT && !this.defeated(rel, r))) {
      // A stored conclusion outside the region that this firing would move: a dependent of a
      // fact this relabelling created (the closure could not see it), e.g. the opposite a new
      // conclusion's own rule concludes. The region widens to it and the settle runs again.
      this.widen.push(r * this.span + rel.no);
    }
  }

  // ------------------------------------------------------------------ reads

  /** A fact as `context|text`. */
  /** `context|text` of tuple t of `rel` (held or not). */
  private tupleKey(rel: Rel, t: Int32Array): string {
    const parts = [rel.pred];
    for (let p = 1; p < rel.arity; p++) parts.push(this.names[t[p]!]!);
    const atom = `(${parts.join(" ")})`;
    return `${this.names[t[0]!]}|${rel.neg ? `(not ${atom})` : atom}`;
  }

  private textOf(ref: number): string {
    const rel = this.relOf(ref);
    const r = (ref - rel.no) / this.span;
    const parts = [rel.pred];
    for (let p = 1; p < rel.arity; p++) parts.push(this.names[rel.cols[p]![r]!]!);
    const atom = `(${parts.join(" ")})`;
    return `${this.names[rel.cols[0]![r]!]}|${rel.neg ? `(not ${atom})` : atom}`;
  }

  /**
   * Every firing over believed (IN) facts that concludes stored fact h: its rule's handle and
   * its antecedents' handles, in the rule's order. Found by joining each concluding rule's body
   * with the head bound: no justification is stored. None for a rule or a handle not stored.
   */
  firings(h: number): { rule: number; ants: number[] }[] {
    if (!this.live(h)) return [];
    const ref = this.handleRefs[h]!;
    if (ref < 0) return [];
    const rel = this.relOf(ref);
    const r = (ref - rel.no) / this.span;
    this.mode = Mode.Collect;
    this.minLabel = DEF;
    this.testCtx = rel.cols[0]![r]!;
    this.collected = [];
    for (const rule of this.writers[rel.no]!) {
      const mark = this.trail.length;
      if (this.match(rule.head, rel, r, 1)) this.join(rule, 0, -1);
      this.undo(mark);
    }
    this.mode = Mode.Conclude;
    return this.collected.map((f) => ({ rule: f.rule, ants: f.ants.map((a) => this.handleOfRef(a)) }));
  }

  private handleOfRef(ref: number): number {
    const rel = this.relOf(ref);
    return rel.handle[(ref - rel.no) / this.span]!;
  }

  /** Whether a believed mask `ctx` sees hides sentex h there. */
  hides(h: number, ctx: string): boolean {
    const c = this.ids.get(ctx);
    return c !== undefined && this.exceptRels.length > 0 && this.masked() && this.hiddenFrom(h, c);
  }

  /**
   * The believed clashes `ctx` sees: a positive and a negative fact of one atom, both IN, both
   * in contexts `ctx` sees and neither hidden there; a conflict when both are monotonic, else a
   * contradiction. Ordered by the positive side's handle, then the negative's.
   */
  clashPairs(ctx: string): { kind: "contradiction" | "conflict"; pos: number; neg: number }[] {
    const cone = this.topology.up(ctx);
    const seen = this.ids.get(ctx) ?? -1;
    const hidden = (rel: Rel, r: number) => this.exceptRels.length > 0 && this.hiddenFrom(rel.handle[r]!, seen);
    const out: { kind: "contradiction" | "conflict"; pos: number; neg: number }[] = [];
    for (const rel of this.relList) {
      const opp = rel.opp;
      if (rel.neg || !opp) continue;
      for (let r = 0; r < rel.n; r++) {
        if (!rel.stored[r] || rel.label[r] === OUT || !cone.has(this.names[rel.cols[0]![r]!]!) || hidden(rel, r)) continue;
        for (const o of opp.sameAtom(rel, r, this.opProbe)) {
          if (!opp.stored[o] || opp.label[o] === OUT || !cone.has(this.names[opp.cols[0]![o]!]!) || hidden(opp, o)) continue;
          out.push({ kind: rel.label[r] === MONO && opp.label[o] === MONO ? "conflict" : "contradiction", pos: rel.handle[r]!, neg: opp.handle[o]! });
        }
      }
    }
    return out.sort((a, b) => a.pos - b.pos || a.neg - b.neg);
  }

  /** `context|text` of any handle this engine minted (a retired one too), or undefined. */
  keyOf(h: number): string | undefined {
    const ref = this.handleRefs[h];
    if (ref === undefined) return undefined;
    if (ref < 0) return this.ruleKeys.get(h);
    return this.textOf(ref);
  }
}

/** Sort handles ascending in place (usually they are already: handles are minted in order). */
function sortHandles(hs: number[]): void {
  for (let i = 1; i < hs.length; i++) {
    if (hs[i - 1]! > hs[i]!) {
      const sorted = Float64Array.from(hs).sort();
      for (let j = 0; j < hs.length; j++) hs[j] = sorted[j]!;
      return;
    }
  }
}

// ------------------------------------------------------------------ views

/**
 * A stored sentex as the code outside the engine reads it (the `Node` type),
 * made when a reader asks and read live from the rows: nothing per fact is kept for it. A
 * view of a handle that has left the store still reads its context and text (rows are never
 * removed), and `gone` is true.
 */
export class RowNode {
  private built: List | undefined;
  private printed: string | undefined;
  private said: string | undefined;
  constructor(
    private readonly e: RowEngine,
    readonly h: number,
    private readonly rel: Rel | undefined,
    private readonly r: number,
    private readonly ruleRec: Rule | undefined,
  ) {}

  get ctx(): string {
    return this.e.names[this.ruleRec ? this.ruleRec.ctx : this.rel!.cols[0]![this.r]!]!;
  }
  get neg(): boolean {
    return this.rel ? this.rel.neg : false;
  }
  /** The positive atom (for a rule, the whole `(implies ...)` term). */
  get atom(): List {
    if (this.ruleRec) return this.ruleRec.term;
    if (!this.built) {
      const rel = this.rel!;
      const atom: Term[] = [rel.pred];
      for (let p = 1; p < rel.arity; p++) atom.push(this.e.terms[rel.cols[p]![this.r]!]!);
      this.built = atom as List;
    }
    return this.built;
  }
  /** Canonical text of `atom` (printed once per view). */
  get akey(): string {
    if (this.printed === undefined) {
      if (this.ruleRec) this.printed = this.ruleRec.key.slice(this.ctx.length + 1);
      else {
        const rel = this.rel!;
        let s = `(${rel.pred}`;
        for (let p = 1; p < rel.arity; p++) s += ` ${this.e.names[rel.cols[p]![this.r]!]}`;
        this.printed = `${s})`;
      }
    }
    return this.printed;
  }
  get text(): string {
    return (this.said ??= this.neg ? `(not ${this.akey})` : this.akey);
  }
  /**
   * The texts a write's add already holds for this sentex (its canonical input, or the
   * checks' print of it): a view of a sentex the write stored takes them instead of printing
   * again from the ids, and its text is one flat string to log and send.
   */
  known(akey: string, text: string): this {
    this.printed = akey;
    this.said = text;
    return this;
  }
  /** Whether the sentex has left the store (its row no longer stored, or holding a later handle). */
  get gone(): boolean {
    const rel = this.rel;
    return rel ? rel.stored[this.r] !== 1 || rel.handle[this.r] !== this.h : !this.e.rules.has(this.h);
  }
  get label(): 0 | 1 | 2 {
    if (this.gone) return OUT;
    return this.ruleRec ? MONO : (this.rel!.label[this.r] as 0 | 1 | 2);
  }
  get premise(): 0 | 1 | 2 {
    return this.ruleRec ? this.ruleRec.mark : (this.rel!.premise[this.r] as 0 | 1 | 2);
  }
  get creator(): string | null {
    if (this.ruleRec) return this.ruleRec.creator;
    const c = this.rel!.creator[this.r]!;
    return c === 0 ? null : this.e.names[c - 1]!;
  }
  get createdAt(): number {
    return this.ruleRec ? this.ruleRec.createdAt : this.rel!.createdAt[this.r]!;
  }
  get seq(): number {
    return this.ruleRec ? this.ruleRec.seq : this.rel!.seq[this.r]!;
  }
  get rule(): CompiledRule | null {
    return this.ruleRec ? this.ruleRec.compiled : null;
  }
}

const EMPTY_VIEWS: readonly RowNode[] = [];
const NO_RELS: readonly Rel[] = [];

/**
 * The read API over the rows: what the checks, queries, disputes and the kb read.
 * Candidates are the stored rows of the smallest bound argument's chains (counts include rows
 * that left the store: they pick the chain, never the matches).
 */
export class RowIndex {
  constructor(private readonly e: RowEngine) {}

  get size(): number {
    let n = this.e.rules.size;
    for (const rel of this.e.relList) n += rel.storedCount;
    return n;
  }

  readonly byHandle = {
    has: (h: number): boolean => this.e.live(h),
    get: (h: number): RowNode | undefined => (this.e.live(h) ? this.e.view(h) : undefined),
    keys: (): number[] => {
      const out: number[] = [];
      for (let h = 1; h < this.e.nextHandle; h++) if (this.e.live(h)) out.push(h);
      return out;
    },
    values: (): RowNode[] => this.byHandle.keys().map((h) => this.e.view(h)!),
  };

  /** The ids of a ground atom's arguments, or undefined when one was never interned (nothing holds it). */
  private argIds(atom: List): Int32Array | undefined {
    const t = new Int32Array(atom.length);
    for (let i = 1; i < atom.length; i++) {
      const x = atom[i]!;
      const id = this.e.ids.get(typeof x === "string" ? x : printTerm(x));
      if (id === undefined) return undefined;
      t[i] = id;
    }
    return t;
  }

  /** The stored sentex with exactly this identity, if any. */
  find(ctx: string, neg: boolean, atom: List): RowNode | undefined {
    if (atom[0] === "implies") {
      const rule = neg ? undefined : this.e.ruleByKey.get(`${ctx}|${printTerm(atom)}`);
      return rule ? this.e.view(rule.handle) : undefined;
    }
    const rel = this.e.relFor(neg, atom[0] as string, atom.length);
    const t = rel && this.argIds(atom);
    const c = this.e.ids.get(ctx);
    if (!rel || !t || c === undefined) return undefined;
    t[0] = c;
    const r = rel.find(t);
    return r >= 0 && rel.stored[r] ? this.e.view(rel.handle[r]!) : undefined;
  }

  /** Every stored sentex with this atom, any context, positives first. */
  withAtom(atom: List): readonly RowNode[] {
    if (atom[0] === "implies") {
      const text = printTerm(atom);
      return [...this.e.rules.values()].filter((r) => r.key.slice(r.key.indexOf("|") + 1) === text).map((r) => this.e.view(r.handle)!);
    }
    const out: RowNode[] = [];
    for (const neg of [false, true]) {
      const rel = this.e.relFor(neg, atom[0] as string, atom.length);
      const t = rel && this.argIds(atom);
      if (!rel || !t) continue;
      for (let r = rel.atomHead(t); r >= 0; r = rel.atomNext[r]!) if (rel.stored[r]) out.push(this.e.view(rel.handle[r]!)!);
    }
    return out;
  }

  /** The relations under a predicate key (`p` or `~p`), every arity. */
  private relsOf(key: string): readonly Rel[] {
    return this.e.relsByPred.get(key) ?? NO_RELS;
  }

  /** Candidates for a literal pattern: the stored rows of the smallest bound argument's chains, else every stored row of the predicate. */
  *candidates(key: string, pattern: List): Iterable<RowNode> {
    const rels = this.relsOf(key); // (rules are never candidates)
    let pos = -1;
    let id = -1;
    let best = Infinity;
    for (let i = 1; i < pattern.length; i++) {
      const x = pattern[i]!;
      if (typeof x === "string" ? x.startsWith("?") : !RowIndex.ground(x)) continue;
      const v = this.e.ids.get(typeof x === "string" ? x : printTerm(x));
      if (v === undefined) return; // no row holds it
      let n = 0;
      for (const rel of rels) if (i < rel.arity) n += rel.count(i, v);
      if (n < best) {
        best = n;
        pos = i;
        id = v;
      }
    }
    for (const rel of rels) {
      if (pos < 0) {
        for (let r = 0; r < rel.n; r++) if (rel.stored[r]) yield new RowNode(this.e, rel.handle[r]!, rel, r, undefined);
        continue;
      }
      if (pos >= rel.arity) continue;
      // A chain's count is its length: the walk stops there, without reading the last row's link.
      const next = rel.next[pos]!;
      let r = rel.head(pos, id);
      for (let left = rel.count(pos, id); left > 0; left--) {
        if (rel.stored[r]) yield new RowNode(this.e, rel.handle[r]!, rel, r, undefined);
        if (left > 1) r = next[r]!;
      }
    }
  }

  private static ground(t: Term): boolean {
    return typeof t === "string" ? !t.startsWith("?") : t.every(RowIndex.ground);
  }

  /** Every stored sentex under a predicate key. */
  all(key: string): Iterable<RowNode> {
    return this.candidates(key, [key.startsWith("~") ? key.slice(1) : key]);
  }

  predSize(key: string): number {
    let n = 0;
    for (const rel of this.relsOf(key)) n += rel.storedCount;
    return n;
  }

  /** The stored sentexes whose arguments name `(sentexHandle h)`. */
  mentioning(h: number): readonly RowNode[] {
    const refs = this.e.mentions.get(h);
    if (!refs) return EMPTY_VIEWS;
    const out: RowNode[] = [];
    for (const ref of refs) {
      const rel = this.e.relOf(ref);
      const r = (ref - rel.no) / this.e.span;
      if (rel.stored[r]) out.push(this.e.view(rel.handle[r]!)!);
    }
    return out;
  }

  /** The atoms held at both polarities (by their text). */
  get opposed(): Map<string, List> {
    const out = new Map<string, List>();
    for (const rel of this.e.relList) {
      const opp = rel.opp;
      if (rel.neg || !opp) continue;
      const probe = new Int32Array(rel.arity);
      for (let r = 0; r < rel.n; r++) {
        if (!rel.stored[r]) continue;
        if (opp.sameAtom(rel, r, probe).some((o) => opp.stored[o])) {
          const v = this.e.view(rel.handle[r]!)!;
          out.set(v.akey, v.atom);
        }
      }
    }
    return out;
  }

  intern(s: string): string;
  intern(s: string | null): string | null;
  intern(s: string | null): string | null {
    return s;
  }
}
