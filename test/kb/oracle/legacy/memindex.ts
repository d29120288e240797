// The engine as it was before the row engine (main at 6f4d6a3), kept unchanged (only its
// imports now point into src/) as an independent oracle for the differential test
// test/kb/rowengine-differential.test.ts: a second implementation of the same writes,
// outcomes, reads and rebuild. Not used by src/.
/**
 * In-memory indexes over stored nodes: by handle, by predicate, by (predicate, argument
 * position, argument text), and by identity (the atom's structure), which is read through the
 * first argument's map rather than kept beside it. A bucket holds one node directly and becomes
 * an array only when a second arrives, which keeps the common unique-key case at one map entry
 * per sentex and argument.
 */
import { type List, type Term, printTerm, isVariable, handleOfTerm } from "../../../../src/kb/term.js";
import { type Node, nodePredKey, predKey, removeFrom } from "./node.js";
import { type Pat, argKeyOf } from "../../../../src/kb/compiled.js";

type Bucket = Node | Node[];

/** Add n under key; returns the bucket as it was before (undefined when new). */
function bucketAdd<K>(map: Map<K, Bucket>, key: K, n: Node): Bucket | undefined {
  const b = map.get(key);
  if (b === undefined) map.set(key, n);
  else if (Array.isArray(b)) b.push(n);
  else map.set(key, [b, n]);
  return b;
}

function bucketRemove<K>(map: Map<K, Bucket>, key: K, n: Node): void {
  const b = map.get(key);
  if (b === undefined) return;
  if (!Array.isArray(b)) {
    if (b === n) map.delete(key);
    return;
  }
  const i = b.indexOf(n);
  if (i < 0) return;
  b[i] = b[b.length - 1]!;
  b.pop();
  if (b.length === 1) map.set(key, b[0]!);
}

const EMPTY: readonly Node[] = [];
function bucketList(b: Bucket | undefined): readonly Node[] {
  if (b === undefined) return EMPTY;
  return Array.isArray(b) ? b : [b];
}

const argKey = (t: Term): string => (typeof t === "string" ? t : printTerm(t));

/**
 * One predicate's nodes. There is no separate "all" set: a full scan walks the first
 * argument's buckets (or `nullary` for a predicate used without arguments), which saves a
 * set entry per sentex.
 */
class PredIndex {
  count = 0;
  /** Position i's map: argument key -> the nodes with that argument there (a Wide only at position 1). */
  readonly args: Map<string, Entry>[] = [];
  readonly nullary = new Set<Node>();

  *all(): IterableIterator<Node> {
    yield* this.nullary;
    const first = this.args[1];
    if (!first) return;
    for (const e of first.values()) {
      const b = e instanceof Wide ? e.nodes : e;
      if (Array.isArray(b)) yield* b;
      else yield b;
    }
  }
}

/**
 * Nodes by handle. Handles are minted densely, so a plain array beats a Map on both speed
 * and memory; a retracted handle leaves a hole (holes stay cheap while most handles live).
 */
export class HandleTable {
  private readonly slots: (Node | undefined)[] = [];
  size = 0;

  get(h: number): Node | undefined {
    return this.slots[h];
  }
  has(h: number): boolean {
    return this.slots[h] !== undefined;
  }
  set(h: number, n: Node): void {
    while (this.slots.length < h) this.slots.push(undefined); // keep the array packed, never holey-by-gap
    if (this.slots[h] === undefined) this.size++;
    this.slots[h] = n;
  }
  delete(h: number): boolean {
    if (this.slots[h] === undefined) return false;
    this.slots[h] = undefined;
    this.size--;
    return true;
  }
  *values(): IterableIterator<Node> {
    for (const n of this.slots) if (n !== undefined) yield n;
  }
  *keys(): IterableIterator<number> {
    for (const n of this.slots) if (n !== undefined) yield n.h;
  }
}

/**
 * One level of an identity table: the atoms that continue with one more element (`kids`,
 * keyed by that element's index key) and the atoms that end with it (`leaves`). While one
 * atom alone continues through a key, `kids` holds its bucket there instead of a level of
 * its own (the path is compressed).
 */
class Level {
  kids: Map<string, Level | Bucket> | undefined = undefined;
  leaves: Map<string, Bucket> | undefined = undefined;
}

const bucketAtom = (b: Bucket): List => (Array.isArray(b) ? b[0]!.atom : b.atom);

