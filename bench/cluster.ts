/**
 * `npm run bench -- cluster` (issue 15), in one run on this machine, each figure against a
 * baseline measured in the same run:
 *
 * - throughput: writes/s and round trip p50/p99 at 1 and 8 HTTP clients (each POST
 *   /v1/assert in a closed loop for LOAD_MS after WARMUP_MS) on a daemon with
 *   `--store postgres://...` (a fresh database), on the same daemon on its SQLite store
 *   (serve's default durability), and the baseline: raw `pg` clients doing one INSERT of a
 *   copy of the daemon's own event row per transaction (BEGIN; INSERT; COMMIT), driven by
 *   the same loop (`closedLoop`) from 1 and 8 connections; and the daemon's own ceiling:
 *   the same closed loop on the same daemon against POST /v1/assert with a body of the
 *   same size that the route refuses (400 bad-request) before the KB or the store runs (a
 *   write's HTTP, JSON and validation cost, no store work): no write can go faster;
 * - follower lag: two daemons on one database, the follower's SSE stream read in this
 *   process; for each acknowledged write, the time this process read it from the follower
 *   minus the time this process got the writer's acknowledgement (one clock); a write the
 *   follower never delivers within DELIVERY_BOUND_MS fails the run; the same again with the
 *   writes paced at PACED_PER_S (each on its own schedule), and in both the follower's CPU
 *   (/proc user + system) over the timed window per write;
 * - catch-up: a database of KOINII_BENCH_CLUSTER_N sentexes loaded through /v1/edit
 *   (EDIT_ENTRIES per edit), then a new follower timed from spawn to /health
 *   `appliedSeq` == the head, its resident memory against the writer's; the floor is a raw
 *   `pg` read of the same sentex rows;
 * - failover: the writer SIGKILLed, a client retrying every RETRY_MS against the other
 *   daemon until a write is acknowledged, with the default lease; best and median of
 *   FAILOVER_RUNS, each on a fresh database.
 *
 * `KOINII_BENCH_CLUSTER_PARTS=throughput,lag,catchup,failover` runs only the named parts
 * (all by default).
 */
import { Pool, request } from "undici";
import pg from "pg";
import { Suite, closedLoop, nowNs, elapsedMs, percentile, type LoopResult } from "./lib.js";
import { startDaemon, startPostgres, type Proc } from "./procs.js";
import { delivered, sleep, waitFor, type Delivered } from "./delivery.js";
import { cpuSeconds, vmRssBytes } from "./load.js";
import { markedSentence, markersOf, readSse } from "./sse.js";
import { DEFAULT_PG_LIMITS } from "../src/kb/pgstore.js";

const CLIENTS = [1, 8] as const;
/** Closed-loop time per measured load, after WARMUP_MS of the same load untimed. */
const LOAD_MS = 5_000;
const WARMUP_MS = 1_000;
/** Longest a write acknowledged by the writer may take to reach the follower's stream before the run fails. */
const DELIVERY_BOUND_MS = 10_000;
/**
 * Sentexes in the catch-up database (KOINII_BENCH_CLUSTER_N): by default 10^6, the size the
 * issue names. A smaller N gets its 10^6 figures extrapolated linearly, labelled as such.
 */
const CATCHUP_N = Number(process.env.KOINII_BENCH_CLUSTER_N ?? 1_000_000);
const ISSUE_N = 1_000_000;
/** Entries per loading edit (KOINII_BENCH_CLUSTER_EDIT): the daemon's default maximum, each edit one commit statement. */
const EDIT_ENTRIES = Number(process.env.KOINII_BENCH_CLUSTER_EDIT ?? 10_000);
/** Longest a new follower may take to catch up before the run fails. */
const CATCHUP_BOUND_MS = 15 * 60_000;
const FAILOVER_RUNS = 3;
/** The failover client's pause between tries. */
const RETRY_MS = 20;
/** Longest a failover may take before the run fails. */
const FAILOVER_BOUND_MS = 60_000;

