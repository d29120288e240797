/**
 * `npm run bench -- kb` (issue 2): the KB core against raw better-sqlite3, in one run.
 *
 * - single durable asserts, each awaited before the next, against raw single-row commits
 *   of the same rows in the same durability mode (target >= 0.6x the raw rate);
 * - edits of 1 000 entries against raw 1 000-row insert transactions (target >= 0.5x);
 * - a pattern query with one bound argument at 10^4 and 10^6 sentexes, the two KBs
 *   queried in interleaved rounds (target p50 <= 20 us at 10^6 and <= 1.5x growth from
 *   10^4), with the index lookup and the node's atom read timed alone beside it;
 * - reopen at 10^6 (target <= 10 us per sentex);
 * - resident memory at 10^6 (target <= 800 bytes per sentex: VmRSS growth after GC, the
 *   JS heap's share in the note).
 *
 * Each rate and its raw baseline are measured the same way: the best of RUNS runs, each on
 * a fresh file, ours and the baseline's interleaved so the machine's drift falls on both,
 * after WARMUP_RUNS untimed runs of each (the first, cold run printed beside).
 */
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openKb, type Kb, type Durability } from "../src/kb/index.js";
import { Suite, nowNs, elapsedMs, percentile, heapUsed, gc, rss, WARMUP_RUNS } from "./lib.js";

const CONTEXTS = join(process.cwd(), "contexts");
const tmp = () => mkdtempSync(join(tmpdir(), "koinii-bench-"));

function rawDb(path: string, durability: Durability): Database.Database {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${durability === "full" ? "FULL" : "NORMAL"}`);
  db.exec("CREATE TABLE sentex (handle INTEGER PRIMARY KEY, context TEXT NOT NULL, sentence TEXT NOT NULL, premise INTEGER NOT NULL, creator TEXT, created_at INTEGER NOT NULL, seq INTEGER NOT NULL)");
  return db;
}

const RUNS = 3;

interface Rates {
  raw: number;
  ours: number;
  /** Each side's first (cold) run, reported beside, not compared. */
  firstRaw: number;
  firstOurs: number;
}

/**
 * Best (highest) of `runs` rates of `raw` and of `ours` after `warmup` untimed runs of each,
 * the two sides run alternately, each run on a fresh directory.
 */
async function bestRates(raw: (dir: string) => Promise<number>, ours: (dir: string) => Promise<number>, runs = RUNS, warmup = WARMUP_RUNS): Promise<Rates> {
  const best = { raw: 0, ours: 0 };
  const first = { raw: NaN, ours: NaN };
  for (let i = 0; i < warmup + runs; i++) {
    for (const side of ["raw", "ours"] as const) {
      const dir = tmp();
      try {
        const rate = await (side === "raw" ? raw : ours)(dir);
        if (i === 0) first[side] = rate;
        if (i >= warmup) best[side] = Math.max(best[side], rate);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  return { ...best, firstRaw: first.raw, firstOurs: first.ours };
}

const BEST = `best of ${RUNS}, after ${WARMUP_RUNS} untimed runs of each side`;

/** Each side's cold first run, printed beside the figure (no target): what a fresh process pays. */
function firstRuns(suite: Suite, name: string, r: Rates, unit: string): void {
  suite.add(`${name}_first_run`, { value: r.firstOurs, unit, note: `the first untimed run; raw's was ${Math.round(r.firstRaw)}/s, ratio ${(r.firstOurs / r.firstRaw).toFixed(2)}` });
}

