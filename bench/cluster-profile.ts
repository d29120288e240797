/**
 * `node dist/bench/cluster-profile.js [writer|follower]...`: where the PostgreSQL-store
 * daemon's CPU goes (docs/benchmarks.md, cluster section). `writer`: one daemon under
 * `node --cpu-prof` taking 8 closed-loop clients of POST /v1/assert (the cluster bench's
 * load), with the commit statements it sent (pg_stat_database) per write. `follower`: the
 * cluster bench's lag run with the follower under `--cpu-prof`. Each prints self time by
 * frame and by file, and the inclusive time of the frames a write passes through, per write.
 */
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { daemonLoad, health, lagRun, pgNode } from "./cluster.js";
import { categorize, inclusive, printSummary, summarize } from "./cpuprofile.js";
import { startPostgres, type Proc } from "./procs.js";

/** Where a sample's time is counted: the innermost frame from one of these (cpuprofile.ts `categorize`). */
const CATEGORIES: [RegExp, string][] = [
  [/node:internal\/(modules|bootstrap)|\/commander\/|\/semver\//, "startup: module loading"],
  [/\/pgstore\.js$|\/pg-election\.js$|\/pgmembers\.js$/, "store: group JSON, commit, replay"],
  [/\/node_modules\/(pg|pg-pool|pg-protocol|pg-types|pgpass|kysely)\//, "pg client (protocol, socket writes)"],
  [/\/src\/kb\/|\/src\/rules\//, "KB: engine, event, index"],
  [/\/src\/daemon\/|\/node_modules\/(fastify|@fastify|find-my-way|avvio|light-my-request|fast-json-stringify|secure-json-parse|zod|pino|thread-stream)|node:_http|node:internal\/http/, "daemon: HTTP, routes, validation, feed"],
];

/** Frames (`function@file`) whose inclusive time is printed per write. */
const STAGES = [
  "commitGroup@pgstore.js",
  "groupJson@pgstore.js",
  "pump@pgstore.js",
  "applyAndPersist@kb.js",
  "replay@pgstore.js",
  "catchUp@pgstore.js",
  "parse@(native)",
  "stringify@(native)",
  "(garbage collector)@(native)",
];

function profileOf(dir: string, title: string, writes: number): void {
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) throw new Error(`${title}: no .cpuprofile written`);
  const path = join(dir, file);
  if (process.env.KOINII_PROFILE_KEEP) copyFileSync(path, `${process.env.KOINII_PROFILE_KEEP}-${title.split(" ")[0]}.cpuprofile`);
  const s = summarize(path, 25);
  printSummary(`${title} (${writes} writes, ${((s.totalMs * 1000) / writes).toFixed(0)} us sampled per write)`, s);
  console.log("    by category, per write:");
  for (const [k, us] of [...categorize(path, CATEGORIES)].sort((a, b) => b[1] - a[1])) console.log(`      ${(us / writes).toFixed(1).padStart(8)} us  ${k}`);
  console.log("    inclusive per write:");
  for (const [k, us] of inclusive(path, STAGES)) if (us) console.log(`      ${(us / writes).toFixed(1).padStart(8)} us  ${k}`);
}

async function commits(cfg: pg.ClientConfig): Promise<number> {
  const c = new pg.Client(cfg);
  await c.connect();
  try {
    return Number((await c.query<{ n: string }>("select xact_commit as n from pg_stat_database where datname = current_database()")).rows[0]!.n);
  } finally {
    await c.end();
  }
}

async function writer(): Promise<void> {
  const db = await startPostgres("prof");
  const dir = mkdtempSync(join(tmpdir(), "koinii-prof-"));
  const procs: Proc[] = [];
  try {
    const w = await pgNode(db.url, "writer", procs, ["--cpu-prof", "--cpu-prof-dir", dir]);
    const h0 = (await health(w.url)).seq;
    const x0 = await commits(db.config);
    const r = await daemonLoad(w.url, 8);
    const h1 = (await health(w.url)).seq;
    const x1 = await commits(db.config);
    await procs.pop()!.stop();
    const writes = h1 - h0;
    console.log(`\n  writer: ${r.rps.toFixed(0)} writes/s at 8 clients (timed), p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms; ${writes} writes (warm-up included) in ${x1 - x0} transactions (${((x1 - x0) / writes).toFixed(2)} per write, renewals and member beats included)`);
    profileOf(dir, "writer under --cpu-prof", writes);
  } finally {
    for (const p of procs) await p.stop();
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function follower(perSecond?: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "koinii-prof-"));
  try {
    const r = await lagRun({ followerNode: ["--cpu-prof", "--cpu-prof-dir", dir], ...(perSecond ? { perSecond } : {}) });
    console.log(`\n  follower${perSecond ? ` at ${perSecond}/s` : ""}: lag p50 ${r.d.p50.toFixed(2)} ms, p99 ${r.d.p99.toFixed(2)} ms over ${r.writes} writes at ${r.rps.toFixed(0)}/s; follower CPU ${r.followerCpuMsPerWrite.toFixed(3)} ms per write`);
    profileOf(dir, "follower under --cpu-prof", r.writes);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const which = process.argv.slice(2);
for (const w of which.length ? which : ["writer", "follower"]) {
  if (w === "writer") await writer();
  else if (w === "follower") await follower();
  else if (/^follower\d+$/.test(w)) await follower(Number(w.slice(8)));
  else throw new Error(`unknown part ${w}: writer, follower or follower<rate>`);
}