const json = { "content-type": "application/json" };
/** Markers are unique across the run: every write asserts a new sentence. */
let nextMarker = 0;

interface Health {
  seq: number;
  role: string;
  epoch: number;
  appliedSeq: number;
  lagMs: number;
}

export async function health(url: string): Promise<Health> {
  const r = await request(`${url}/health`);
  return (await r.body.json()) as Health;
}

/** Polls /health every 20 ms until `ok` holds; fails after `ms`. */
export async function healthUntil(url: string, ok: (h: Health) => boolean, ms: number, what: string): Promise<Health> {
  const deadline = Date.now() + ms;
  for (;;) {
    const h = await health(url).catch(() => undefined);
    if (h && ok(h)) return h;
    if (Date.now() > deadline) throw new Error(`${url} did not become ${what} within ${ms} ms (last /health: ${JSON.stringify(h)})`);
    await sleep(20);
  }
}

export const pgDaemon = (url: string, node?: string[]): Promise<Proc> => startDaemon({ extra: ["--store", url, "--quiet"], ...(node ? { node } : {}) });

/** A daemon on the database at `url`, added to `procs` (the caller stops them), once /health says it is the `role`. */
export async function pgNode(url: string, role: "writer" | "follower", procs: Proc[], node?: string[]): Promise<Proc> {
  const p = await pgDaemon(url, node);
  procs.push(p);
  await healthUntil(p.url, (h) => h.role === role, 30_000, `the ${role}`);
  return p;
}

/** A POST /v1/assert of an assert's size that the route refuses (400) before the KB runs: `sentence` is not a string. */
async function assertRefused(pool: Pool, marker: number): Promise<void> {
  const r = await pool.request({ path: "/v1/assert", method: "POST", headers: json, body: JSON.stringify({ sentence: [markedSentence(marker)], context: "CxBench" }) });
  const text = await r.body.text();
  if (r.statusCode !== 400) throw new Error(`the refused assert answered ${r.statusCode}: ${text}`);
}

/** The daemon's ceiling: `clients` HTTP clients in the same closed loop as `daemonLoad`, every request refused before the store. */
async function ceilingLoad(url: string, clients: number): Promise<LoopResult> {
  const pool = new Pool(url, { connections: clients, pipelining: 1 });
  try {
    await closedLoop(clients, WARMUP_MS, () => assertRefused(pool, nextMarker++));
    return await closedLoop(clients, LOAD_MS, () => assertRefused(pool, nextMarker++));
  } finally {
    await pool.close();
  }
}

async function assertMarked(pool: Pool, marker: number): Promise<void> {
  const r = await pool.request({ path: "/v1/assert", method: "POST", headers: json, body: JSON.stringify({ sentence: markedSentence(marker), context: "CxBench" }) });
  const text = await r.body.text();
  if (r.statusCode !== 200) throw new Error(`assert answered ${r.statusCode}: ${text}`);
}

/** `clients` HTTP clients asserting in a closed loop; `onAck` gets each timed write's marker and acknowledgement time (performance.now()). */
export async function daemonLoad(url: string, clients: number, onAck?: (marker: number, at: number) => void): Promise<LoopResult> {
  const pool = new Pool(url, { connections: clients, pipelining: 1 });
  try {
    await closedLoop(clients, WARMUP_MS, () => assertMarked(pool, nextMarker++));
    return await closedLoop(clients, LOAD_MS, async () => {
      const m = nextMarker++;
      await assertMarked(pool, m);
      onAck?.(m, performance.now());
    });
  } finally {
    await pool.close();
  }
}