async function singleAsserts(suite: Suite, durability: Durability, n: number): Promise<void> {
  const r = await bestRates(
    async (dir) => {
      const raw = rawDb(join(dir, "raw.db"), durability);
      const ins = raw.prepare("INSERT INTO sentex VALUES (?, ?, ?, ?, ?, ?, ?)");
      const t = nowNs();
      for (let i = 0; i < n; i++) ins.run(i + 1, "CxBench", `(rel E${i} V${i})`, 1, "AgentBench", Date.now(), i + 1);
      const rate = n / (elapsedMs(t) / 1000);
      raw.close();
      return rate;
    },
    async (dir) => {
      const kb = await openKb({ path: join(dir, "kb.db"), durability, contextsDir: CONTEXTS });
      const t = nowNs();
      for (let i = 0; i < n; i++) await kb.assert(`(rel E${i} V${i})`, "CxBench", { creator: "AgentBench" });
      const rate = n / (elapsedMs(t) / 1000);
      await kb.close();
      return rate;
    },
  );
  suite.add(`raw_single_row_commits_${durability}`, { value: r.raw, unit: "rows/s", note: BEST });
  suite.compare(`single_asserts_${durability}`, r.ours, "asserts/s", `raw_single_row_commits_${durability}`, { higherIsBetter: true, minRatio: 0.6, note: `each acknowledged before the next; ${BEST}` });
  firstRuns(suite, `single_asserts_${durability}`, r, "asserts/s");
}

async function batchEdits(suite: Suite, durability: Durability, batches: number, size: number): Promise<void> {
  const r = await bestRates(
    async (dir) => {
      const raw = rawDb(join(dir, "raw.db"), durability);
      const ins = raw.prepare("INSERT INTO sentex VALUES (?, ?, ?, ?, ?, ?, ?)");
      const insertMany = raw.transaction((from: number) => {
        for (let i = from; i < from + size; i++) ins.run(i + 1, "CxBench", `(rel E${i} V${i})`, 1, "AgentBench", Date.now(), 1);
      });
      const t = nowNs();
      for (let b = 0; b < batches; b++) insertMany(b * size);
      const rate = (batches * size) / (elapsedMs(t) / 1000);
      raw.close();
      return rate;
    },
    async (dir) => {
      const kb = await openKb({ path: join(dir, "kb.db"), durability, contextsDir: CONTEXTS });
      const t = nowNs();
      for (let b = 0; b < batches; b++) {
        const add = [];
        for (let i = b * size; i < (b + 1) * size; i++) add.push({ sentence: `(rel E${i} V${i})`, context: "CxBench" });
        await kb.edit({ add });
      }
      const rate = (batches * size) / (elapsedMs(t) / 1000);
      await kb.close();
      return rate;
    },
  );
  suite.add(`raw_batched_inserts_${size}_${durability}`, { value: r.raw, unit: "rows/s", note: BEST });
  suite.compare(`edits_of_${size}_${durability}`, r.ours, "sentexes/s", `raw_batched_inserts_${size}_${durability}`, { higherIsBetter: true, minRatio: 0.5, note: BEST });
  firstRuns(suite, `edits_of_${size}_${durability}`, r, "sentexes/s");
}

async function load(kb: Kb, from: number, to: number): Promise<void> {
  const BATCH = 10_000;
  for (let b = from; b < to; b += BATCH) {
    const add = [];
    for (let i = b; i < Math.min(to, b + BATCH); i++) add.push({ sentence: `(rel E${i} V${i})`, context: "CxBench" });
    await kb.edit({ add });
  }
}

/** The next entity a query asks for (a fixed LCG, so every size sees the same kind of sequence). */
const nextSeed = (x: number) => (x * 1103515245 + 12345) % 2147483648;

/**
 * How one bound query's microseconds split, each step timed alone: the index lookup (the
 * argument's bucket and its node), then that and the node's atom and value read (what the
 * match and the answer touch), then the whole `kb.query` (parse, cone, match, answer).
 */
const QUERY_STEPS = {
  lookup: (kb: Kb, e: number) => {
    let h = 0;
    for (const n of kb.engine.index.candidates("rel", ["rel", `E${e}`, "?v"])) h += n.h;
    return h;
  },
  lookup_and_atom: (kb: Kb, e: number) => {
    let len = 0;
    for (const n of kb.engine.index.candidates("rel", ["rel", `E${e}`, "?v"])) len += (n.atom[2] as string).length;
    return len;
  },
  query: (kb: Kb, e: number) => {
    const r = kb.query(`(rel E${e} ?v)`, "CxBench");
    if (r.solutions.length !== 1) throw new Error(`query for E${e} found ${r.solutions.length} solutions`);
    return 1;
  },
} as const;

