/**
 * SPIKE (branch spike/row-engine, not on main): forward chaining and truth maintenance in
 * integer space, for the fragment the rules bench exercises: one context, monotonic,
 * positive literals, atoms of symbols. What it answers: how fast an engine can materialize
 * and maintain a closure when derived facts are rows of interned ids (no node object, no
 * string-keyed map per fact), against the plain closure.
 *
 * - Names are interned to ids; each predicate/arity is a relation of rows (`Rel`): a column
 *   per argument, an open-addressing hash for identity, an index per argument position as
 *   chains through the rows. A row is never removed: a fact that leaves is marked dead and
 *   comes back in place (its handle kept).
 * - Derivation is tuple-at-a-time semi-naive: a fact that becomes alive is queued, and when
 *   popped joins each rule literal it matches against the facts alive then.
 * - Retraction is delete-and-rederive (DRed): the retracted premise's consequences are
 *   over-deleted through the same joins over the old state, each is then rederived when one
 *   rule instance over the facts still alive concludes it, and what is rederived propagates.
 *   No justification is stored: `why` would join a rule body with its head bound.
 */

class Rel {
  n = 0;
  private cap = 64;
  cols: Int32Array[];
  handle = new Int32Array(this.cap);
  /** 1 alive, 0 dead (a fact that left; its row stays for its identity and handle). */
  alive = new Uint8Array(this.cap);
  premise = new Uint8Array(this.cap);
  /** Marked during one over-deletion. */
  doomed = new Uint8Array(this.cap);
  private slots = new Int32Array(128).fill(-1);
  heads: Int32Array[] = [];
  next: Int32Array[] = [];
  /** Per position: how many rows hold each id there (a chain's length, dead rows included). */
  counts: Int32Array[] = [];

  constructor(
    readonly no: number,
    readonly pred: string,
    readonly arity: number,
  ) {
    this.cols = Array.from({ length: arity }, () => new Int32Array(this.cap));
    for (let p = 0; p < arity; p++) {
      this.heads.push(new Int32Array(64).fill(-1));
      this.counts.push(new Int32Array(64));
      this.next.push(new Int32Array(this.cap));
    }
  }

  private hash(t: Int32Array): number {
    let x = 0x9e3779b9 | 0;
    for (let i = 0; i < this.arity; i++) {
      x = Math.imul(x ^ t[i]!, 0x85ebca6b);
      x ^= x >>> 16;
    }
    x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
    return (x ^ (x >>> 16)) >>> 0;
  }

  /** The row holding t, or -1 - (the free slot where it would go). */
  find(t: Int32Array): number {
    const mask = this.slots.length - 1;
    for (let i = this.hash(t) & mask; ; i = (i + 1) & mask) {
      const r = this.slots[i]!;
      if (r < 0) return -1 - i;
      let same = true;
      for (let p = 0; p < this.arity && same; p++) same = this.cols[p]![r] === t[p];
      if (same) return r;
    }
  }

  add(t: Int32Array, free: number, handle: number): number {
    if (this.n === this.cap) this.grow();
    const r = this.n++;
    for (let p = 0; p < this.arity; p++) {
      const v = t[p]!;
      this.cols[p]![r] = v;
      let head = this.heads[p]!;
      if (v >= head.length) {
        const len = Math.max(v + 1, head.length * 2);
        const wider = new Int32Array(len).fill(-1);
        wider.set(head);
        this.heads[p] = head = wider;
        const counts = new Int32Array(len);
        counts.set(this.counts[p]!);
        this.counts[p] = counts;
      }
      this.next[p]![r] = head[v]!;
      head[v] = r;
      this.counts[p]![v]!++;
    }
    this.slots[-1 - free] = r;
    this.handle[r] = handle;
    if (this.n * 2 > this.slots.length) this.rehash();
    return r;
  }

  private grow(): void {
    const cap = this.cap * 2;
    const wider = <A extends Int32Array | Uint8Array>(a: A): A => {
      const b = new (a.constructor as new (n: number) => A)(cap);
      b.set(a);
      return b;
    };
    this.cols = this.cols.map(wider);
    this.next = this.next.map(wider);
    this.handle = wider(this.handle);
    this.alive = wider(this.alive);
    this.premise = wider(this.premise);
    this.doomed = wider(this.doomed);
    this.cap = cap;
  }

