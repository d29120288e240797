/**
 * One relation of the row engine (rowengine.ts): the stored facts of one polarity, predicate
 * and arity as rows of interned ids. A column for the context and one per argument; an
 * open-addressing hash of the atom (the arguments without the context) for identity, its rows
 * chained newest first; per argument position, chains through the rows in the order they were
 * added, with a count per id (a join walks the shortest bound chain). A fact's state is
 * columns beside them. Rows are never removed: the engine marks a row not stored.
 */
export class Rel {
  n = 0;
  private cap = 64;
  cols: Int32Array[];
  handle = new Int32Array(this.cap);
  stored = new Uint8Array(this.cap);
  premise = new Uint8Array(this.cap);
  label = new Uint8Array(this.cap);
  /** The number of the region the row last joined. */
  region = new Int32Array(this.cap);
  /** The strongest firing seen for the row in the current relabelling (pass 1 sees only IN antecedents). */
  pending = new Uint8Array(this.cap);
  /** Whether the row was created in the current settle (its support is all in `pending`). */
  fresh = new Uint8Array(this.cap);
  /** Derivation depth: 0 for a premise, else the least 1 + deepest antecedent over the firings seen. */
  depth = new Int32Array(this.cap);
  /** The write that last recorded `before`, and the label before it (-1: that write stored the row). */
  writeNo = new Int32Array(this.cap);
  before = new Int8Array(this.cap);
  /** Who asserted it (a name id, -1 for none), when (epoch ms, 0 for a conclusion), and the write that stored it. */
  creator = new Int32Array(this.cap);
  createdAt = new Float64Array(this.cap);
  seq = new Float64Array(this.cap);
  /**
   * Identity: an open-addressing hash over the argument columns (1 on) to the last row with
   * that atom, and per row the previous one in any context (`atomNext`, -1: none); a fact is
   * its atom's row in its context. Slot i is [2i], its row (-1 when free), and [2i + 1], the
   * atom's hash (a probe compares it before any column; a rehash reads no row): a probe reads
   * one cache line.
   */
  private atomSlots = Rel.records(128, 2, 1);
  private atoms = 0;
  /** The hash `atomSlot` computed last (what `add` stores in the free slot it returned). */
  private lastHash = 0;
  atomNext = new Int32Array(this.cap);
  /**
   * Per argument position, the chains of rows holding each id, in the order they were added:
   * per id v, [3v] the first row (-1: none), [3v + 1] the last, [3v + 2] how many (a join's
   * choice reads the count and then the head from one cache line); `next` links the rows.
   * A chain's count is its length: rows never leave it.
   */
  private chains: Int32Array[] = [];
  next: Int32Array[] = [];
  /** The relation of the other polarity (set by the engine). */
  opp: Rel | undefined;
  /** Stored rows. */
  storedCount = 0;
  /** The last write (the engine's number) that stored, removed, relabelled or re-marked a row. */
  changedIn = 0;

  constructor(
    readonly no: number,
    readonly pred: string,
    readonly neg: boolean,
    readonly arity: number,
  ) {
    this.cols = Array.from({ length: arity }, () => new Int32Array(this.cap));
    // Position 0 (the context) is not indexed: its chains and links stay empty.
    const NONE = new Int32Array(0);
    for (let p = 0; p < arity; p++) {
      this.chains.push(p === 0 ? NONE : Rel.emptyChains(64));
      this.next.push(p === 0 ? NONE : new Int32Array(this.cap));
    }
  }

  /** `n` records of `width` int32s each, the first `unset` of every record -1 (none), the rest 0. */
  private static records(n: number, width: number, unset: number): Int32Array {
    const a = new Int32Array(n * width);
    for (let i = 0; i < a.length; i += width) for (let k = 0; k < unset; k++) a[i + k] = -1;
    return a;
  }

  /** Chains for `ids` ids: first and last row none, count 0. */
  private static emptyChains(ids: number): Int32Array {
    return Rel.records(ids, 3, 2);
  }

  /** The first row holding id v at argument position p, or -1. */
  head(p: number, v: number): number {
    const c = this.chains[p]!;
    return 3 * v < c.length ? c[3 * v]! : -1;
  }

  /** How many rows hold id v at position p (stored or not: the length of its chain). */
  count(p: number, v: number): number {
    const c = this.chains[p]!;
    return 3 * v < c.length ? c[3 * v + 2]! : 0;
  }

  private hash(t: Int32Array, from = 0): number {
    let x = 0x9e3779b9 | 0;
    for (let i = from; i < this.arity; i++) {
      x = Math.imul(x ^ t[i]!, 0x85ebca6b);
      x ^= x >>> 16;
    }
    x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
    return (x ^ (x >>> 16)) >>> 0;
  }

  /** The row holding t (its context in t[0]), or -1: the atom's rows in every context, walked for the context. */
  find(t: Int32Array): number {
    return this.rowIn(this.atomSlot(t), t[0]!);
  }