/** `clients` raw pg connections, each inserting a copy of `row` (a new seq) in a transaction of its own, in one round trip. */
async function rawLoad(cfg: pg.ClientConfig, clients: number, row: { body: string; write: string }): Promise<LoopResult> {
  const conns = await Promise.all(
    Array.from({ length: clients }, async () => {
      const c = new pg.Client(cfg);
      await c.connect();
      return c;
    }),
  );
  try {
    const lit = `${conns[0]!.escapeLiteral(row.body)}, ${conns[0]!.escapeLiteral(row.write)}`;
    let seq = Number((await conns[0]!.query<{ n: string }>("select coalesce(max(seq), 0) as n from raw_event")).rows[0]!.n);
    const op = async (c: number) => {
      await conns[c]!.query(`BEGIN; INSERT INTO raw_event (seq, body, write) VALUES (${++seq}, ${lit}); COMMIT`);
    };
    await closedLoop(clients, WARMUP_MS, op);
    return await closedLoop(clients, LOAD_MS, op);
  } finally {
    await Promise.all(conns.map((c) => c.end()));
  }
}

async function throughput(suite: Suite): Promise<void> {
  const storeDb = await startPostgres("store");
  const rawDb = await startPostgres("raw");
  const pgRuns = new Map<number, LoopResult>();
  const rawRuns = new Map<number, LoopResult>();
  const sqliteRuns = new Map<number, LoopResult>();
  const ceilingRuns = new Map<number, LoopResult>();
  let rowNote = "";
  try {
    const daemon = await pgDaemon(storeDb.url);
    try {
      await healthUntil(daemon.url, (h) => h.role === "writer", 30_000, "the writer");
      for (const c of CLIENTS) pgRuns.set(c, await daemonLoad(daemon.url, c));
      for (const c of CLIENTS) ceilingRuns.set(c, await ceilingLoad(daemon.url, c));
    } finally {
      await daemon.stop();
    }
    // The baseline's row: a copy of one of the daemon's own event rows (body and write input).
    const q = new pg.Client(storeDb.config);
    await q.connect();
    const row = (await q.query<{ body: string; write: string }>("select body, write from event order by seq desc limit 1")).rows[0];
    await q.end();
    if (!row) throw new Error("the PostgreSQL daemon stored no event");
    rowNote = `row of ${Buffer.byteLength(row.body) + Buffer.byteLength(row.write)} bytes (a copy of the daemon's last event row)`;
    const r = new pg.Client(rawDb.config);
    await r.connect();
    await r.query("CREATE TABLE raw_event (seq bigint PRIMARY KEY, body text NOT NULL, write text)");
    await r.end();
    for (const c of CLIENTS) rawRuns.set(c, await rawLoad(rawDb.config, c, row));
  } finally {
    await storeDb.stop();
    await rawDb.stop();
  }
  const sqlite = await startDaemon({});
  try {
    for (const c of CLIENTS) sqliteRuns.set(c, await daemonLoad(sqlite.url, c));
  } finally {
    await sqlite.stop();
  }
  for (const c of CLIENTS) {
    const raw = rawRuns.get(c)!;
    const sq = sqliteRuns.get(c)!;
    const p = pgRuns.get(c)!;
    suite.add(`raw_pg_insert_c${c}_rps`, { value: raw.rps, unit: "tx/s", note: `BEGIN; INSERT; COMMIT in one round trip, ${rowNote}; ${raw.ops} in ${raw.seconds.toFixed(1)} s` });
    suite.add(`raw_pg_insert_c${c}_p50`, { value: raw.p50, unit: "ms" });
    suite.add(`raw_pg_insert_c${c}_p99`, { value: raw.p99, unit: "ms" });
    suite.add(`sqlite_store_assert_c${c}_rps`, { value: sq.rps, unit: "req/s", note: `durability full (serve's default); ${sq.ops} in ${sq.seconds.toFixed(1)} s` });
    suite.add(`sqlite_store_assert_c${c}_p50`, { value: sq.p50, unit: "ms" });
    suite.add(`sqlite_store_assert_c${c}_p99`, { value: sq.p99, unit: "ms" });
    suite.compare(`pg_store_assert_c${c}_rps`, p.rps, "req/s", `raw_pg_insert_c${c}_rps`, {
      higherIsBetter: true,
      ...(c === 8 ? { minRatio: 3 } : {}),
      note: `group commit vs one insert per transaction; ${p.ops} in ${p.seconds.toFixed(1)} s`,
    });
    const ceil = ceilingRuns.get(c)!;
    suite.compare(`daemon_ceiling_c${c}_rps`, ceil.rps, "req/s", `raw_pg_insert_c${c}_rps`, {
      higherIsBetter: true,
      note: `the same daemon and loop, POST /v1/assert refused (400) before the store; p50 ${ceil.p50.toFixed(2)} ms; ${ceil.ops} in ${ceil.seconds.toFixed(1)} s`,
    });
    suite.compare(`pg_store_assert_c${c}_vs_ceiling`, p.rps, "req/s", `daemon_ceiling_c${c}_rps`, { higherIsBetter: true });
    suite.compare(`pg_store_assert_c${c}_vs_sqlite`, p.rps, "req/s", `sqlite_store_assert_c${c}_rps`, { higherIsBetter: true });
    suite.compare(`pg_store_assert_c${c}_p50`, p.p50, "ms", `raw_pg_insert_c${c}_p50`, { higherIsBetter: false });
    suite.compare(`pg_store_assert_c${c}_p99`, p.p99, "ms", `raw_pg_insert_c${c}_p99`, { higherIsBetter: false });
  }
}

