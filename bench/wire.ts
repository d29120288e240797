/**
 * `npm run bench -- wire` (issue 4), in one run on this machine:
 *
 * - assert round trip over HTTP (p50/p99) and throughput with 1, 8 and 32 concurrent
 *   clients, in both durability modes, against a bare fastify route and a fastify route
 *   doing one raw SQLite insert (one commit) per request;
 * - write-to-subscriber latency over long poll and SSE (p50/p99) with 1 and 64 subscribers,
 *   against PostgreSQL LISTEN/NOTIFY on a throwaway local cluster;
 * - per-assert cost with 0 and 64 subscribers at 10^4 and 10^6 stored sentexes.
 *
 * Servers run as child processes (the daemon exactly as `koinii serve` runs it); the load
 * comes from this process over loopback with undici.
 */
import { Pool, request } from "undici";
import pg from "pg";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Suite, nowNs, elapsedMs, percentile } from "./lib.js";
import { startDaemon, startBaseline, startPostgres, type Proc } from "./procs.js";
import { openKb } from "../src/kb/index.js";
import { FeedHub } from "../src/feed/index.js";

const CONTEXTS = join(process.cwd(), "contexts");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let unique = 0;

interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
}

async function load(url: string, clients: number, total: number): Promise<LoadResult> {
  const pool = new Pool(url, { connections: clients, pipelining: 1 });
  const lat: number[] = [];
  let next = 0;
  const run = unique++;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      const body = JSON.stringify({ sentence: `(rel R${run}E${i} V${i})`, context: "CxBench" });
      const t = nowNs();
      const r = await pool.request({ path: "/v1/assert", method: "POST", headers: { "content-type": "application/json" }, body });
      const text = await r.body.text();
      if (r.statusCode !== 200) throw new Error(`assert answered ${r.statusCode}: ${text}`);
      lat.push(Number(nowNs() - t) / 1e6);
    }
  };
  const t = nowNs();
  await Promise.all(Array.from({ length: clients }, worker));
  const secs = elapsedMs(t) / 1000;
  await pool.close();
  lat.sort((a, b) => a - b);
  return { rps: total / secs, p50: percentile(lat, 50), p99: percentile(lat, 99) };
}

async function roundTrips(suite: Suite): Promise<void> {
  const CLIENTS = [1, 8, 32];
  const bare = await startBaseline("bare");
  for (const c of CLIENTS) {
    await load(bare.url, c, 500);
    const r = await load(bare.url, c, 5000);
    suite.add(`bare_fastify_c${c}_rps`, { value: r.rps, unit: "req/s" });
  }
  await bare.stop();
  for (const durability of ["full", "normal"] as const) {
    const raw = await startBaseline(durability === "full" ? "sqlite-full" : "sqlite-normal");
    for (const c of CLIENTS) {
      await load(raw.url, c, 200);
      const r = await load(raw.url, c, durability === "full" ? 2000 : 5000);
      suite.add(`raw_sqlite_route_${durability}_c${c}_rps`, { value: r.rps, unit: "req/s", note: `p50 ${r.p50.toFixed(3)} ms` });
    }
    await raw.stop();
    const daemon = await startDaemon({ durability });
    for (const c of CLIENTS) {
      await load(daemon.url, c, 200);
      const r = await load(daemon.url, c, durability === "full" ? 3000 : 5000);
      suite.compare(`assert_${durability}_c${c}_rps`, r.rps, "req/s", `raw_sqlite_route_${durability}_c${c}_rps`, {
        higherIsBetter: true,
        ...(durability === "full" && c === 8 ? { minRatio: 5 } : {}),
        note: "group commit vs one commit per request",
      });
      suite.compare(`assert_${durability}_c${c}_vs_bare`, r.rps, "req/s", `bare_fastify_c${c}_rps`, { higherIsBetter: true });
      suite.add(`assert_${durability}_c${c}_p50`, { value: r.p50, unit: "ms", ...(c === 1 ? { target: "value <= 1", met: r.p50 <= 1 } : {}) });
      suite.add(`assert_${durability}_c${c}_p99`, { value: r.p99, unit: "ms" });
    }
    await daemon.stop();
  }
}