/** Whether `a` and `b` are as long and have equal keys from element `from` on. */
function sameFrom(a: List, b: List, from: number): boolean {
  if (a.length !== b.length) return false;
  for (let i = from; i < a.length; i++) if (a[i] !== b[i] && argKey(a[i]!) !== argKey(b[i]!)) return false;
  return true;
}

/**
 * Nodes by the elements of their atom from position `from` on, one map per element: a lookup
 * reads maps keyed by the strings the atom is built of (their hashes already computed),
 * never a freshly printed text of the whole atom. Two atoms that agree before `from` have
 * the same path exactly when their canonical texts are equal (an element's key is the atom
 * itself or the printed text of a list). Atoms that end before `from` share `here`.
 */
class AtomTable {
  private readonly root = new Level();
  private here: Bucket | undefined = undefined;

  constructor(private readonly from: number) {}

  get(atom: List): Bucket | undefined {
    if (atom.length <= this.from) return atom.length === this.from ? this.here : undefined;
    let lv = this.root;
    const last = atom.length - 1;
    for (let i = this.from; i < last; i++) {
      const next = lv.kids?.get(argKey(atom[i]!));
      if (next === undefined) return undefined;
      if (!(next instanceof Level)) return sameFrom(bucketAtom(next), atom, i + 1) ? next : undefined;
      lv = next;
    }
    return lv.leaves?.get(argKey(atom[last]!));
  }

  add(n: Node): void {
    const atom = n.atom;
    if (atom.length < this.from) throw new Error(`invariant: an atom in an identity table from position ${this.from} has at least ${this.from} elements`);
    if (atom.length === this.from) {
      const b = this.here;
      this.here = b === undefined ? n : Array.isArray(b) ? (b.push(n), b) : [b, n];
      return;
    }
    const last = atom.length - 1;
    let lv = this.root;
    for (let i = this.from; i < last; i++) {
      const k = argKey(atom[i]!);
      const kids = (lv.kids ??= new Map());
      const next = kids.get(k);
      if (next === undefined) {
        kids.set(k, n); // the only atom past this prefix: no level of its own
        return;
      }
      if (!(next instanceof Level)) {
        if (sameFrom(bucketAtom(next), atom, i + 1)) {
          bucketAdd(kids as Map<string, Bucket>, k, n); // the entry at k is this bucket
          return;
        }
        // A second atom continues through this key: the first moves one level down.
        const split = new Level();
        kids.set(k, split);
        const other = bucketAtom(next);
        const at = argKey(other[i + 1]!);
        if (i + 1 === other.length - 1) (split.leaves = new Map()).set(at, next);
        else (split.kids = new Map()).set(at, next);
        lv = split;
        continue;
      }
      lv = next;
    }
    bucketAdd((lv.leaves ??= new Map()), argKey(atom[last]!), n);
  }

  /** Maps the table holds (0 once every atom is removed). */
  maps(): number {
    const count = (lv: Level): number => {
      let n = (lv.kids ? 1 : 0) + (lv.leaves ? 1 : 0);
      if (lv.kids) for (const k of lv.kids.values()) if (k instanceof Level) n += count(k);
      return n;
    };
    return count(this.root);
  }

  /** Remove n, dropping the maps and levels it leaves empty. */
  remove(n: Node): void {
    const atom = n.atom;
    if (atom.length === this.from) {
      const b = this.here;
      if (b === undefined) return;
      if (!Array.isArray(b)) {
        if (b === n) this.here = undefined;
      } else {
        removeFrom(b, n);
        if (b.length === 1) this.here = b[0];
      }
      return;
    }
    const last = atom.length - 1;
    const path: Level[] = [this.root];
    const keys: string[] = [];
    let lv = this.root;
    for (let i = this.from; i < last; i++) {
      const k = argKey(atom[i]!);
      const next = lv.kids?.get(k);
      if (next === undefined) return;
      if (!(next instanceof Level)) {
        if (!sameFrom(bucketAtom(next), atom, i + 1)) return;
        bucketRemove(lv.kids as Map<string, Bucket>, k, n); // the entry at k is this bucket
        return this.prune(path, keys);
      }
      path.push(next);
      keys.push(k);
      lv = next;
    }
    if (lv.leaves === undefined) return;
    bucketRemove(lv.leaves, argKey(atom[last]!), n);
    this.prune(path, keys);
  }

