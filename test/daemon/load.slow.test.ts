/**
 * The feed holds under load: 256 subscribers (long poll and SSE; four contexts; context
 * watches and standing queries), in four processes of their own, and 8 writers at `full`
 * durability for KOINII_LOAD_SECONDS (60 by default). Afterwards, against the durable log
 * read straight from the SQLite file (not through the daemon):
 *
 *  - every acknowledged write is in the log at its seq, the log is exactly seq 1..head;
 *  - each subscriber's delivered seqs strictly increase (nothing duplicated or reordered)
 *    and are all events its filter matches (an oracle written here from the event bodies);
 *  - every `lagged` notice accounts exactly for what it skipped:
 *    delivered + lagged = matching events written since the watch;
 *  - no answer was a 5xx;
 *  - the daemon's resident memory stayed under a bound computed from the configured limits.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it, expect } from "vitest";
import Database from "better-sqlite3";
import { spawnDaemon } from "./helpers.js";
import { decodeEvent } from "../../src/kb/event.js";

const SECONDS = Number(process.env.KOINII_LOAD_SECONDS ?? 60);
const WRITERS = 8;
const PROCESSES = 4;
const PER_PROCESS = 64;
const CONTEXTS = ["CxLoadA", "CxLoadB", "CxLoadC", "CxLoadD"];
/** Small, so the slow readers' rings overflow and `lagged` is exercised. */
const MAX_EVENTS = 32;
/** The most one event body can weigh in memory here (one asserted sentence, JS objects and their JSON). */
const EVENT_BYTES_BOUND = 4096;
/** The daemon's resident memory may grow by at most this over its idle start (rings full, sockets, buffers). */
const RSS_GROWTH_BOUND = 256 * MAX_EVENTS * EVENT_BYTES_BOUND + 96 * 1024 * 1024;

const FIXTURE = join(process.cwd(), "dist/test/daemon/fixtures/subscribers.js");

interface Rec {
  kind: "poll" | "sse";
  context: string;
  goal?: string;
  slowMs?: number;
  start: number;
  delivered: number[];
  lagged: number;
  lagNotices: number;
  errors: string[];
}

const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);