/**
 * p50 and p99 (us) of `step` on each target (a KB, or a floor structure of the same size),
 * measured in ROUNDS interleaved rounds of 2 000 (after 2 untimed), so the machine's drift
 * falls on every size alike.
 */
function interleaved<T>(targets: { on: T; size: number }[], step: (on: T, e: number) => number): { p50: number; p99: number }[] {
  const ROUNDS = 10;
  const times = targets.map((): number[] => []);
  const seeds = targets.map(() => 12345);
  let sink = 0;
  for (let r = 0; r < ROUNDS + 2; r++) {
    targets.forEach(({ on, size }, k) => {
      let x = seeds[k]!;
      for (let i = 0; i < 2_000; i++) {
        x = nextSeed(x);
        const t = nowNs();
        sink += step(on, x % size);
        if (r >= 2) times[k]!.push(Number(nowNs() - t) / 1000);
      }
      seeds[k] = x;
    });
  }
  if (!Number.isFinite(sink)) throw new Error("a step returned a non-number");
  return times.map((t) => (t.sort((a, b) => a - b), { p50: percentile(t, 50), p99: percentile(t, 99) }));
}

/**
 * The memory floor of the query's growth: what reading one random sentex's answer among
 * `size` costs when nothing but memory stands in the way. Each sentex is a bare record
 * (its handle and its atom, built in one go so that record, atom and strings lie together,
 * which no real index can promise), reached by its position in a plain array, no hashing,
 * no key comparison: fewer dependent loads than any index needs. `map` is the same records
 * behind a bare `Map` from the bound argument, the least a hashed index does.
 */
interface Floor {
  byPos: { h: number; atom: string[] }[];
  byArg: Map<string, { h: number; atom: string[] }>;
}

function floorOf(size: number): Floor {
  const byPos: Floor["byPos"] = new Array(size);
  const byArg: Floor["byArg"] = new Map();
  for (let i = 0; i < size; i++) {
    const rec = { h: i + 1, atom: ["rel", `E${i}`, `V${i}`] };
    byPos[i] = rec;
    byArg.set(rec.atom[1]!, rec);
  }
  return { byPos, byArg };
}

const FLOOR_STEPS = {
  /** The answer of the record at a position: array slot, record, atom, answer string. */
  direct_answer: (f: Floor, e: number) => f.byPos[e]!.atom[2]!.length,
  /** The same through a bare Map keyed by the bound argument's text. */
  map_answer: (f: Floor, e: number) => f.byArg.get(`E${e}`)!.atom[2]!.length,
} as const;

