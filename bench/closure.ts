/**
 * Transitive closure for `npm run bench -- rules`: the graphs, the two rules, and the
 * systems that compute it, each behind one interface so every one is timed the same way.
 *
 *   engine     the rules engine alone, in memory (no store)
 *   kb         the same through `openKb`: a real SQLite file, rows and feed events written
 *   seminaive  a plain semi-naive closure written for the benchmark: integer ids, arrays
 *              and sets, no truth maintenance, no contexts (the floor a closure can reach)
 *   index      no reasoning at all: the closure's facts, known in advance, each made a node
 *              and entered in the engine's in-memory index (the least our engine's
 *              materialization can take while it keeps that index)
 *   rows       the closure as interned integer rows, with the bookkeeping a truth-maintaining
 *              engine keeps per derived fact (handle, depth, label, one justification, the
 *              write's added list, identity and argument index) and no node object: what
 *              that other representation of derived facts costs
 *
 * and `DurableFloor`, the least a durable write waits on this machine (what the `kb`
 * system's one-edge insert and retract cannot go under).
 */
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openKb, type Kb } from "../src/kb/index.js";
import { EngineDriver } from "./engine-driver.js";

export type Edge = [number, number];

export const RULES = [
  { sentence: "(implies (edge ?x ?y) (reach ?x ?y))", context: "CxGraph" },
  { sentence: "(implies (and (edge ?x ?y) (reach ?y ?z)) (reach ?x ?z))", context: "CxGraph" },
];

export const edgeEntry = ([a, b]: Edge) => ({ sentence: `(edge N${a} N${b})`, context: "CxGraph" });

export function chain(n: number): Edge[] {
  const out: Edge[] = [];
  for (let i = 0; i < n - 1; i++) out.push([i, i + 1]);
  return out;
}

/** A random recursive tree: node i hangs under a uniformly chosen earlier node. */
export function tree(n: number, seed = 7): Edge[] {
  let s = seed;
  const rnd = () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
  const out: Edge[] = [];
  for (let i = 1; i < n; i++) out.push([Math.floor(rnd() * i), i]);
  return out;
}

export function graph(kind: "chain" | "tree", n: number): Edge[] {
  return kind === "chain" ? chain(n) : tree(n);
}

/** One way of computing the closure. Edges are stored before `derive` (untimed); `derive` is the timed materialization. */
export interface Closure {
  /** Store the edges (not timed). */
  load(edges: Edge[]): Promise<void>;
  /** Materialize the closure (the timed part). */
  derive(): Promise<void>;
  /** Reach facts currently derived. */
  count(): number;
  close(): Promise<void>;
}

/** A closure maintained incrementally (ours): one edge in, the same edge out. */
export interface Incremental extends Closure {
  /** Insert one edge; returns a handle for `retract`. */
  insert(e: Edge): Promise<number>;
  retract(handle: number): Promise<void>;
}

export class EngineClosure implements Incremental {
  private d = new EngineDriver();
  async load(edges: Edge[]) {
    this.d.add(edges.map(edgeEntry));
  }
  async derive() {
    this.d.add(RULES);
  }
  async insert(e: Edge) {
    return this.d.add([edgeEntry(e)])[0]!;
  }
  async retract(h: number) {
    this.d.remove([h]);
  }
  count() {
    return this.d.count("reach");
  }
  async close() {}
}