/** Subscribers over long poll or SSE; the writer asserts one marked sentence at a time. */
async function delivery(suite: Suite, transport: "poll" | "sse", subscribers: number, events: number): Promise<void> {
  const daemon = await startDaemon({ durability: "normal", extra: ["--max-subscriptions", "512"] });
  const pool = new Pool(daemon.url, { connections: subscribers + 4 });
  const post = async (path: string, body: unknown, signal?: AbortSignal) => {
    const r = await pool.request({ path, method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal });
    return (await r.body.json()) as Record<string, unknown>;
  };
  const sentAt = new Map<number, number>();
  const lat: number[] = [];
  const received = new Array(events).fill(0) as number[];
  const marker = /\(lat M([0-9]+)\)/;
  const onEvent = (ev: { added?: { sentence: string }[] }) => {
    const t = performance.now();
    for (const a of ev.added ?? []) {
      const m = marker.exec(a.sentence);
      if (!m) continue;
      const i = Number(m[1]);
      lat.push(t - sentAt.get(i)!);
      received[i]!++;
    }
  };
  const abort = new AbortController();
  const subs: Promise<void>[] = [];
  for (let s = 0; s < subscribers; s++) {
    const w = (await post("/v1/watch", { goal: "(lat ?m)", context: "CxBench" })) as { token: string; cursor: number };
    if (transport === "poll") {
      subs.push(
        (async () => {
          let cursor = w.cursor;
          while (!abort.signal.aborted) {
            const r = (await post("/v1/poll", { token: w.token, cursor, waitMs: 30_000 }, abort.signal).catch(() => undefined)) as { events: never[]; cursor: number } | undefined;
            if (!r) return;
            for (const e of r.events) onEvent(e);
            cursor = r.cursor;
          }
        })(),
      );
    } else {
      subs.push(
        (async () => {
          const r = await request(`${daemon.url}/v1/stream?token=${w.token}&cursor=${w.cursor}`, { signal: abort.signal }).catch(() => undefined);
          if (!r) return;
          let buf = "";
          try {
            for await (const chunk of r.body) {
              buf += chunk.toString();
              let i: number;
              while ((i = buf.indexOf("\n\n")) >= 0) {
                const frame = buf.slice(0, i);
                buf = buf.slice(i + 2);
                const data = frame.split("\n").find((l) => l.startsWith("data: "));
                if (data && !frame.includes("event: lagged")) onEvent(JSON.parse(data.slice(6)));
              }
            }
          } catch {
            /* aborted */
          }
        })(),
      );
    }
  }
  await sleep(200);
  for (let i = 0; i < events; i++) {
    sentAt.set(i, performance.now());
    await post("/v1/assert", { sentence: `(lat M${i})`, context: "CxBench" });
    await sleep(5);
  }
  const deadline = Date.now() + 10_000;
  while (received.some((n) => n < subscribers) && Date.now() < deadline) await sleep(20);
  abort.abort();
  await Promise.allSettled(subs);
  await pool.close().catch(() => {});
  await daemon.stop();
  lat.sort((a, b) => a - b);
  const missing = received.filter((n) => n < subscribers).length;
  const name = `delivery_${transport}_s${subscribers}`;
  suite.add(`${name}_p50`, { value: percentile(lat, 50), unit: "ms", note: missing ? `${missing} events not seen by every subscriber` : `${lat.length} deliveries` });
  suite.add(`${name}_p99`, { value: percentile(lat, 99), unit: "ms" });
}