async function scale(suite: Suite): Promise<void> {
  const dir = tmp();
  try {
    // The 10^4 KB is its own file, loaded first; the 10^6 KB's memory is measured alone.
    const small = await openKb({ path: join(dir, "small.db"), durability: "normal", contextsDir: CONTEXTS });
    await load(small, 0, 10_000);
    const path = join(dir, "kb.db");
    const kb = await openKb({ path, durability: "normal", contextsDir: CONTEXTS });
    const heap0 = heapUsed();
    const rss0 = rss();
    let loaded = 0;
    for (const size of [100_000, 1_000_000]) {
      const t = nowNs();
      await load(kb, loaded, size);
      const loadMs = elapsedMs(t);
      console.log(`  loaded ${size} sentexes (${((size - loaded) / (loadMs / 1000)).toFixed(0)}/s)`);
      loaded = size;
    }
    const perSentex = (rss() - rss0) / loaded;
    const heapPer = (heapUsed() - heap0) / loaded;
    suite.add("memory_per_sentex_1000000", { value: Math.round(perSentex), unit: "bytes", target: "value <= 800", met: perSentex <= 800, note: `resident memory (VmRSS) growth after GC; JS heap ${Math.round(heapPer)} bytes per sentex` });

    const sizes = [
      { on: small, size: 10_000 },
      { on: kb, size: 1_000_000 },
    ];
    const how = "p50 of 20 000, the two sizes measured in interleaved rounds";
    let queryAt4 = NaN;
    for (const [step, fn] of Object.entries(QUERY_STEPS)) {
      const [at4, at6] = interleaved(sizes, fn);
      const name = step === "query" ? "query_one_bound" : `query_step_${step}`;
      suite.add(`${name}_p50_10000`, { value: at4!.p50, unit: "us", note: how });
      suite.compare(`${name}_p50_1000000`, at6!.p50, "us", `${name}_p50_10000`, {
        higherIsBetter: false,
        ...(step === "query" ? { minRatio: 1 / 1.5 } : {}),
        note: `${how}; ratio = p50 at 10^4 / p50 here${step === "query" ? "; >= 0.67 means <= 1.5x growth" : `; +${(at6!.p50 - at4!.p50).toFixed(2)} us`}`,
      });
      if (step === "query") {
        queryAt4 = at4!.p50;
        suite.add("query_one_bound_p99_1000000", { value: at6!.p99, unit: "us" });
        suite.add("query_one_bound_p50_1000000_abs", { value: at6!.p50, unit: "us", target: "value <= 20", met: at6!.p50 <= 20 });
      }
    }
    // The floor, in the same process and rounds: growth no index kept in the JS heap avoids.
    // With the query's own time at 10^4 as q4, a query that grew by the floor's growth and
    // nothing more would grow (q4 + floor) / q4: the best ratio reachable on this machine.
    {
      const floors = [
        { on: floorOf(10_000), size: 10_000 },
        { on: floorOf(1_000_000), size: 1_000_000 },
      ];
      for (const [step, fn] of Object.entries(FLOOR_STEPS)) {
        const [at4, at6] = interleaved(floors, fn);
        const growth = at6!.p50 - at4!.p50;
        suite.add(`query_floor_${step}_p50_10000`, { value: at4!.p50, unit: "us", note: how });
        suite.add(`query_floor_${step}_p50_1000000`, { value: at6!.p50, unit: "us", note: `${how}; +${growth.toFixed(2)} us` });
        suite.add(`query_growth_ceiling_${step}`, {
          value: queryAt4 / (queryAt4 + growth),
          unit: "ratio",
          note: `the query's ratio had it grown by the floor's +${growth.toFixed(2)} us alone (${queryAt4.toFixed(2)} us at 10^4); a ceiling under 0.67 puts the 1.5x target beyond this machine for any in-heap index`,
        });
      }
    }
    await small.close();

    const stored = kb.size;
    await kb.close();
    gc();
    const t = nowNs();
    const reopened = await openKb({ path, durability: "normal" });
    const ms = elapsedMs(t);
    if (reopened.size !== stored) throw new Error(`reopen found ${reopened.size} sentexes, expected ${stored}`);
    const us = (ms * 1000) / stored;
    suite.add("reopen_per_sentex_1000000", { value: us, unit: "us", target: "value <= 10", met: us <= 10, note: `${ms.toFixed(0)} ms for ${stored} sentexes` });
    await reopened.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `KOINII_BENCH_PARTS=asserts,edits,scale` (the default: all) picks the parts to run. */
const parts = new Set((process.env.KOINII_BENCH_PARTS ?? "asserts,edits,scale").split(","));

export async function run(): Promise<void> {
  const suite = new Suite("kb");
  if (parts.has("asserts")) {
    await singleAsserts(suite, "full", 2_000);
    await singleAsserts(suite, "normal", 5_000);
  }
  if (parts.has("edits")) {
    await batchEdits(suite, "full", 20, 1_000);
    await batchEdits(suite, "normal", 20, 1_000);
  }
  if (parts.has("scale")) await scale(suite);
  suite.write();
}
