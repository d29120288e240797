/**
 * `npm run bench -- channel` (issue 5), against a real daemon process over loopback:
 *
 * - catch-up of an agent that missed 100 000 events (target <= 2 s): a consumer synced,
 *   then 100 000 writes it did not see, then one `sync` folding them in from the durable log;
 * - a wire subscription keeping up with a writer at full speed: moves/s written and
 *   delivered, and the lag (head seq minus last delivered seq) sampled while writing;
 * - `openQueries` latency with 10 000 open queries.
 */
import { Pool } from "undici";
import { Suite, nowNs, elapsedMs, percentile } from "./lib.js";
import { startDaemon } from "./procs.js";
import { wire, join, openConsumer, sync, viewOf, memoryCursorStore, subscribe, openQueries, type FeedEvent } from "../src/channel/index.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Write `n` asserts into CxWriter with `clients` concurrent HTTP clients; resolves with the rate. */
async function writeMany(url: string, n: number, clients: number, tag: string, stop?: () => boolean): Promise<{ written: number; perSec: number }> {
  const pool = new Pool(url, { connections: clients });
  let next = 0;
  const t = nowNs();
  const worker = async () => {
    while (next < n && !(stop && stop())) {
      const i = next++;
      const r = await pool.request({
        path: "/v1/assert",
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ sentence: `(move ${tag}${i} V${i})`, context: "CxWriter", creator: "AgentWriter" }),
      });
      await r.body.text();
      if (r.statusCode !== 200) throw new Error(`assert answered ${r.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: clients }, worker));
  const secs = elapsedMs(t) / 1000;
  await pool.close();
  return { written: next, perSec: next / secs };
}

async function catchUp(suite: Suite): Promise<void> {
  const daemon = await startDaemon({ durability: "normal" });
  try {
    const medium = wire({ url: daemon.url });
    await join(medium, "CxBench", "AgentWriter");
    const reader = await join(medium, "CxBench", "AgentReader");
    const consumer = await openConsumer(reader, "(move ?m ?v)", "CxBench", memoryCursorStore());
    await sync(consumer);
    const N = 100_000;
    const w = await writeMany(daemon.url, N, 32, "C");
    console.log(`  wrote ${N} events while the reader was away (${w.perSec.toFixed(0)}/s)`);
    const t = nowNs();
    const r = await sync(consumer);
    const ms = elapsedMs(t);
    const held = viewOf(consumer).length;
    if (held !== N) throw new Error(`catch-up holds ${held} moves, expected ${N}`);
    suite.add("catchup_100000_events_ms", { value: ms, unit: "ms", target: "value <= 2000", met: ms <= 2000, note: `${r.events} events folded, resnapshots: ${r.resnapshots.join(",") || "none"}` });
    await medium.close?.();
  } finally {
    await daemon.stop();
  }
}

async function keepUp(suite: Suite): Promise<void> {
  const daemon = await startDaemon({ durability: "normal" });
  try {
    const medium = wire({ url: daemon.url });
    await join(medium, "CxBench", "AgentWriter");
    const reader = await join(medium, "CxBench", "AgentReader");
    let delivered = 0;
    let lastSeq = 0;
    const sub = await subscribe(reader, "(move ?m ?v)", "CxBench", (ev: FeedEvent) => {
      delivered += ev.added.length;
      lastSeq = ev.seq;
    });
    const lags: number[] = [];
    let head = 0;
    let writing = true;
    const sampler = (async () => {
      while (writing) {
        head = await medium.headSeq();
        lags.push(Math.max(0, head - lastSeq));
        await sleep(50);
      }
    })();
    const DURATION_MS = 8_000;
    const t0 = Date.now();
    const w = await writeMany(daemon.url, 10_000_000, 16, "K", () => Date.now() - t0 > DURATION_MS);
    writing = false;
    await sampler;
    const tEnd = Date.now() + 10_000;
    while (delivered < w.written && Date.now() < tEnd) await sleep(20);
    await sub.stop();
    lags.sort((a, b) => a - b);
    suite.add("keepup_moves_written_per_s", { value: w.perSec, unit: "moves/s", note: `${w.written} moves by 16 writers` });
    suite.add("keepup_moves_delivered", { value: delivered, unit: "moves", note: delivered === w.written ? "every move delivered" : `${w.written - delivered} not delivered` });
    suite.add("keepup_lag_p50", { value: percentile(lags, 50), unit: "seqs" });
    suite.add("keepup_lag_max", { value: lags[lags.length - 1] ?? 0, unit: "seqs" });
    await medium.close?.();
  } finally {
    await daemon.stop();
  }
}

async function openQueriesLatency(suite: Suite): Promise<void> {
  const daemon = await startDaemon({ durability: "normal" });
  try {
    const medium = wire({ url: daemon.url });
    const asker = await join(medium, "CxBench", "AgentAsker");
    const reader = await join(medium, "CxBench", "AgentReader");
    for (let b = 0; b < 10; b++) {
      const add = [];
      for (let i = b * 1000; i < (b + 1) * 1000; i++) add.push({ sentence: `(queries AgentAsker (question Q${i}))`, context: "CxAsker" });
      await medium.edit({ add, remove: [] });
    }
    const times: number[] = [];
    for (let i = 0; i < 25; i++) {
      const t = nowNs();
      const qs = await openQueries(reader, { unanswered: true });
      times.push(elapsedMs(t));
      if (qs.length !== 10_000) throw new Error(`openQueries found ${qs.length}`);
    }
    void asker;
    times.sort((a, b) => a - b);
    suite.add("open_queries_10000_p50", { value: percentile(times, 50), unit: "ms" });
    suite.add("open_queries_10000_p99", { value: percentile(times, 99), unit: "ms" });
    await medium.close?.();
  } finally {
    await daemon.stop();
  }
}

export async function run(): Promise<void> {
  const suite = new Suite("channel");
  await catchUp(suite);
  await keepUp(suite);
  await openQueriesLatency(suite);
  suite.write();
}