  /** Drop, bottom up along `path`, the maps left empty and the levels left holding nothing. */
  private prune(path: Level[], keys: string[]): void {
    for (let i = path.length - 1; i >= 0; i--) {
      const lv = path[i]!;
      if (lv.leaves?.size === 0) lv.leaves = undefined;
      if (lv.kids?.size === 0) lv.kids = undefined;
      if (i === 0 || lv.leaves !== undefined || lv.kids !== undefined) return;
      path[i - 1]!.kids!.delete(keys[i - 1]!);
    }
  }
}

/**
 * The nodes of one predicate key that share a first argument, once there are more than
 * `wideAt` of them: their list (what a join or a scan walks) and an identity table over the
 * rest of each atom (what a lookup reads instead of scanning the list).
 */
class Wide {
  readonly rest = new AtomTable(2);
  constructor(readonly nodes: Node[]) {
    for (const n of nodes) this.rest.add(n);
  }
}

/** An argument map's entry: the nodes with that argument there. */
type Entry = Bucket | Wide;

const entryNodes = (e: Entry): Bucket => (e instanceof Wide ? e.nodes : e);

/** The nodes of `e` whose atom has the same elements as `atom` from position 2 on. */
function sameAtomIn(e: Entry | undefined, atom: List): readonly Node[] {
  if (e === undefined) return EMPTY;
  if (e instanceof Wide) return bucketList(e.rest.get(atom));
  if (!Array.isArray(e)) return sameFrom(e.atom, atom, 2) ? [e] : EMPTY;
  return e.filter((n) => sameFrom(n.atom, atom, 2));
}

/** The first node of `e` (in `ctx`, when given) whose atom has the same elements as `atom` from position 2 on. */
function firstIn(e: Entry | undefined, atom: List, ctx: string | undefined): Node | undefined {
  if (e === undefined) return undefined;
  if (e instanceof Wide) return inCtx(e.rest.get(atom), ctx);
  if (!Array.isArray(e)) return (ctx === undefined || e.ctx === ctx) && sameFrom(e.atom, atom, 2) ? e : undefined;
  for (const n of e) if ((ctx === undefined || n.ctx === ctx) && sameFrom(n.atom, atom, 2)) return n;
  return undefined;
}

/** The first node of `b` in `ctx` (any node of it, when no context is given). */
function inCtx(b: Bucket | undefined, ctx: string | undefined): Node | undefined {
  if (b === undefined) return undefined;
  if (!Array.isArray(b)) return ctx === undefined || b.ctx === ctx ? b : undefined;
  for (const n of b) if (ctx === undefined || n.ctx === ctx) return n;
  return undefined;
}

export interface MemIndexOptions {
  /**
   * How many nodes of one predicate key may share a first argument before that argument's
   * entry gets an identity table over the rest of their atoms (below it, a lookup scans them).
   */
  wideAt: number;
}

export const DEFAULT_WIDE_AT = 8;

export class MemIndex {
  readonly byHandle = new HandleTable();
  private readonly preds = new Map<string, PredIndex>();
  /** Rules by their canonical text (rules are never matched as facts). */
  private readonly rules = new Map<string, Bucket>();
  /** handle -> nodes whose atom contains (sentexHandle handle). */
  private readonly mentions = new Map<number, Bucket>();
  /** Atoms held at both polarities somewhere, by their text: where clashes can be. */
  readonly opposed = new Map<string, List>();
  private readonly wideAt: number;

  /** One string per name (predicate, context, creator): each node points at it instead of holding its own copy. */
  private readonly names = new Map<string, string>();

  constructor(opts: Partial<MemIndexOptions> = {}) {
    this.wideAt = opts.wideAt ?? DEFAULT_WIDE_AT;
    if (!(this.wideAt >= 1)) throw new Error(`invariant: wideAt is at least 1, got ${this.wideAt}`);
  }

  get size(): number {
    return this.byHandle.size;
  }

  /**
   * The index's own copy of a name equal to `s` (null stays null). A name parsed or read back per sentex is a
   * fresh string each time; sharing one keeps a million nodes from holding a million copies
   * and leaves the one a match compares with in the cache. Names are never dropped (like
   * the predicate map's keys, they are bounded by the vocabulary the KB has seen).
   */
  intern(s: string): string;
  intern(s: string | null): string | null;
  intern(s: string | null): string | null {
    if (s === null) return null;
    const c = this.names.get(s);
    if (c !== undefined) return c;
    this.names.set(s, s);
    return s;
  }

