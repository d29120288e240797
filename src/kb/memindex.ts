/**
 * In-memory indexes over stored nodes: by handle, by identity (atom text), by predicate,
 * and by (predicate, argument position, argument text). A bucket holds one node directly
 * and becomes an array only when a second arrives, which keeps the common unique-key case
 * at one map entry per sentex.
 */
import { type List, type Term, printTerm, isVariable, handleOfTerm } from "./term.js";
import { type Node, nodePredKey } from "./node.js";

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

export class MemIndex {
  readonly byHandle = new HandleTable();
  private readonly byAtom = new Map<string, Bucket>();
  private readonly preds = new Map<string, PredIndex>();
  /** handle -> nodes whose atom contains (sentexHandle handle). */
  private readonly mentions = new Map<number, Bucket>();
  /** Atom texts held at both polarities somewhere: where clashes can be. */
  readonly opposed = new Set<string>();

  get size(): number {
    return this.byHandle.size;
  }

  add(n: Node): void {
    this.byHandle.set(n.h, n);
    const before = bucketAdd(this.byAtom, n.akey, n);
    if (before !== undefined && this.bucketHasOpposite(n)) this.opposed.add(n.akey);
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
    bucketRemove(this.byAtom, n.akey, n);
    if (this.opposed.has(n.akey) && !this.bucketHasBoth(n.akey)) this.opposed.delete(n.akey);
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

  /** Every node (any context, either polarity) whose atom text is `akey`. */
  withAtom(akey: string): readonly Node[] {
    return bucketList(this.byAtom.get(akey));
  }

  /** The node with exactly this identity, if stored. */
  find(ctx: string, neg: boolean, akey: string): Node | undefined {
    const b = this.byAtom.get(akey);
    if (b === undefined) return undefined;
    if (!Array.isArray(b)) return b.ctx === ctx && b.neg === neg ? b : undefined;
    for (const n of b) if (n.ctx === ctx && n.neg === neg) return n;
    return undefined;
  }

  hasOpposite(n: Node): boolean {
    return this.opposed.has(n.akey);
  }

  private bucketHasOpposite(n: Node): boolean {
    const b = this.byAtom.get(n.akey);
    if (b === undefined || !Array.isArray(b)) return false; // alone in its bucket
    for (const m of b) if (m.neg !== n.neg) return true;
    return false;
  }

  private bucketHasBoth(akey: string): boolean {
    let pos = false;
    let neg = false;
    for (const m of this.withAtom(akey)) {
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
   * Candidates given the index keys of the bound arguments (`argKeys[i]` for position i,
   * undefined when free): the smallest bucket, else every node of the predicate.
   */
  candidatesByArgs(key: string, argKeys: readonly (string | undefined)[]): Iterable<Node> {
    const p = this.preds.get(key);
    if (!p) return EMPTY;
    let best: readonly Node[] | undefined;
    for (let i = 1; i < argKeys.length; i++) {
      const k = argKeys[i];
      if (k === undefined) continue;
      const b = bucketList(p.args[i]?.get(k));
      if (!best || b.length < best.length) best = b;
      if (best.length <= 1) break;
    }
    return best ?? p.all();
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
