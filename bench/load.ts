/**
 * The wire bench's load part (issue 13 item 6, issue 18): 256 subscribers (long poll and
 * SSE alternately) spread over 4 processes, and 8 writers asserting as fast as they are
 * acknowledged at durability `full` for 20 s. Figures: acknowledged writes/s, their
 * round trip, delivery p50/p99, daemon resident memory; the baseline is the same writers
 * against a fresh daemon with no subscribers, in the same run. Every delivery must arrive.
 *
 * `profileDaemonUnderLoad` runs the same load with all 256 subscribers in ONE process and
 * the daemon under `node --cpu-prof`, and reports the CPU each process used (from /proc),
 * to say which side bounds the write rate, with the daemon's top frames.
 */
import { Pool } from "undici";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Suite, nowNs, elapsedMs, percentile } from "./lib.js";
import { startDaemon } from "./procs.js";
import { subscriberProcess, epochNow, waitFor, delivered, sleep, type Subscribers, type Delivered } from "./delivery.js";
import { summarize, printSummary } from "./cpuprofile.js";
import { markedSentence } from "./sse.js";

const SECONDS = 20;
const WRITERS = 8;
const SUBSCRIBERS = 256;
const PROCESSES = 4;
/** Writes before the timed window (delivered too, not timed): the daemon's and subscribers' JIT warms up. */
const WARMUP = 200;

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** Resident memory (VmRSS, bytes) of process `pid`, from /proc. */
export function vmRssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

interface LoadRun {
  writes: number;
  rps: number;
  ackP50: number;
  ackP99: number;
  delivery?: Delivered;
  lagged?: number;
  daemonRss: number;
  cpu: { daemon: number; subscribers: number; writers: number; wallS: number };
}

/** One run: a fresh daemon at `full`, `perProcess` subscriptions in each of `processes` processes, WRITERS closed-loop writers for SECONDS. */
async function loadRun(processes: number, perProcess: number, opts: { node?: string[]; allowMissing?: boolean } = {}): Promise<LoadRun> {
  const daemon = await startDaemon({ durability: "full", extra: ["--max-subscriptions", String(SUBSCRIBERS * 2)], node: opts.node });
  const subs: Subscribers[] = [];
  try {
    for (let p = 0; p < processes; p++) subs.push(await subscriberProcess("mixed", daemon.url, perProcess));
    const pool = new Pool(daemon.url, { connections: WRITERS, pipelining: 1 });
    const sentAt = new Map<number, number>();
    const acks: number[] = [];
    let next = 0;
    const write = async (timed: boolean) => {
      const i = next++;
      const t = nowNs();
      if (timed) sentAt.set(i, epochNow());
      const r = await pool.request({ path: "/v1/assert", method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ sentence: markedSentence(i), context: "CxBench" }) });
      const text = await r.body.text();
      if (r.statusCode !== 200) throw new Error(`assert answered ${r.statusCode}: ${text}`);
      if (timed) acks.push(Number(nowNs() - t) / 1e6);
    };
    while (next < WARMUP) await write(false);
    await sleep(200);
    const pids = { daemon: daemon.child.pid!, subs: subs.map((s) => s.pid) };
    const cpu0 = { daemon: cpuSeconds(pids.daemon), subscribers: pids.subs.reduce((n, p) => n + cpuSeconds(p), 0), writers: process.cpuUsage() };
    const t = nowNs();
    const deadline = Date.now() + SECONDS * 1000;
    await Promise.all(Array.from({ length: WRITERS }, async () => {
      while (Date.now() < deadline) await write(true);
    }));
    const wallS = elapsedMs(t) / 1000;
    const w = process.cpuUsage(cpu0.writers);
    const cpu = {
      daemon: cpuSeconds(pids.daemon) - cpu0.daemon,
      subscribers: pids.subs.reduce((n, p) => n + cpuSeconds(p), 0) - cpu0.subscribers,
      writers: (w.user + w.system) / 1e6,
      wallS,
    };
    await pool.close();
    const total = next * processes * perProcess;
    // Done when every event was delivered or reported lost (lagged) to every subscription.
    await waitFor(() => subs.reduce((n, s) => n + s.lines.length + s.lagged, 0) >= total, 60_000);
    const daemonRss = vmRssBytes(pids.daemon);
    acks.sort((a, b) => a - b);
    const out: LoadRun = { writes: acks.length, rps: acks.length / wallS, ackP50: percentile(acks, 50), ackP99: percentile(acks, 99), daemonRss, cpu };
    if (processes) {
      const lines = subs.flatMap((s) => s.lines);
      const lagged = subs.reduce((n, s) => n + s.lagged, 0);
      out.delivery = delivered(`load s${processes * perProcess}`, lines, sentAt, acks.length * processes * perProcess, lagged, opts.allowMissing);
      out.lagged = lagged;
    }
    return out;
  } finally {
    for (const s of subs) await s.stop();
    await daemon.stop();
  }
}