/** The closure through `openKb` with its store: a real SQLite file (durability `full`, the default), every write durable before it returns. */
export class KbClosure implements Incremental {
  private dir = mkdtempSync(join(tmpdir(), "koinii-bench-rules-"));
  private kb!: Kb;
  async open() {
    this.kb = await openKb({ path: join(this.dir, "kb.db") });
    return this;
  }
  async load(edges: Edge[]) {
    for (let i = 0; i < edges.length; i += 10_000) await this.kb.edit({ add: edges.slice(i, i + 10_000).map(edgeEntry) });
  }
  async derive() {
    await this.kb.edit({ add: RULES });
  }
  async insert(e: Edge) {
    const entry = edgeEntry(e);
    return (await this.kb.assert(entry.sentence, entry.context)).handle;
  }
  async retract(h: number) {
    await this.kb.retract(h);
  }
  count() {
    let n = 0;
    for (const node of this.kb.engine.index.byHandle.values()) if (node.atom[0] === "reach" && node.label > 0) n++;
    return n;
  }
  async close() {
    await this.kb.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * One row committed at a time, durably, by better-sqlite3 alone: WAL mode at
 * synchronous=FULL, so each commit appends to the WAL and fsyncs it, as a `kb.assert` at
 * `full` must at least. A file in the same temp directory as `KbClosure`'s. A commit's
 * body is as long as a one-edge insert's event row (`bytes`).
 */
export class DurableFloor {
  private readonly dir = mkdtempSync(join(tmpdir(), "koinii-bench-floor-"));
  readonly db: Database.Database;
  private readonly insert: Database.Statement;
  private readonly body: string;

  constructor(bytes: number) {
    this.db = new Database(join(this.dir, "floor.db"));
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = FULL");
    this.db.exec("CREATE TABLE event (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)");
    this.insert = this.db.prepare("INSERT INTO event (body) VALUES (?)");
    this.body = "x".repeat(bytes);
  }

  /** One durable commit; its milliseconds. */
  commit(): number {
    const t = process.hrtime.bigint();
    this.insert.run(this.body);
    return Number(process.hrtime.bigint() - t) / 1e6;
  }

  close(): void {
    this.db.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Semi-naive evaluation of reach(x,z) :- edge(x,y), reach(y,z) from reach = edge: each
 * round joins only the facts new in the last round. Node names are interned to integers
 * (timed: the engine gets names too). No incremental maintenance: recomputing it is what the
 * engine's one-edge insert and retract are measured against.
 */
export class SemiNaiveClosure implements Closure {
  private edges: [string, string][] = [];
  private reach: Set<number>[] = [];
  private facts = 0;
  async load(edges: Edge[]) {
    this.edges = edges.map(([a, b]) => [`N${a}`, `N${b}`]);
  }
  async derive() {
    const ids = new Map<string, number>();
    const id = (s: string) => {
      let i = ids.get(s);
      if (i === undefined) ids.set(s, (i = ids.size));
      return i;
    };
    const from: number[] = [];
    const to: number[] = [];
    for (const [a, b] of this.edges) {
      from.push(id(a));
      to.push(id(b));
    }
    const n = ids.size;
    const preds: number[][] = Array.from({ length: n }, () => []);
    const reach: Set<number>[] = Array.from({ length: n }, () => new Set());
    let dx: number[] = [];
    let dz: number[] = [];
    let facts = 0;
    for (let i = 0; i < from.length; i++) {
      preds[to[i]!]!.push(from[i]!);
      if (!reach[from[i]!]!.has(to[i]!)) {
        reach[from[i]!]!.add(to[i]!);
        dx.push(from[i]!);
        dz.push(to[i]!);
        facts++;
      }
    }
    while (dx.length) {
      const nx: number[] = [];
      const nz: number[] = [];
      for (let i = 0; i < dx.length; i++) {
        const y = dx[i]!;
        const z = dz[i]!;
        for (const x of preds[y]!) {
          const r = reach[x]!;
          if (!r.has(z)) {
            r.add(z);
            nx.push(x);
            nz.push(z);
            facts++;
          }
        }
      }
      dx = nx;
      dz = nz;
    }
    this.reach = reach;
    this.facts = facts;
  }
  count() {
    return this.facts;
  }
  async close() {
    this.reach = [];
  }
}

/**
 * One relation of interned integer rows, as a truth-maintaining engine could hold derived
 * facts without a node object each: the argument ids in one column per position, and per
 * row its handle, derivation depth, belief label and one justification (the rule's number
 * and the antecedents' handles). Identity is an open-addressing hash over the rows;
 * argument indexes are chains through the rows (a head per id, a next per row), so adding
 * a row allocates nothing but when a column doubles.
 */
class Rows {
  n = 0;
  private cap = 1_024;
  cols: Int32Array[];
  handle = new Int32Array(this.cap);
  depth = new Int32Array(this.cap);
  label = new Uint8Array(this.cap);
  rule = new Int32Array(this.cap);
  /** Row r's antecedent handles at [r * ants, (r + 1) * ants). */
  antHandles: Int32Array;
  private slots = new Int32Array(2_048).fill(-1);
  /** Per position: the last row with each id there (-1: none), and each row's previous one. */
  readonly heads: (Int32Array | undefined)[] = [];
  readonly next: (Int32Array | undefined)[] = [];

  constructor(
    readonly arity: number,
    readonly ants: number,
  ) {
    this.cols = Array.from({ length: arity }, () => new Int32Array(this.cap));
    this.antHandles = new Int32Array(this.cap * ants);
  }

  private hash(t: Int32Array): number {
    let x = 0x9e3779b9 | 0;
    for (let i = 0; i < this.arity; i++) x = Math.imul(x ^ t[i]!, 0x85ebca6b) ^ (x >>> 13);
    return x >>> 0;
  }

  /** The row holding tuple t, or -1 - (the free slot where it would go). */
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

  /** Index position p by chains over ids below `ids`, covering the rows already held. */
  indexOn(p: number, ids: number): void {
    if (this.heads[p]) return;
    const head = (this.heads[p] = new Int32Array(ids).fill(-1));
    const next = (this.next[p] = new Int32Array(this.cap));
    for (let r = 0; r < this.n; r++) {
      next[r] = head[this.cols[p]![r]!]!;
      head[this.cols[p]![r]!] = r;
    }
  }

  /** Add tuple t at the free slot `find` returned; its antecedents' handles are `ants`. */
  add(t: Int32Array, free: number, handle: number, depth: number, rule: number, ants: readonly number[]): number {
    if (this.n === this.cap) this.grow();
    const r = this.n++;
    for (let p = 0; p < this.arity; p++) this.cols[p]![r] = t[p]!;
    this.slots[-1 - free] = r;
    this.handle[r] = handle;
    this.depth[r] = depth;
    this.label[r] = 2;
    this.rule[r] = rule;
    for (let i = 0; i < this.ants; i++) this.antHandles[r * this.ants + i] = ants[i] ?? 0;
    for (let p = 0; p < this.arity; p++) {
      const head = this.heads[p];
      if (head) {
        this.next[p]![r] = head[t[p]!]!;
        head[t[p]!] = r;
      }
    }
    if (this.n * 2 > this.slots.length) this.rehash();
    return r;
  }

  private grow(): void {
    const cap = this.cap * 2;
    const wider = <A extends Int32Array | Uint8Array>(a: A, per = 1): A => {
      const b = new (a.constructor as new (n: number) => A)(cap * per);
      b.set(a);
      return b;
    };
    this.cols = this.cols.map((c) => wider(c));
    this.handle = wider(this.handle);
    this.depth = wider(this.depth);
    this.label = wider(this.label);
    this.rule = wider(this.rule);
    this.antHandles = wider(this.antHandles, this.ants);
    for (let p = 0; p < this.arity; p++) if (this.next[p]) this.next[p] = wider(this.next[p]!);
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

/**
 * The closure held as a truth-maintaining engine could hold it without a node per derived
 * fact: interned integer rows (`Rows`) with the bookkeeping such an engine keeps for each
 * derived fact (a handle and its entry in a handle table, depth, label, one justification,
 * the write's list of added handles, a hash identity and an index on every argument position), the two rules'
 * joins written out as the plain closure's are. `load` interns the names and stores the
 * edges as rows (untimed, as the engine's edges are stored untimed); `derive` indexes and
 * joins. Not an engine: what that representation costs per derived fact, against the plain
 * closure, where the index-only system is what the engine's present one costs.
 */
export class BulkRowsClosure implements Closure {
  private ids = new Map<string, number>();
  private names: string[] = [];
  edge = new Rows(2, 0);
  reach = new Rows(2, 2);
  /**
   * handle -> row, a dense array as the engine's handle table is (handles are minted in order,
   * so entry h is pushed when h is); the relation is told apart by the handle's range here
   * (edges first).
   */
  private rowOf: number[] = [0];
  private handles = 1;
  /** The handles the last `derive` added, in order (what a write's feed event lists). */
  added: number[] = [];

  private id(s: string): number {
    let i = this.ids.get(s);
    if (i === undefined) {
      this.ids.set(s, (i = this.ids.size));
      this.names.push(s);
    }
    return i;
  }

  async load(edges: Edge[]) {
    const t = new Int32Array(2);
    for (const [a, b] of edges) {
      t[0] = this.id(`N${a}`);
      t[1] = this.id(`N${b}`);
      const at = this.edge.find(t);
      if (at < 0) this.rowOf.push(this.edge.add(t, at, this.handles++, 0, 0, []));
    }
  }

  async derive() {
    const { edge, reach } = this;
    const ids = this.ids.size;
    // Every argument position indexed, as the engine's index does (a query may bind either):
    // rule 2 joins a new reach(y, z) with edge(?x, y), and a new edge(x, y) with reach(y, ?z).
    for (const rows of [edge, reach]) for (let p = 0; p < rows.arity; p++) rows.indexOn(p, ids);
    const t = new Int32Array(2);
    const added: number[] = [];
    const queue: number[] = [];
    const rowOf = this.rowOf;
    const conclude = (free: number, depth: number, rule: number, ants: number[]) => {
      const h = this.handles++;
      const r = reach.add(t, free, h, depth, rule, ants);
      rowOf.push(r);
      added.push(h);
      queue.push(r);
    };
    // Rule 1: reach(x, y) from edge(x, y).
    for (let e = 0; e < edge.n; e++) {
      t[0] = edge.cols[0]![e]!;
      t[1] = edge.cols[1]![e]!;
      const at = reach.find(t);
      if (at < 0) conclude(at, 1, 1, [edge.handle[e]!, 0]);
    }
    // Rule 2: reach(x, z) from edge(x, y) and reach(y, z), each new reach row joined once.
    const edgeX = edge.cols[0]!;
    const chainHead = edge.heads[1]!;
    const chainNext = edge.next[1]!;
    while (queue.length) {
      const rr = queue.pop()!;
      const y = reach.cols[0]![rr]!;
      const z = reach.cols[1]![rr]!;
      const depth = reach.depth[rr]! + 1;
      for (let e = chainHead[y]!; e >= 0; e = chainNext[e]!) {
        t[0] = edgeX[e]!;
        t[1] = z;
        const at = reach.find(t);
        if (at < 0) conclude(at, depth, 2, [edge.handle[e]!, reach.handle[rr]!]);
      }
    }
    this.added = added;
  }

  count() {
    return this.reach.n;
  }

  /** Every reach row as "x z" names, with its justification's antecedents read back through the handle table. */
  facts(): { pair: string; rule: number; ants: string[] }[] {
    const { edge, reach, names } = this;
    const pairOf = (rows: Rows, r: number) => `${names[rows.cols[0]![r]!]} ${names[rows.cols[1]![r]!]}`;
    const byHandle = (h: number) => (h <= edge.n ? `edge ${pairOf(edge, this.rowOf[h]!)}` : `reach ${pairOf(reach, this.rowOf[h]!)}`);
    const out = [];
    for (let r = 0; r < reach.n; r++) {
      const rule = reach.rule[r]!;
      const ants = [byHandle(reach.antHandles[2 * r]!)];
      if (rule === 2) ants.push(byHandle(reach.antHandles[2 * r + 1]!));
      out.push({ pair: pairOf(reach, r), rule, ants });
    }
    return out;
  }

  /** The names z of reach(x, z), read through reach's index on its first argument (what a new edge would join). */
  reachFrom(x: string): string[] {
    const id = this.ids.get(x);
    const out: string[] = [];
    if (id === undefined) return out;
    const { reach } = this;
    for (let r = reach.heads[0]![id]!; r >= 0; r = reach.next[0]![r]!) out.push(this.names[reach.cols[1]![r]!]!);
    return out;
  }

  async close() {
    this.edge = new Rows(2, 0);
    this.reach = new Rows(2, 2);
    this.rowOf = [0];
    this.added = [];
  }
}

export type SystemName = "engine" | "kb" | "seminaive" | "rows";

export const openClosure = {
  engine: async (): Promise<Incremental> => new EngineClosure(),
  kb: (): Promise<Incremental> => new KbClosure().open(),
  seminaive: async (): Promise<Closure> => new SemiNaiveClosure(),
  rows: async (): Promise<Closure> => new BulkRowsClosure(),
};