describe("the feed under load", () => {
  it(`256 subscribers and ${WRITERS} writers at full for ${SECONDS} s: nothing lost, duplicated or reordered, lagged exact, no 5xx, memory bounded`, { timeout: (SECONDS + 240) * 1000 }, async () => {
    const d = await spawnDaemon({ args: ["--max-subscriptions", "300", "--max-events", String(MAX_EVENTS)] });
    try {
      // Subscribers: per process, 64 mixed specs.
      const procs = Array.from({ length: PROCESSES }, (_, p) => {
        const specs = Array.from({ length: PER_PROCESS }, (_, i) => {
          const context = CONTEXTS[(p + i) % CONTEXTS.length]!;
          return { kind: i % 2 === 0 ? "poll" : "sse", context, goal: i % 4 < 2 ? undefined : "(p ?x ?n)", slowMs: i % 8 === 0 ? 500 : undefined };
        });
        const proc = spawn(process.execPath, [FIXTURE, d.url, JSON.stringify(specs)], { stdio: ["pipe", "pipe", "pipe"] });
        let out = "";
        let err = "";
        proc.stdout.on("data", (b: Buffer) => (out += b.toString()));
        proc.stderr.on("data", (b: Buffer) => (err += b.toString()));
        const ready = new Promise<void>((res, rej) => {
          const t = setInterval(() => out.includes("ready\n") && (clearInterval(t), res()), 50);
          proc.once("exit", (c) => (clearInterval(t), rej(new Error(`subscriber process exited ${c}: ${err}`))));
        });
        const result = new Promise<Rec[]>((res, rej) =>
          proc.once("exit", (c) => {
            if (c !== 0) return rej(new Error(`subscriber process exited ${c}: ${err}`));
            try {
              res(JSON.parse(out.trim().split("\n").pop()!) as Rec[]);
            } catch (e) {
              rej(new Error(`subscriber process printed no whole result (${out.length} bytes): ${String(e)}`));
            }
          }),
        );
        return { proc, ready, result };
      });
      await Promise.all(procs.map((p) => p.ready));

      const idleRss = rssKiB(d.proc.pid!);
      let peakRss = idleRss;
      const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssKiB(d.proc.pid!))), 250);

      // Writers: each asserts (p WwNi i) or (q WwNi) into a context in turn, logging each acknowledgement.
      const acked: { seq: number; sentence: string; context: string }[] = [];
      const statuses = new Map<number, number>();
      const deadline = Date.now() + SECONDS * 1000;
      await Promise.all(
        Array.from({ length: WRITERS }, async (_, w) => {
          for (let i = 0; Date.now() < deadline; i++) {
            const context = CONTEXTS[(w + i) % CONTEXTS.length]!;
            const sentence = i % 3 === 0 ? `(q W${w}N${i})` : `(p W${w}N${i} ${i})`;
            const r = await fetch(d.url + "/v1/assert", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ sentence, context }) });
            statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
            const body = (await r.json()) as { seq: number };
            if (r.status === 200) acked.push({ seq: body.seq, sentence, context });
          }
        }),
      );
      const head = ((await (await fetch(d.url + "/health")).json()) as { seq: number }).seq;
      for (const p of procs) p.proc.stdin.write(`stop ${head}\n`);
      const records = (await Promise.all(procs.map((p) => p.result))).flat();
      clearInterval(sampler);
      await d.stop();

      // The oracle: the durable log, read from the file.
      const db = new Database(join(d.dataDir, "koinii.db"), { readonly: true });
      const log = (db.prepare("select seq, body from event order by seq").all() as { seq: number; body: string }[]).map((r) => ({ seq: r.seq, ev: decodeEvent(r.seq, r.body) }));
      db.close();
      expect(log.map((e) => e.seq)).toEqual(Array.from({ length: log.length }, (_, i) => log[0]!.seq + i));
      expect(log[log.length - 1]!.seq).toBe(head);
      const bySeq = new Map(log.map((e) => [e.seq, e.ev]));
      for (const a of acked) expect(bySeq.get(a.seq)?.added.some((x) => x.sentence === a.sentence && x.context === a.context), `ack ${a.seq}`).toBe(true);

      const matches = (r: Rec, ev: { added: { sentence: string; context: string }[]; removed: { sentence: string; context: string }[] }) =>
        [...ev.added, ...ev.removed].some((x) => x.context === r.context && (r.goal === undefined || x.sentence.startsWith("(p ")));
      let totalDelivered = 0;
      let totalLagged = 0;
      let slowLagged = 0;
      for (const r of records) {
        expect(r.errors, `${r.kind} ${r.context}`).toEqual([]);
        if (r.slowMs) slowLagged += r.lagged;
        const expected = log.filter((e) => e.seq > r.start && matches(r, e.ev)).map((e) => e.seq);
        for (let i = 1; i < r.delivered.length; i++) expect(r.delivered[i]!).toBeGreaterThan(r.delivered[i - 1]!);
        const expectedSet = new Set(expected);
        expect(r.delivered.filter((s) => !expectedSet.has(s))).toEqual([]);
        expect(r.delivered.length + r.lagged, `${r.kind} ${r.context} ${r.goal ?? ""}: delivered ${r.delivered.length} + lagged ${r.lagged} vs ${expected.length} matching`).toBe(expected.length);
        totalDelivered += r.delivered.length;
        totalLagged += r.lagged;
      }
      expect([...statuses.keys()].filter((s) => s >= 500)).toEqual([]);
      expect(slowLagged, "the slow readers' rings overflowed").toBeGreaterThan(0);
      const growth = (peakRss - idleRss) * 1024;
      console.log(
        `load: ${acked.length} writes acknowledged in ${SECONDS} s (${(acked.length / SECONDS).toFixed(0)}/s), ` +
          `${totalDelivered} deliveries, ${totalLagged} lagged, RSS ${(idleRss / 1024).toFixed(0)} -> ${(peakRss / 1024).toFixed(0)} MiB (bound +${(RSS_GROWTH_BOUND / 2 ** 20).toFixed(0)} MiB)`,
      );
      expect(growth).toBeLessThan(RSS_GROWTH_BOUND);
    } finally {
      await d.stop();
    }
  });
});