/** What one follower-lag run measured: the deliveries, the writer's rate, the follower's CPU per replayed write. */
export interface LagRun {
  d: Delivered;
  rps: number;
  writes: number;
  /** The follower's CPU (user + system) over the timed window, per acknowledged write, in ms. */
  followerCpuMsPerWrite: number;
  /** The follower's /health lagMs after the run. */
  lagMsAfter: number;
}

/**
 * Writes at a fixed rate: one every 1000/perSecond ms on its own schedule (not waiting for
 * the previous answer), up to CLIENTS connections; WARMUP_MS untimed, then LOAD_MS timed.
 */
async function pacedLoad(url: string, perSecond: number, onAck: (marker: number, at: number) => void): Promise<LoopResult> {
  const pool = new Pool(url, { connections: 8, pipelining: 1 });
  const window = async (ms: number, timed: boolean): Promise<LoopResult> => {
    const n = Math.round((perSecond * ms) / 1000);
    const t0 = performance.now();
    const lat: number[] = [];
    const pending: Promise<void>[] = [];
    for (let i = 0; i < n; i++) {
      const wait = t0 + (i * 1000) / perSecond - performance.now();
      if (wait > 0) await sleep(wait);
      const m = nextMarker++;
      const s = performance.now();
      pending.push(
        assertMarked(pool, m).then(() => {
          const at = performance.now();
          lat.push(at - s);
          if (timed) onAck(m, at);
        }),
      );
    }
    await Promise.all(pending);
    const seconds = (performance.now() - t0) / 1000;
    lat.sort((a, b) => a - b);
    return { ops: lat.length, rps: lat.length / seconds, p50: percentile(lat, 50), p99: percentile(lat, 99), seconds };
  };
  try {
    await window(WARMUP_MS, false);
    return await window(LOAD_MS, true);
  } finally {
    await pool.close();
  }
}

/**
 * A writer and a follower on a fresh database; the follower's SSE stream read here while
 * the writer takes 8 closed-loop clients (or `perSecond` paced writes). `node` adds node
 * flags to the writer's and the follower's process (e.g. --cpu-prof).
 */