  private rehash(): void {
    this.slots = new Int32Array(this.slots.length * 2).fill(-1);
    const t = new Int32Array(this.arity);
    for (let r = 0; r < this.n; r++) {
      for (let p = 0; p < this.arity; p++) t[p] = this.cols[p]![r]!;
      this.slots[-1 - this.find(t)] = r;
    }
  }
}

/** A literal compiled: its relation, and per position a constant id (>= 0) or a variable slot s as -1 - s. */
interface Lit {
  rel: Rel;
  pat: Int32Array;
}

interface Rule {
  handle: number;
  lits: Lit[];
  head: Lit;
  slots: number;
  live: boolean;
}

export type Atom = readonly string[];

export class RowEngine {
  private readonly ids = new Map<string, number>();
  private readonly names: string[] = [];
  private readonly rels = new Map<string, Rel>();
  private readonly relList: Rel[] = [];
  private readonly rules = new Map<number, Rule>();
  /** Per relation number: the (rule, literal index) pairs that read it. */
  private readonly readers: { rule: Rule; i: number }[][] = [];
  /** Per relation number: the rules concluding into it. */
  private readonly writers: Rule[][] = [];
  /** handle -> relation number (-1: a rule) and row. */
  private hRel = new Int32Array(1_024);
  private hRow = new Int32Array(1_024);
  private nextHandle = 1;

  // join state: one binding array and trail, shared (a join allocates nothing)
  private slots = new Int32Array(16).fill(-1);
  private trail: number[] = [];
  private readonly t = new Int32Array(16);
  /** The tuple a fully bound literal is looked up by (apart from `t`, which a firing fills). */
  private readonly probe = new Int32Array(16);
  /** Alive facts still to fire, as relation number and row pairs. */
  private queue: number[] = [];
  /** What a firing does with its conclusion: revive (derive), doom (over-delete), or test (rederive). */
  private mode: "derive" | "doom" | "test" = "derive";
  private found = false;
  private doomedList: number[] = [];
  /** Facts that became alive / left during the last write (handles). */
  added: number[] = [];
  removed: number[] = [];

  private id(s: string): number {
    let i = this.ids.get(s);
    if (i === undefined) {
      this.ids.set(s, (i = this.names.length));
      this.names.push(s);
    }
    return i;
  }

  private rel(pred: string, arity: number): Rel {
    const key = `${pred}/${arity}`;
    let r = this.rels.get(key);
    if (!r) {
      r = new Rel(this.relList.length, pred, arity);
      this.rels.set(key, r);
      this.relList.push(r);
      this.readers.push([]);
      this.writers.push([]);
    }
    return r;
  }

  private newHandle(rel: number, row: number): number {
    const h = this.nextHandle++;
    if (h >= this.hRel.length) {
      const a = new Int32Array(this.hRel.length * 2);
      a.set(this.hRel);
      this.hRel = a;
      const b = new Int32Array(this.hRow.length * 2);
      b.set(this.hRow);
      this.hRow = b;
    }
    this.hRel[h] = rel;
    this.hRow[h] = row;
    return h;
  }

  /** The row of `atom`'s fact (created dead when new). */
  private rowOf(rel: Rel, t: Int32Array): number {
    const at = rel.find(t);
    if (at >= 0) return at;
    const r = rel.add(t, at, 0);
    rel.handle[r] = this.newHandle(rel.no, r);
    return r;
  }

  /** Assert a premise fact; its handle. */
  assertFact(atom: Atom): number {
    this.added = [];
    this.removed = [];
    const rel = this.rel(atom[0]!, atom.length - 1);
    const t = this.t;
    for (let i = 1; i < atom.length; i++) t[i - 1] = this.id(atom[i]!);
    const r = this.rowOf(rel, t);
    rel.premise[r] = 1;
    if (!rel.alive[r]) {
      this.revive(rel, r);
      this.drain();
    }
    return rel.handle[r]!;
  }