async function notifyBaseline(suite: Suite, listeners: number, events: number): Promise<boolean> {
  const server = startPostgres();
  if (!server) {
    console.log("  PostgreSQL not installed: no NOTIFY baseline");
    return false;
  }
  try {
    const cfg = { host: server.host, port: server.port, user: "postgres", database: "postgres" };
    const sender = new pg.Client(cfg);
    await sender.connect();
    const lat: number[] = [];
    const sentAt = new Map<number, number>();
    const clients: pg.Client[] = [];
    for (let i = 0; i < listeners; i++) {
      const c = new pg.Client(cfg);
      await c.connect();
      c.on("notification", (n) => lat.push(performance.now() - sentAt.get(Number(n.payload))!));
      await c.query("LISTEN koinii_bench");
      clients.push(c);
    }
    for (let i = 0; i < events; i++) {
      sentAt.set(i, performance.now());
      await sender.query(`NOTIFY koinii_bench, '${i}'`);
      await sleep(5);
    }
    await sleep(500);
    for (const c of clients) await c.end();
    await sender.end();
    lat.sort((a, b) => a - b);
    suite.add(`notify_s${listeners}_p50`, { value: percentile(lat, 50), unit: "ms", note: `${lat.length} deliveries` });
    suite.add(`notify_s${listeners}_p99`, { value: percentile(lat, 99), unit: "ms" });
    return true;
  } finally {
    server.stop();
  }
}

/** Per-assert cost in-process (awaited, durability normal) with 0 or 64 subscriptions. */
async function perAssertCost(suite: Suite): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "koinii-bench-cost-"));
  try {
    const kb = await openKb({ path: join(dir, "kb.db"), durability: "normal", contextsDir: CONTEXTS });
    const hub = await FeedHub.open(kb, { maxSubscriptions: 512 });
    const admin = { id: "admin", admin: true };
    let loaded = 0;
    const grow = async (to: number) => {
      for (let b = loaded; b < to; b += 10_000) {
        const add = [];
        for (let i = b; i < Math.min(to, b + 10_000); i++) add.push({ sentence: `(rel E${i} V${i})`, context: "CxBench" });
        await kb.edit({ add });
      }
      loaded = to;
    };
    /** Best of three timed runs of n awaited asserts (noise on this machine only ever adds). */
    const time = async (n: number) => {
      let best = Infinity;
      for (let rep = 0; rep < 3; rep++) {
        const run = unique++;
        const t = nowNs();
        for (let i = 0; i < n; i++) await kb.assert(`(cost C${run}x${i} V${i})`, "CxBench");
        best = Math.min(best, (elapsedMs(t) * 1000) / n);
      }
      return best;
    };
    const tokens: string[] = [];
    for (const size of [10_000, 1_000_000]) {
      await grow(size);
      for (const t of tokens) hub.unwatch(admin, t);
      tokens.length = 0;
      await time(300);
      const none = await time(2000);
      suite.add(`assert_cost_s0_${size}`, { value: none, unit: "us" });
      for (let s = 0; s < 64; s++) {
        // Half standing queries that match every write, half that match none, plus cones.
        const w = s % 2 === 0 ? hub.watch(admin, { goal: "(cost ?x ?v)", context: "CxBench" }) : hub.watch(admin, { goal: `(other${s} ?x)`, context: "CxBench" });
        tokens.push(w.token);
      }
      await time(300);
      const withSubs = await time(2000);
      if (size === 10_000) suite.add(`assert_cost_s64_${size}`, { value: withSubs, unit: "us" });
      else suite.compare(`assert_cost_s64_${size}`, withSubs, "us", `assert_cost_s64_10000`, { higherIsBetter: false, minRatio: 1 / 1.3, note: "ratio >= 0.77 means <= 1.3x growth from 10^4" });
    }
    hub.shutdown();
    await kb.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  const suite = new Suite("wire");
  await roundTrips(suite);
  const hasPg = await notifyBaseline(suite, 1, 300);
  if (hasPg) await notifyBaseline(suite, 64, 300);
  for (const s of [1, 64]) {
    await delivery(suite, "poll", s, 300);
    await delivery(suite, "sse", s, 300);
  }
  for (const t of ["poll", "sse"] as const) {
    const f = suite.figures[`delivery_${t}_s64_p50`]!;
    const g = suite.figures[`delivery_${t}_s64_p99`]!;
    f.target = "value <= 2" + (hasPg ? " and <= notify_s64_p50" : "");
    f.met = f.value <= 2 && (!hasPg || f.value <= suite.figures["notify_s64_p50"]!.value);
    if (hasPg) {
      f.baseline = "notify_s64_p50";
      f.ratio = suite.figures["notify_s64_p50"]!.value / f.value;
    }
    g.target = "value <= 10";
    g.met = g.value <= 10;
  }
  await perAssertCost(suite);
  suite.write();
}