  add(n: Node): void {
    const atom = n.atom as Term[];
    if (typeof atom[0] === "string") atom[0] = this.intern(atom[0]);
    this.byHandle.set(n.h, n);
    if (n.rule) {
      bucketAdd(this.rules, n.akey, n); // rules are found through the rule index, never matched as facts
      return;
    }
    const key = nodePredKey(n);
    let p = this.preds.get(key);
    if (!p) this.preds.set(key, (p = new PredIndex()));
    p.count++;
    if (n.atom.length === 1) p.nullary.add(n);
    for (let i = 1; i < n.atom.length; i++) {
      let m = p.args[i];
      if (!m) p.args[i] = m = new Map();
      const arg = n.atom[i]!;
      if (i === 1) this.firstAdd(m, argKey(arg), n);
      else bucketAdd(m as Map<string, Bucket>, argKey(arg), n);
      if (typeof arg !== "string") this.indexMentions(arg, n, bucketAdd);
    }
    if (this.first(!n.neg, n.atom) !== undefined) this.opposed.set(n.akey, n.atom);
  }

  /** Add n under its first argument's key: past `wideAt` nodes the entry becomes a Wide. */
  private firstAdd(m: Map<string, Entry>, k: string, n: Node): void {
    const e = m.get(k);
    if (e === undefined) m.set(k, n);
    else if (e instanceof Wide) {
      e.nodes.push(n);
      e.rest.add(n);
    } else if (!Array.isArray(e)) m.set(k, this.wideAt < 2 ? new Wide([e, n]) : [e, n]);
    else {
      e.push(n);
      if (e.length > this.wideAt) m.set(k, new Wide(e));
    }
  }

  /** Remove n from its first argument's entry: a Wide down to half of `wideAt` nodes is a plain bucket again. */
  private firstRemove(m: Map<string, Entry>, k: string, n: Node): void {
    const e = m.get(k);
    if (!(e instanceof Wide)) return bucketRemove(m as Map<string, Bucket>, k, n);
    const i = e.nodes.indexOf(n);
    if (i < 0) return;
    e.nodes[i] = e.nodes[e.nodes.length - 1]!;
    e.nodes.pop();
    e.rest.remove(n);
    const left = e.nodes.length;
    if (left === 0) m.delete(k);
    else if (left * 2 <= this.wideAt) m.set(k, left === 1 ? e.nodes[0]! : e.nodes);
  }

  remove(n: Node): void {
    this.byHandle.delete(n.h);
    if (n.rule) {
      bucketRemove(this.rules, n.akey, n);
      return;
    }
    const p = this.preds.get(nodePredKey(n));
    if (!p) return;
    p.count--;
    if (n.atom.length === 1) p.nullary.delete(n);
    for (let i = 1; i < n.atom.length; i++) {
      const arg = n.atom[i]!;
      const m = p.args[i];
      if (m) {
        if (i === 1) this.firstRemove(m, argKey(arg), n);
        else bucketRemove(m as Map<string, Bucket>, argKey(arg), n);
      }
      if (typeof arg !== "string") this.indexMentions(arg, n, bucketRemove);
    }
    if (this.opposed.size !== 0 && this.opposed.has(n.akey) && !this.bucketHasBoth(n.atom)) this.opposed.delete(n.akey);
  }

  private indexMentions(t: List, n: Node, op: (m: Map<number, Bucket>, k: number, n: Node) => void): void {
    const h = handleOfTerm(t);
    if (h !== undefined) {
      op(this.mentions, h, n);
      return;
    }
    for (const x of t) if (typeof x !== "string") this.indexMentions(x, n, op);
  }

  /** Nodes whose sentence names `(sentexHandle h)`. */
  mentioning(h: number): readonly Node[] {
    return bucketList(this.mentions.get(h));
  }

  /** Maps the identity tables hold beyond the argument maps: 0 while no first argument is shared by more than `wideAt` nodes. */
  identityMaps(): number {
    let n = 0;
    for (const p of this.preds.values()) {
      const first = p.args[1];
      if (first) for (const e of first.values()) if (e instanceof Wide) n += e.rest.maps();
    }
    return n;
  }