export async function lagRun(opts: { perSecond?: number; writerNode?: string[]; followerNode?: string[] } = {}): Promise<LagRun> {
  const db = await startPostgres(`lag${opts.perSecond ?? ""}`);
  const procs: Proc[] = [];
  let stream: Awaited<ReturnType<typeof request>> | undefined;
  try {
    const writer = await pgNode(db.url, "writer", procs, opts.writerNode);
    const follower = await pgNode(db.url, "follower", procs, opts.followerNode);
    const w = await request(`${follower.url}/v1/watch`, { method: "POST", headers: json, body: JSON.stringify({ goal: "(lat ?m)", context: "CxBench" }) });
    const watch = (await w.body.json()) as { token: string; cursor: number };
    if (w.statusCode !== 200) throw new Error(`watch on the follower answered ${w.statusCode}: ${JSON.stringify(watch)}`);
    stream = await request(`${follower.url}/v1/stream?token=${watch.token}&cursor=${watch.cursor}`);
    if (stream.statusCode !== 200) throw new Error(`the follower's stream answered ${stream.statusCode}`);
    const lines: string[] = [];
    const seen = new Set<number>();
    let lagged = 0;
    void readSse(
      stream.body,
      (ev) => {
        const t = performance.now();
        for (const m of markersOf(ev)) {
          lines.push(`${m} ${t}`);
          seen.add(m);
        }
      },
      (n) => (lagged += n),
    ).catch(() => {}); // ends when the stream is destroyed below
    const ackAt = new Map<number, number>();
    let cpu0 = 0;
    const onAck = (m: number, at: number) => {
      if (!ackAt.size) cpu0 = cpuSeconds(follower.child.pid!);
      ackAt.set(m, at);
    };
    const load = opts.perSecond === undefined ? await daemonLoad(writer.url, 8, onAck) : await pacedLoad(writer.url, opts.perSecond, onAck);
    await waitFor(() => [...ackAt.keys()].every((m) => seen.has(m)), DELIVERY_BOUND_MS);
    const cpuMs = (cpuSeconds(follower.child.pid!) - cpu0) * 1000;
    const d = delivered("follower lag", lines, ackAt, ackAt.size, lagged);
    const h = await health(follower.url);
    return { d, rps: load.rps, writes: ackAt.size, followerCpuMsPerWrite: cpuMs / ackAt.size, lagMsAfter: h.lagMs };
  } finally {
    stream?.body.destroy();
    for (const p of procs.reverse()) await p.stop();
    await db.stop();
  }
}

/** Follower lag at a fixed lower rate: the same follower with CPU to spare between writes. */
const PACED_PER_S = 200;

async function followerLag(suite: Suite): Promise<void> {
  const r = await lagRun();
  suite.add("follower_lag_p50", { value: r.d.p50, unit: "ms", note: `${r.d.deliveries} acknowledged writes, every one delivered by the follower's SSE stream; delivery read minus acknowledgement read, both in this process` });
  suite.add("follower_lag_p99", { value: r.d.p99, unit: "ms", target: "value <= 50", met: r.d.p99 <= 50 });
  suite.add("follower_cpu_ms_per_write", { value: r.followerCpuMsPerWrite, unit: "ms", note: `the follower's CPU (user + system, /proc) over the timed window per replayed write, at ${r.rps.toFixed(0)} writes/s` });
  const base = suite.figures["pg_store_assert_c8_rps"] ? { base: "pg_store_assert_c8_rps" } : undefined;
  const note = `the writer's rate while a follower replays and streams; follower /health lagMs ${r.lagMsAfter} after the run`;
  if (base) suite.compare("pg_store_assert_c8_rps_with_follower", r.rps, "req/s", base.base, { higherIsBetter: true, note });
  else suite.add("pg_store_assert_c8_rps_with_follower", { value: r.rps, unit: "req/s", note });
  const p = await lagRun({ perSecond: PACED_PER_S });
  suite.add(`follower_lag_at_${PACED_PER_S}_per_s_p50`, { value: p.d.p50, unit: "ms", note: `${p.d.deliveries} writes paced at ${PACED_PER_S}/s (${p.rps.toFixed(0)}/s measured), every one delivered` });
  suite.add(`follower_lag_at_${PACED_PER_S}_per_s_p99`, { value: p.d.p99, unit: "ms" });
  suite.add(`follower_cpu_ms_per_write_at_${PACED_PER_S}_per_s`, { value: p.followerCpuMsPerWrite, unit: "ms" });
}