  /** The row in context `ctx` among the atom's rows at slot `at` (from `atomSlot`), or -1. */
  rowIn(at: number, ctx: number): number {
    if (at < 0) return -1;
    const cols0 = this.cols[0]!;
    for (let r = this.atomSlots[2 * at]!; r >= 0; r = this.atomNext[r]!) if (cols0[r] === ctx) return r;
    return -1;
  }

  /** The atom slot of arguments t[1..], or -1 - (the free slot where they would go). */
  atomSlot(t: Int32Array): number {
    const slots = this.atomSlots;
    const mask = (slots.length >>> 1) - 1;
    const h = this.hash(t, 1) | 0;
    this.lastHash = h;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const r = slots[2 * i]!;
      if (r < 0) return -1 - i;
      if (slots[2 * i + 1] !== h) continue;
      let same = true;
      for (let p = 1; p < this.arity && same; p++) same = this.cols[p]![r] === t[p];
      if (same) return i;
    }
  }

  /** The last row (any context) with arguments t[1..], or -1; earlier ones through `atomNext`. */
  atomHead(t: Int32Array): number {
    const at = this.atomSlot(t);
    return at >= 0 ? this.atomSlots[2 * at]! : -1;
  }

  /** The rows (any context) whose arguments equal those of row r of `from`. */
  sameAtom(from: Rel, r: number, t: Int32Array): number[] {
    for (let p = 1; p < this.arity; p++) t[p] = from.cols[p]![r]!;
    const out: number[] = [];
    for (let o = this.atomHead(t); o >= 0; o = this.atomNext[o]!) out.push(o);
    return out;
  }

  /**
   * Add tuple t (not held), `at` being its `atomSlot` (looked up by the caller for its `find`,
   * and still valid: nothing was added between). The context column is not indexed: a join
   * never binds it first (each antecedent's context is a variable of its own).
   */
  add(t: Int32Array, handle: number, at = this.atomSlot(t)): number {
    if (this.n === this.cap) this.grow();
    const r = this.n++;
    this.cols[0]![r] = t[0]!;
    for (let p = 1; p < this.arity; p++) {
      const v = t[p]!;
      this.cols[p]![r] = v;
      let c = this.chains[p]!;
      if (3 * v >= c.length) {
        const wider = Rel.emptyChains(Math.max(v + 1, (c.length / 3) * 2));
        wider.set(c);
        this.chains[p] = c = wider;
      }
      const last = c[3 * v + 1]!;
      if (last < 0) c[3 * v] = r;
      else this.next[p]![last] = r;
      c[3 * v + 1] = r;
      c[3 * v + 2]!++;
      this.next[p]![r] = -1;
    }
    this.handle[r] = handle;
    if (at >= 0) {
      this.atomNext[r] = this.atomSlots[2 * at]!;
      this.atomSlots[2 * at] = r;
    } else {
      this.atomNext[r] = -1;
      this.atomSlots[-2 - 2 * at] = r;
      this.atomSlots[-1 - 2 * at] = this.lastHash;
      if (++this.atoms * 4 > this.atomSlots.length) this.rehashAtoms();
      // (a doubling rehash per power of two: about as many re-insertions as atoms in all)
    }
    return r;
  }

  private grow(): void {
    const cap = this.cap * 2;
    const wider = <A extends Int32Array | Uint8Array | Int8Array | Float64Array>(a: A): A => {
      const b = new (a.constructor as new (n: number) => A)(cap);
      b.set(a);
      return b;
    };
    this.cols = this.cols.map(wider);
    this.next = this.next.map((a, p) => (p === 0 ? a : wider(a)));
    this.handle = wider(this.handle);
    this.stored = wider(this.stored);
    this.premise = wider(this.premise);
    this.label = wider(this.label);
    this.region = wider(this.region);
    this.pending = wider(this.pending);
    this.fresh = wider(this.fresh);
    this.depth = wider(this.depth);
    this.writeNo = wider(this.writeNo);
    this.before = wider(this.before);
    this.creator = wider(this.creator);
    this.createdAt = wider(this.createdAt);
    this.seq = wider(this.seq);
    this.atomNext = wider(this.atomNext);
    this.cap = cap;
  }

  private rehashAtoms(): void {
    const old = this.atomSlots;
    const slots = (this.atomSlots = Rel.records(2 * (old.length >>> 1), 2, 1)); // twice the slots
    const mask = old.length - 1;
    for (let j = 0; j < old.length; j += 2) {
      if (old[j]! < 0) continue;
      const h = old[j + 1]!;
      let i = h & mask;
      while (slots[2 * i]! >= 0) i = (i + 1) & mask;
      slots[2 * i] = old[j]!;
      slots[2 * i + 1] = h;
    }
  }
}
