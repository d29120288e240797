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
 *
 * and `DurableFloor`, the least a durable write waits on this machine (what the `kb`
 * system's one-edge insert and retract cannot go under).
 */
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openKb, type Kb } from "../src/kb/index.js";
import { MemIndex } from "../src/kb/memindex.js";
import { Node } from "../src/kb/node.js";
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
 * Our in-memory index alone holding the closure: `load` stores the edges as nodes and finds
 * every reach pair (untimed, semi-naively, in the plain closure's order: by rounds); `derive`
 * makes each pair a node, looks its identity up, and adds it, as a firing that concludes a new
 * fact does, with no rule, join, justification or belief label. What the engine spends beyond
 * this is its reasoning; this itself is the price of the index's representation.
 */
export class IndexOnlyClosure implements Closure {
  index = new MemIndex();
  private names: string[] = [];
  private pairs: number[] = [];
  private handle = 1;
  private facts = 0;
  async load(edges: Edge[]) {
    let n = 0;
    for (const [a, b] of edges) n = Math.max(n, a + 1, b + 1);
    this.names = Array.from({ length: n }, (_, i) => `N${i}`);
    for (const [a, b] of edges) this.index.add(new Node(this.handle++, this.index.intern("CxGraph"), false, ["edge", this.names[a]!, this.names[b]!], undefined, null, 1, null, 0, 0));
    const preds: number[][] = Array.from({ length: n }, () => []);
    const reach: Set<number>[] = Array.from({ length: n }, () => new Set());
    const pairs: number[] = [];
    const found = (x: number, z: number, into: number[]) => {
      if (reach[x]!.has(z)) return;
      reach[x]!.add(z);
      into.push(x, z);
      pairs.push(x, z);
    };
    let delta: number[] = [];
    for (const [a, b] of edges) {
      preds[b]!.push(a);
      found(a, b, delta);
    }
    while (delta.length) {
      const next: number[] = [];
      for (let i = 0; i < delta.length; i += 2) for (const x of preds[delta[i]!]!) found(x, delta[i + 1]!, next);
      delta = next;
    }
    this.pairs = pairs;
  }
  async derive() {
    const ctx = this.index.intern("CxGraph");
    const { index, names, pairs } = this;
    for (let i = 0; i < pairs.length; i += 2) {
      const atom = ["reach", names[pairs[i]!]!, names[pairs[i + 1]!]!];
      if (index.find(ctx, false, atom)) throw new Error(`invariant: reach pair ${i / 2} is new`);
      index.add(new Node(this.handle++, ctx, false, atom, undefined, null, 0, null, 0, 0));
    }
    this.facts = pairs.length / 2;
  }
  count() {
    return this.facts;
  }
  async close() {
    this.pairs = [];
    this.index = new MemIndex(); // what it held is freed before the next system is timed
  }
}

export type SystemName = "engine" | "kb" | "seminaive" | "index";

export const openClosure = {
  engine: async (): Promise<Incremental> => new EngineClosure(),
  kb: (): Promise<Incremental> => new KbClosure().open(),
  seminaive: async (): Promise<Closure> => new SemiNaiveClosure(),
  index: async (): Promise<Closure> => new IndexOnlyClosure(),
};
