/**
 * In-memory indexes over stored nodes: by handle, by identity (the atom's structure), by
 * predicate, and by (predicate, argument position, argument text). A bucket holds one node directly
 * and becomes an array only when a second arrives, which keeps the common unique-key case
 * at one map entry per sentex.
 */
import { type List, type Term, printTerm, isVariable, handleOfTerm } from "./term.js";
import { type Node, nodePredKey } from "./node.js";
import { type Pat, argKeyOf } from "./compiled.js";

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
  readonly args: Map<string, Bucket>[] = [];
  readonly nullary = new Set<Node>();

  *all(): IterableIterator<Node> {
    yield* this.nullary;
    const first = this.args[1];
    if (!first) return;
    for (const b of first.values()) {
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
 * One level of the identity index: the atoms that continue with one more element (`kids`,
 * keyed by that element's index key) and the atoms that end with it (`leaves`). While one
 * atom alone continues through a key, `kids` holds its bucket there instead of a level of
 * its own (the path is compressed): a million `(rel E_i V_i)` cost one map entry each, not a
 * level and a leaf map each.
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
 * Nodes by atom structure, one map per element: looking up a derived atom reads maps keyed
 * by the strings it is built of (their hashes already computed), never a freshly printed
 * text of the whole atom, which would be hashed and compared against a map of millions.
 * Two atoms have the same path exactly when their canonical texts are equal (an element's
 * key is the atom itself or the printed text of a list).
 */
class AtomTable {
  private readonly root = new Level();
  /**
   * The level whose leaves hold the atom `get` looked up last, when its walk reached them: a
   * firing looks its conclusion up and then adds it, and the add reuses the walk. Levels are
   * only ever dropped by `remove`, which clears this.
   */
  private lastAtom: List | undefined;
  private lastLevel: Level | undefined;

  get(atom: List): Bucket | undefined {
    if (atom.length === 0) throw new Error("invariant: an atom has a predicate");
    this.lastAtom = undefined;
    let lv = this.root;
    const last = atom.length - 1;
    for (let i = 0; i < last; i++) {
      const next = lv.kids?.get(argKey(atom[i]!));
      if (next === undefined) return undefined;
      if (!(next instanceof Level)) return sameFrom(bucketAtom(next), atom, i + 1) ? next : undefined;
      lv = next;
    }
    this.lastAtom = atom;
    this.lastLevel = lv;
    return lv.leaves?.get(argKey(atom[last]!));
  }

  /** Add n under its atom; returns the bucket as it was before (undefined when new). */
  add(n: Node): Bucket | undefined {
    const atom = n.atom;
    if (atom.length === 0) throw new Error("invariant: an atom has a predicate");
    const last = atom.length - 1;
    let lv = this.root;
    if (atom === this.lastAtom) lv = this.lastLevel!;
    else {
      for (let i = 0; i < last; i++) {
        const k = argKey(atom[i]!);
        const kids = (lv.kids ??= new Map());
        const next = kids.get(k);
        if (next === undefined) {
          kids.set(k, n); // the only atom past this prefix: no level of its own
          return undefined;
        }
        if (!(next instanceof Level)) {
          if (sameFrom(bucketAtom(next), atom, i + 1)) return bucketAdd(kids as Map<string, Bucket>, k, n); // the entry at k is this bucket
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
    }
    return bucketAdd((lv.leaves ??= new Map()), argKey(atom[last]!), n);
  }

  /** Levels and leaf maps below the root (what stays allocated; 0 once every atom is removed). */
  levels(): number {
    const count = (lv: Level): number => {
      let n = 0;
      if (lv.kids) for (const k of lv.kids.values()) if (k instanceof Level) n += 1 + count(k);
      return n + (lv.leaves ? 1 : 0);
    };
    return count(this.root);
  }

  /** Remove n, dropping the maps and levels it leaves empty (a retracted argument leaves no map behind). */
  remove(n: Node): void {
    this.lastAtom = this.lastLevel = undefined;
    const atom = n.atom;
    const last = atom.length - 1;
    const path: Level[] = [this.root];
    const keys: string[] = [];
    let lv = this.root;
    for (let i = 0; i < last; i++) {
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

export class MemIndex {
  readonly byHandle = new HandleTable();
  private readonly byAtom = new AtomTable();
  private readonly preds = new Map<string, PredIndex>();
  /** handle -> nodes whose atom contains (sentexHandle handle). */
  private readonly mentions = new Map<number, Bucket>();
  /** Atoms held at both polarities somewhere, by their text: where clashes can be. */
  readonly opposed = new Map<string, List>();

  /** One string per name (predicate, context, creator): each node points at it instead of holding its own copy. */
  private readonly names = new Map<string, string>();

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
    const before = this.byAtom.add(n);
    if (before !== undefined && this.bucketHasOpposite(n)) this.opposed.set(n.akey, n.atom);
    if (n.rule) return; // rules are found through the rule index, never matched as facts
    const key = nodePredKey(n);
    let p = this.preds.get(key);
    if (!p) this.preds.set(key, (p = new PredIndex()));
    p.count++;
    if (n.atom.length === 1) p.nullary.add(n);
    for (let i = 1; i < n.atom.length; i++) {
      let m = p.args[i];
      if (!m) p.args[i] = m = new Map();
      const arg = n.atom[i]!;
      bucketAdd(m, argKey(arg), n);
      if (typeof arg !== "string") this.indexMentions(arg, n, bucketAdd);
    }
  }

  remove(n: Node): void {
    this.byHandle.delete(n.h);
    this.byAtom.remove(n);
    if (this.opposed.size !== 0 && this.opposed.has(n.akey) && !this.bucketHasBoth(n.atom)) this.opposed.delete(n.akey);
    if (n.rule) return;
    const p = this.preds.get(nodePredKey(n));
    if (!p) return;
    p.count--;
    if (n.atom.length === 1) p.nullary.delete(n);
    for (let i = 1; i < n.atom.length; i++) {
      const arg = n.atom[i]!;
      const m = p.args[i];
      if (m) bucketRemove(m, argKey(arg), n);
      if (typeof arg !== "string") this.indexMentions(arg, n, bucketRemove);
    }
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

  /** Maps the identity index holds (levels and leaf maps): 0 when no node is stored. */
  identityMaps(): number {
    return this.byAtom.levels();
  }

  /** Every node (any context, either polarity) with this atom. */
  withAtom(atom: List): readonly Node[] {
    return bucketList(this.byAtom.get(atom));
  }

  /** The node with exactly this identity, if stored. */
  find(ctx: string, neg: boolean, atom: List): Node | undefined {
    const b = this.byAtom.get(atom);
    if (b === undefined) return undefined;
    if (!Array.isArray(b)) return b.ctx === ctx && b.neg === neg ? b : undefined;
    for (const n of b) if (n.ctx === ctx && n.neg === neg) return n;
    return undefined;
  }

  /** Whether n's atom is held at both polarities (read without printing its text). */
  hasOpposite(n: Node): boolean {
    return this.opposed.size !== 0 && this.bucketHasBoth(n.atom);
  }

  private bucketHasOpposite(n: Node): boolean {
    const b = this.byAtom.get(n.atom);
    if (b === undefined || !Array.isArray(b)) return false; // alone in its bucket
    for (const m of b) if (m.neg !== n.neg) return true;
    return false;
  }

  private bucketHasBoth(atom: List): boolean {
    let pos = false;
    let neg = false;
    for (const m of this.withAtom(atom)) {
      if (m.neg) neg = true;
      else pos = true;
    }
    return pos && neg;
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
      const m = p.args[i];
      const b = bucketList(m?.get(argKey(arg)));
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
      const b = p.args[i]?.get(k);
      if (b === undefined) return EMPTY;
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
