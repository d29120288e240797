/**
 * `npm run bench -- writepath` (issue 18 item 1): where the microseconds of one durable
 * assert and of one edit entry go, at durability `normal` (the disk is not the limit there).
 * The V8 sampling profiler runs in-process (50 us interval) over 20 000 single asserts and
 * over 20 edits of 1 000; each stage is the inclusive time of its frame, per entry:
 *
 *   parse + checks   Engine.prepare (asserts) / Engine.checkEdit (edits)
 *   engine           Engine.apply (belief, indexes, derivations)
 *   event record     Kb.record (the added sentex as the event shows it), of which
 *   locator sha256   locatorOf
 *   event encoding   encodeEvent (the store's compact log body; JSON.stringify inside it is
 *                    a V8 builtin without a frame of its own)
 *   event object     the rest of Kb.applyAndPersist: the rows and the event object built
 *   inserts          Store.insertSentexes + Store.insertEvent + Store.setMeta, less the encoding
 *   BEGIN, COMMIT    Store.begin, Store.commit
 *
 * The rest of the wall time is the await, the turn that closes the group and the loop.
 * Besides, what a commit writes: WAL pages appended per single assert, against a raw
 * single-row insert commit (the kb bench's baseline row) in the same mode.
 */
import { Session } from "node:inspector/promises";
import Database from "better-sqlite3";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openKb, type Kb } from "../src/kb/index.js";
import { Suite, nowNs, elapsedMs } from "./lib.js";
import { inclusive } from "./cpuprofile.js";

const STAGES: [string, string[]][] = [
  ["parse_checks", ["prepare@engine.js", "checkEdit@engine.js"]],
  ["engine_apply", ["apply@engine.js"]],
  ["event_record", ["record@kb.js"]],
  ["locator_sha256", ["locatorOf@term.js"]],
  ["event_encoding", ["encodeEvent@event.js"]],
  ["begin", ["begin@store.js"]],
  ["commit", ["commit@store.js"]],
];

async function profiled(label: string, entries: number, body: (kb: Kb) => Promise<void>, suite: Suite): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "koinii-bench-writepath-"));
  const session = new Session();
  session.connect();
  try {
    const kb = await openKb({ path: join(dir, "kb.db"), durability: "normal" });
    await body(kb); // warm-up pass, not profiled
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 50 });
    await session.post("Profiler.start");
    const t = nowNs();
    await body(kb);
    const wallUs = (elapsedMs(t) * 1000) / entries;
    const { profile } = await session.post("Profiler.stop");
    await kb.close();
    const file = join(dir, "write.cpuprofile");
    writeFileSync(file, JSON.stringify(profile));
    const stores = ["insertSentexes@store.js", "insertEvent@store.js", "setMeta@store.js"];
    const times = inclusive(file, [...STAGES.flatMap(([, k]) => k), ...stores, "applyAndPersist@kb.js"]);
    const stage = (keys: string[]) => keys.reduce((n, k) => n + times.get(k)!, 0) / entries;
    suite.add(`${label}.wall_per_entry`, { value: wallUs, unit: "us", note: `${entries} entries` });
    const share = (us: number) => `${((us / wallUs) * 100).toFixed(0)}% of wall`;
    for (const [name, keys] of STAGES) suite.add(`${label}.${name}`, { value: stage(keys), unit: "us", note: share(stage(keys)) });
    const inserts = stage(stores) - stage(["encodeEvent@event.js"]);
    suite.add(`${label}.inserts`, { value: inserts, unit: "us", note: `${share(inserts)}; the three statements, less the encoding` });
    const object = stage(["applyAndPersist@kb.js"]) - stage(["apply@engine.js", "record@kb.js", ...stores]);
    suite.add(`${label}.event_object`, { value: object, unit: "us", note: `${share(object)}; applyAndPersist less the engine, record and store calls` });
  } finally {
    session.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
}

let generation = 0;

/** WAL frames (page + 24-byte header) appended per commit over `n` commits, after 50 untimed ones. */
async function walPages(wal: string, pageSize: number, n: number, commit: (i: number) => Promise<void> | void): Promise<number> {
  for (let i = 0; i < 50; i++) await commit(i);
  const before = statSync(wal).size;
  for (let i = 50; i < 50 + n; i++) await commit(i);
  return (statSync(wal).size - before) / (pageSize + 24) / n;
}

async function pagesPerCommit(suite: Suite): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "koinii-bench-wal-"));
  try {
    const raw = new Database(join(dir, "raw.db"));
    raw.pragma("journal_mode = WAL");
    raw.pragma("synchronous = NORMAL");
    raw.pragma("wal_autocheckpoint = 0");
    raw.exec("CREATE TABLE sentex (handle INTEGER PRIMARY KEY, context TEXT NOT NULL, sentence TEXT NOT NULL, premise INTEGER NOT NULL, creator TEXT, created_at INTEGER NOT NULL, seq INTEGER NOT NULL)");
    const ins = raw.prepare("INSERT INTO sentex VALUES (?, ?, ?, ?, ?, ?, ?)");
    const rawPages = await walPages(join(dir, "raw.db-wal"), raw.pragma("page_size", { simple: true }) as number, 100, (i) => void ins.run(i + 1, "CxBench", `(rel E${i} V${i})`, 1, "AgentBench", Date.now(), i + 1));
    raw.close();
    const kb = await openKb({ path: join(dir, "kb.db"), durability: "normal" });
    const probe = new Database(join(dir, "kb.db"), { readonly: true });
    const pageSize = probe.pragma("page_size", { simple: true }) as number;
    probe.close();
    const ours = await walPages(join(dir, "kb.db-wal"), pageSize, 100, async (i) => void (await kb.assert(`(rel E${i} V${i})`, "CxBench", { creator: "AgentBench" })));
    await kb.close();
    suite.add("raw_single_row_commit.wal_pages", { value: rawPages, unit: "pages" });
    suite.compare("assert.wal_pages", ours, "pages", "raw_single_row_commit.wal_pages", { higherIsBetter: false, note: "WAL frames appended per commit (100 commits, below the autocheckpoint); fewer is better" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  const suite = new Suite("writepath");
  const N = 20_000;
  await profiled("assert", N, async (kb) => {
    const r = generation++;
    for (let i = 0; i < N; i++) await kb.assert(`(rel R${r}E${i} V${i})`, "CxBench", { creator: "AgentBench" });
  }, suite);
  const B = 20;
  const SIZE = 1000;
  await profiled("edit_entry", B * SIZE, async (kb) => {
    const r = generation++;
    for (let b = 0; b < B; b++) {
      const add = [];
      for (let i = b * SIZE; i < (b + 1) * SIZE; i++) add.push({ sentence: `(rel R${r}E${i} V${i})`, context: "CxBench" });
      await kb.edit({ add });
    }
  }, suite);
  await pagesPerCommit(suite);
  suite.write();
}