async function catchUp(suite: Suite): Promise<void> {
  if (!(Number.isInteger(CATCHUP_N) && CATCHUP_N > 0)) throw new Error(`KOINII_BENCH_CLUSTER_N must be a positive whole number of sentexes, got ${process.env.KOINII_BENCH_CLUSTER_N}`);
  const db = await startPostgres("catchup");
  const procs: Proc[] = [];
  try {
    const writer = await pgNode(db.url, "writer", procs);
    const pool = new Pool(writer.url, { connections: 1 });
    const t = nowNs();
    for (let b = 0; b < CATCHUP_N; b += EDIT_ENTRIES) {
      const add = [];
      for (let i = b; i < Math.min(CATCHUP_N, b + EDIT_ENTRIES); i++) add.push({ sentence: `(rel E${i} V${i})`, context: "CxBench" });
      const r = await pool.request({ path: "/v1/edit", method: "POST", headers: json, body: JSON.stringify({ add }) });
      const text = await r.body.text();
      if (r.statusCode !== 200) throw new Error(`edit answered ${r.statusCode}: ${text.slice(0, 300)}`);
      const done = Math.min(CATCHUP_N, b + EDIT_ENTRIES);
      if (done % 50_000 === 0 || done === CATCHUP_N) console.log(`  loaded ${done} sentexes, ${(done / (elapsedMs(t) / 1000)).toFixed(0)}/s`);
    }
    const loadS = elapsedMs(t) / 1000;
    await pool.close();
    suite.add("pg_store_load_sentexes_per_s", { value: CATCHUP_N / loadS, unit: "sentexes/s", note: `${CATCHUP_N} sentexes by /v1/edit of ${EDIT_ENTRIES} in ${loadS.toFixed(0)} s` });
    if (CATCHUP_N < ISSUE_N) suite.add("pg_store_load_1e6_s_extrapolated", { value: (loadS * ISSUE_N) / CATCHUP_N, unit: "s", note: `EXTRAPOLATED linearly from ${CATCHUP_N} sentexes, not measured` });
    const head = (await health(writer.url)).seq;
    // The floor: one raw pg client reading the same sentex rows.
    const q = new pg.Client(db.config);
    await q.connect();
    const tr = nowNs();
    const rows = (await q.query("select handle, context, sentence, premise, creator, created_at, seq from sentex")).rowCount;
    const rawMs = elapsedMs(tr);
    await q.end();
    suite.add("raw_pg_read_sentex_us_per_sentex", { value: (rawMs * 1000) / CATCHUP_N, unit: "us", note: `one SELECT of the ${rows} sentex rows by a raw pg client, ${rawMs.toFixed(0)} ms` });
    const t0 = nowNs();
    const follower = await pgDaemon(db.url);
    procs.push(follower);
    const h = await healthUntil(follower.url, (x) => x.appliedSeq >= head, CATCHUP_BOUND_MS, `caught up to seq ${head}`);
    const ms = elapsedMs(t0);
    if (h.role !== "follower") throw new Error(`the new daemon is ${h.role}, not a follower`);
    suite.add("follower_catchup_ms", { value: ms, unit: "ms", note: `${CATCHUP_N} sentexes, head seq ${head}: spawn to /health appliedSeq == head` });
    if (CATCHUP_N < ISSUE_N) suite.add("follower_catchup_1e6_ms_extrapolated", { value: (ms * ISSUE_N) / CATCHUP_N, unit: "ms", note: `EXTRAPOLATED linearly from ${CATCHUP_N} sentexes, not measured` });
    suite.compare("follower_catchup_us_per_sentex", (ms * 1000) / CATCHUP_N, "us", "raw_pg_read_sentex_us_per_sentex", { higherIsBetter: false });
    const writerRss = vmRssBytes(writer.child.pid!);
    suite.add("writer_rss_per_sentex", { value: writerRss / CATCHUP_N, unit: "bytes", note: `VmRSS of the writer that loaded them: ${(writerRss / 2 ** 20).toFixed(0)} MiB` });
    const rss = vmRssBytes(follower.child.pid!);
    suite.compare("follower_rss_per_sentex", rss / CATCHUP_N, "bytes", "writer_rss_per_sentex", { higherIsBetter: false, note: `VmRSS of the follower once caught up: ${(rss / 2 ** 20).toFixed(0)} MiB` });
  } finally {
    for (const p of procs.reverse()) await p.stop();
    await db.stop();
  }
}