const cpuNote = (r: LoadRun) => `CPU over ${r.cpu.wallS.toFixed(1)} s: daemon ${r.cpu.daemon.toFixed(1)} s, subscribers ${r.cpu.subscribers.toFixed(1)} s, writers ${r.cpu.writers.toFixed(1)} s`;

export async function loadUnderSubscribers(suite: Suite): Promise<void> {
  const base = await loadRun(0, 0);
  suite.add("load_s0_writes_per_s", { value: base.rps, unit: "writes/s", note: `${WRITERS} writers, full, ${SECONDS} s, no subscribers; ${cpuNote(base)}` });
  suite.add("load_s0_ack_p50", { value: base.ackP50, unit: "ms" });
  suite.add("load_s0_ack_p99", { value: base.ackP99, unit: "ms" });
  suite.add("load_s0_daemon_rss", { value: base.daemonRss / 2 ** 20, unit: "MiB" });
  const r = await loadRun(PROCESSES, SUBSCRIBERS / PROCESSES);
  const d = r.delivery!;
  suite.compare("load_s256_writes_per_s", r.rps, "writes/s", "load_s0_writes_per_s", { higherIsBetter: true, note: `${SUBSCRIBERS} subscribers (poll and SSE) in ${PROCESSES} processes; ${cpuNote(r)}` });
  suite.compare("load_s256_ack_p50", r.ackP50, "ms", "load_s0_ack_p50", { higherIsBetter: false });
  suite.compare("load_s256_ack_p99", r.ackP99, "ms", "load_s0_ack_p99", { higherIsBetter: false });
  suite.add("load_s256_delivery_p50", { value: d.p50, unit: "ms", note: `${d.deliveries} deliveries, none missing` });
  suite.add("load_s256_delivery_p99", { value: d.p99, unit: "ms" });
  suite.compare("load_s256_daemon_rss", r.daemonRss / 2 ** 20, "MiB", "load_s0_daemon_rss", { higherIsBetter: false, note: "VmRSS at the end of the run" });
}

export async function profileDaemonUnderLoad(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "koinii-bench-prof-"));
  try {
    // One client process is expected to fall behind here: what it lost is reported, not fatal.
    const r = await loadRun(1, SUBSCRIBERS, { node: ["--cpu-prof", "--cpu-prof-dir", dir], allowMissing: true });
    const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
    if (!file) throw new Error("the daemon wrote no .cpuprofile");
    const s = summarize(join(dir, file), 20);
    console.log(`\n  profile: ${SUBSCRIBERS} subscribers in one process, ${WRITERS} writers, full, ${SECONDS} s: ${r.rps.toFixed(0)} writes/s, ack p50 ${r.ackP50.toFixed(2)} ms, delivery p50 ${r.delivery!.p50.toFixed(2)} ms p99 ${r.delivery!.p99.toFixed(2)} ms, ${r.delivery!.missing} of ${r.delivery!.deliveries + r.delivery!.missing} deliveries missing (${r.lagged} reported lagged)`);
    console.log(`  ${cpuNote(r)} (each process can use at most ${r.cpu.wallS.toFixed(1)} s of one core)`);
    printSummary("daemon under --cpu-prof", s);
    const out = join(process.cwd(), "bench", "results");
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, "wire-profile.json"), JSON.stringify({ run: r, profile: s }, null, 2) + "\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