  /** Assert a rule: antecedent atoms and a head atom, variables as `?x`; its handle. */
  assertRule(ants: readonly Atom[], head: Atom): number {
    this.added = [];
    this.removed = [];
    const vars = new Map<string, number>();
    const compile = (a: Atom): Lit => ({
      rel: this.rel(a[0]!, a.length - 1),
      pat: Int32Array.from(a.slice(1), (x) => {
        if (!x.startsWith("?")) return this.id(x);
        let s = vars.get(x);
        if (s === undefined) vars.set(x, (s = vars.size));
        return -1 - s;
      }),
    });
    const lits = ants.map(compile);
    const h = this.newHandle(-1, 0);
    const rule: Rule = { handle: h, lits, head: compile(head), slots: vars.size, live: true };
    if (rule.slots > this.slots.length) this.slots = new Int32Array(rule.slots).fill(-1);
    this.rules.set(h, rule);
    lits.forEach((l, i) => this.readers[l.rel.no]!.push({ rule, i }));
    this.writers[rule.head.rel.no]!.push(rule);
    // Every firing of the new rule over the facts alive now, then what those derive.
    this.mode = "derive";
    this.fireAll(rule);
    this.drain();
    return h;
  }

  /** Retract a premise fact or a rule by handle. */
  retract(h: number): void {
    this.added = [];
    this.removed = [];
    const relNo = this.hRel[h];
    if (h < 1 || h >= this.nextHandle) return;
    this.doomedList = [];
    this.mode = "doom";
    if (relNo < 0) {
      const rule = this.rules.get(h);
      if (!rule) return;
      this.fireAll(rule); // its conclusions are doomed
      rule.live = false;
      this.rules.delete(h);
      const rd = this.readers;
      for (const l of rule.lits) rd[l.rel.no] = rd[l.rel.no]!.filter((x) => x.rule !== rule);
      this.writers[rule.head.rel.no] = this.writers[rule.head.rel.no]!.filter((x) => x !== rule);
    } else {
      const rel = this.relList[relNo]!;
      const r = this.hRow[h]!;
      if (!rel.premise[r]) return;
      rel.premise[r] = 0;
      this.doom(rel, r);
    }
    // Over-delete: what the doomed facts derive, through every rule, over the old state.
    for (let i = 0; i < this.doomedList.length; i += 2) {
      const rel = this.relList[this.doomedList[i]!]!;
      this.fireFrom(rel, this.doomedList[i + 1]!);
    }
    for (let i = 0; i < this.doomedList.length; i += 2) {
      const rel = this.relList[this.doomedList[i]!]!;
      const r = this.doomedList[i + 1]!;
      rel.alive[r] = 0;
    }
    // Rederive: a doomed fact one rule instance over the facts alive still concludes comes back.
    this.mode = "test";
    const back: number[] = [];
    for (let i = 0; i < this.doomedList.length; i += 2) {
      const rel = this.relList[this.doomedList[i]!]!;
      const r = this.doomedList[i + 1]!;
      rel.doomed[r] = 0;
      if (rel.premise[r] || this.derivable(rel, r)) back.push(rel.no, r);
    }
    this.mode = "derive";
    for (let i = 0; i < back.length; i += 2) this.revive(this.relList[back[i]!]!, back[i + 1]!);
    this.drain();
    for (let i = 0; i < this.doomedList.length; i += 2) {
      const rel = this.relList[this.doomedList[i]!]!;
      const r = this.doomedList[i + 1]!;
      if (!rel.alive[r]) this.removed.push(rel.handle[r]!);
    }
  }

  private revive(rel: Rel, r: number): void {
    rel.alive[r] = 1;
    this.added.push(rel.handle[r]!);
    this.queue.push(rel.no, r);
  }

  private doom(rel: Rel, r: number): void {
    if (rel.doomed[r] || !rel.alive[r]) return;
    rel.doomed[r] = 1;
    this.doomedList.push(rel.no, r);
  }

  private drain(): void {
    const q = this.queue;
    while (q.length) {
      const r = q.pop()!;
      this.fireFrom(this.relList[q.pop()!]!, r);
    }
  }

  /** Every firing with row r of `rel` at one of its literals, the rest joined over alive rows. */
  private fireFrom(rel: Rel, r: number): void {
    for (const { rule, i } of this.readers[rel.no]!) {
      const mark = this.trail.length;
      if (this.match(rule.lits[i]!, r)) this.join(rule, 0, i);
      this.undo(mark);
    }
  }