/** One failover on a fresh database: SIGKILL the writer, retry a write on the other daemon every RETRY_MS; ms from the kill to its acknowledgement. */
async function failoverOnce(run: number): Promise<number> {
  const db = await startPostgres(`failover${run}`);
  const procs: Proc[] = [];
  try {
    const a = await pgNode(db.url, "writer", procs);
    const b = await pgNode(db.url, "follower", procs);
    const pool = new Pool(a.url, { connections: 1 });
    for (let i = 0; i < 20; i++) await assertMarked(pool, nextMarker++);
    await pool.close();
    const head = (await health(a.url)).seq;
    await healthUntil(b.url, (h) => h.appliedSeq >= head, 10_000, `caught up to seq ${head}`);
    const body = JSON.stringify({ sentence: markedSentence(nextMarker++), context: "CxBench" });
    const t0 = nowNs();
    a.child.kill("SIGKILL");
    for (;;) {
      const r = await request(`${b.url}/v1/assert`, { method: "POST", headers: json, body, headersTimeout: 2_000 }).catch(() => undefined);
      await r?.body.text();
      if (r?.statusCode === 200) return elapsedMs(t0);
      if (elapsedMs(t0) > FAILOVER_BOUND_MS) throw new Error(`no write acknowledged by the other daemon within ${FAILOVER_BOUND_MS} ms of the writer's SIGKILL (last answer ${r?.statusCode})`);
      await sleep(RETRY_MS);
    }
  } finally {
    for (const p of procs.reverse()) await p.stop();
    await db.stop();
  }
}

async function failover(suite: Suite): Promise<void> {
  const times: number[] = [];
  for (let r = 0; r < FAILOVER_RUNS; r++) times.push(await failoverOnce(r));
  const sorted = [...times].sort((a, b) => a - b);
  const lease = `default lease: --lease-ms ${DEFAULT_PG_LIMITS.leaseMs}, --lease-renew-ms ${DEFAULT_PG_LIMITS.leaseRenewMs}`;
  suite.add("failover_best_ms", { value: sorted[0]!, unit: "ms", note: `writer SIGKILL to the first write acknowledged by the other daemon, retried every ${RETRY_MS} ms; ${lease}` });
  suite.add("failover_median_ms", { value: sorted[sorted.length >> 1]!, unit: "ms", target: "value <= 2000", met: sorted[sorted.length >> 1]! <= 2000, note: `${FAILOVER_RUNS} runs: ${times.map((t) => t.toFixed(0)).join(", ")} ms` });
}

const parts = new Set((process.env.KOINII_BENCH_CLUSTER_PARTS ?? "throughput,lag,catchup,failover").split(","));

export async function run(): Promise<void> {
  const suite = new Suite("cluster");
  if (parts.has("throughput")) await throughput(suite);
  if (parts.has("lag")) await followerLag(suite);
  if (parts.has("catchup")) await catchUp(suite);
  if (parts.has("failover")) await failover(suite);
  suite.write();
  console.log("\n  targets:");
  for (const [name, f] of Object.entries(suite.figures)) if (f.target) console.log(`    ${f.met ? "PASS" : "MISS"} ${name}: ${f.target} (${f.ratio === undefined ? f.value.toFixed(2) + " " + f.unit : f.ratio.toFixed(2) + "x " + f.baseline})`);
}