  /** The stored nodes of one polarity with exactly this atom, in any context. */
  private sameAtom(neg: boolean, atom: List): readonly Node[] {
    const p = this.preds.get(predKey(neg, atom[0] as string));
    if (p === undefined) return EMPTY;
    if (atom.length === 1) return [...p.nullary]; // every nullary node of a predicate has the same atom
    return sameAtomIn(p.args[1]?.get(argKey(atom[1]!)), atom);
  }

  /** Every node (any context, either polarity) with this atom. */
  withAtom(atom: List): readonly Node[] {
    if (atom[0] === "implies") return bucketList(this.rules.get(printTerm(atom)));
    const pos = this.sameAtom(false, atom);
    const neg = this.sameAtom(true, atom);
    return neg.length === 0 ? pos : pos.length === 0 ? neg : [...pos, ...neg];
  }

  /** The node with exactly this identity, if stored. */
  find(ctx: string, neg: boolean, atom: List): Node | undefined {
    if (atom[0] === "implies") return neg ? undefined : inCtx(this.rules.get(printTerm(atom)), ctx);
    return this.first(neg, atom, ctx);
  }

  /** A stored node of one polarity with exactly this atom: in `ctx` when given, else in any context. */
  private first(neg: boolean, atom: List, ctx?: string): Node | undefined {
    const p = this.preds.get(predKey(neg, atom[0] as string));
    if (p === undefined) return undefined;
    if (atom.length === 1) {
      for (const n of p.nullary) if (ctx === undefined || n.ctx === ctx) return n;
      return undefined;
    }
    return firstIn(p.args[1]?.get(argKey(atom[1]!)), atom, ctx);
  }

  /** Whether n's atom is held at both polarities. */
  hasOpposite(n: Node): boolean {
    return this.opposed.size !== 0 && this.bucketHasBoth(n.atom);
  }

  private bucketHasBoth(atom: List): boolean {
    return this.first(true, atom) !== undefined && this.first(false, atom) !== undefined; // negations are the rarer: asked first
  }

  /**
   * Candidate nodes for a literal pattern: the smallest bucket among its bound arguments,
   * else every node of the predicate. Candidates still need matching.
   */
  candidates(key: string, pattern: List): Iterable<Node> {
    const p = this.preds.get(key);
    if (!p) return EMPTY;
    let best: readonly Node[] | undefined;
    for (let i = 1; i < pattern.length; i++) {
      const arg = pattern[i]!;
      if (typeof arg === "string" ? isVariable(arg) : !isGroundList(arg)) continue;
      const e = p.args[i]?.get(argKey(arg));
      const b = bucketList(e === undefined ? undefined : entryNodes(e));
      if (!best || b.length < best.length) best = b;
      if (best.length <= 1) break;
    }
    return best ?? p.all();
  }

  /**
   * Candidates for a compiled literal pattern under the join's bindings, without building
   * a key list: the smallest bucket among its bound arguments (a node or an array of nodes;
   * EMPTY when the predicate has none), or null when no argument is bound (walk `all`).
   */
  bucketFor(key: string, pat: readonly Pat[], slots: readonly (Term | undefined)[]): Node | readonly Node[] | null {
    const p = this.preds.get(key);
    if (!p) return EMPTY;
    let best: Bucket | undefined;
    let bestLen = Infinity;
    for (let i = 1; i < pat.length; i++) {
      const k = argKeyOf(pat[i]!, slots);
      if (k === undefined) continue;
      const e = p.args[i]?.get(k);
      if (e === undefined) return EMPTY;
      const b = entryNodes(e);
      const len = Array.isArray(b) ? b.length : 1;
      if (len < bestLen) {
        best = b;
        bestLen = len;
        if (len <= 1) break;
      }
    }
    return best === undefined ? null : best;
  }

  /** Every node under a predicate key. */
  all(key: string): Iterable<Node> {
    return this.preds.get(key)?.all() ?? EMPTY;
  }

  /** Count of stored nodes under a predicate key (for join ordering). */
  predSize(key: string): number {
    return this.preds.get(key)?.count ?? 0;
  }
}

function isGroundList(t: List): boolean {
  for (const x of t) {
    if (typeof x === "string") {
      if (isVariable(x)) return false;
    } else if (!isGroundList(x)) return false;
  }
  return true;
}