  /** Every firing of `rule` over alive rows. */
  private fireAll(rule: Rule): void {
    this.join(rule, 0, -1);
  }

  /** Whether one instance of a live rule over alive rows concludes row r of `rel`. */
  private derivable(rel: Rel, r: number): boolean {
    this.found = false;
    for (const rule of this.writers[rel.no]!) {
      const mark = this.trail.length;
      if (this.match(rule.head, r)) this.join(rule, 0, -1);
      this.undo(mark);
      if (this.found) {
        this.found = false;
        return true;
      }
    }
    return false;
  }

  private match(l: Lit, r: number): boolean {
    const cols = l.rel.cols;
    const pat = l.pat;
    const slots = this.slots;
    for (let p = 0; p < pat.length; p++) {
      const v = cols[p]![r]!;
      const q = pat[p]!;
      if (q >= 0) {
        if (q !== v) return false;
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

  private undo(mark: number): void {
    const trail = this.trail;
    while (trail.length > mark) this.slots[trail.pop()!] = -1;
  }

  private join(rule: Rule, k: number, fixed: number): void {
    if (this.found) return;
    if (k === rule.lits.length) return this.fire(rule);
    if (k === fixed) return this.join(rule, k + 1, fixed);
    const l = rule.lits[k]!;
    const rel = l.rel;
    // Every position bound: one hash probe. Else the bound position with the shortest chain.
    let pos = -1;
    let val = -1;
    let best = Infinity;
    let free = false;
    const t = this.probe;
    for (let p = 0; p < l.pat.length; p++) {
      const q = l.pat[p]!;
      const v = q >= 0 ? q : this.slots[-1 - q]!;
      t[p] = v;
      if (v < 0) {
        free = true;
        continue;
      }
      const counts = rel.counts[p]!;
      const len = v < counts.length ? counts[v]! : 0;
      if (len < best) {
        best = len;
        pos = p;
        val = v;
      }
    }
    if (!free && rel.arity > 0) {
      const at = rel.find(t);
      if (at >= 0) this.step(rule, k, fixed, rel, at);
      return;
    }
    if (best === 0) return;
    if (pos < 0) {
      const n = rel.n;
      for (let row = 0; row < n; row++) this.step(rule, k, fixed, rel, row);
      return;
    }
    const head = rel.heads[pos]!;
    if (val >= head.length) return;
    const next = rel.next[pos]!;
    for (let row = head[val]!; row >= 0; row = next[row]!) this.step(rule, k, fixed, rel, row);
  }

  private step(rule: Rule, k: number, fixed: number, rel: Rel, row: number): void {
    if (!rel.alive[row]) return;
    const mark = this.trail.length;
    if (this.match(rule.lits[k]!, row)) this.join(rule, k + 1, fixed);
    this.undo(mark);
  }

  private fire(rule: Rule): void {
    const h = rule.head;
    const t = this.t;
    for (let p = 0; p < h.pat.length; p++) {
      const q = h.pat[p]!;
      t[p] = q >= 0 ? q : this.slots[-1 - q]!;
    }
    if (this.mode === "test") {
      this.found = true;
      return;
    }
    const rel = h.rel;
    if (this.mode === "doom") {
      const at = rel.find(t);
      if (at >= 0 && !rel.premise[at]) this.doom(rel, at);
      return;
    }
    const r = this.rowOf(rel, t);
    if (!rel.alive[r]) this.revive(rel, r);
  }

  /** Every alive fact, printed. */
  facts(): Set<string> {
    const out = new Set<string>();
    for (const rel of this.relList)
      for (let r = 0; r < rel.n; r++) {
        if (!rel.alive[r]) continue;
        const parts = [rel.pred];
        for (let p = 0; p < rel.arity; p++) parts.push(this.names[rel.cols[p]![r]!]!);
        out.add(`(${parts.join(" ")})`);
      }
    return out;
  }

  count(pred: string, arity: number): number {
    const rel = this.rels.get(`${pred}/${arity}`);
    if (!rel) return 0;
    let n = 0;
    for (let r = 0; r < rel.n; r++) n += rel.alive[r]!;
    return n;
  }
}
