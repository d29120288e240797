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
 *   event encoding   the rest of Kb.applyAndPersist: the rows and the event object built,
 *                    JSON.stringify of the event (a V8 builtin, so it has no frame of its own)
 *   inserts          Store.insertSentex + Store.insertEvent + Store.setMeta
 *   BEGIN, COMMIT    Store.begin, Store.commit
 *
 * The rest of the wall time is the await, the turn that closes the group and the loop.
 */
import { Session } from "node:inspector/promises";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
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
  ["inserts", ["insertSentex@store.js", "insertEvent@store.js", "setMeta@store.js"]],
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
    const times = inclusive(file, [...STAGES.flatMap(([, k]) => k), "applyAndPersist@kb.js"]);
    const stage = (keys: string[]) => keys.reduce((n, k) => n + times.get(k)!, 0) / entries;
    suite.add(`${label}.wall_per_entry`, { value: wallUs, unit: "us", note: `${entries} entries` });
    const share = (us: number) => `${((us / wallUs) * 100).toFixed(0)}% of wall`;
    for (const [name, keys] of STAGES) suite.add(`${label}.${name}`, { value: stage(keys), unit: "us", note: share(stage(keys)) });
    const within = ["apply@engine.js", "record@kb.js", "insertSentex@store.js", "insertEvent@store.js", "setMeta@store.js"];
    const encoding = stage(["applyAndPersist@kb.js"]) - stage(within);
    suite.add(`${label}.event_encoding`, { value: encoding, unit: "us", note: `${share(encoding)}; applyAndPersist less the engine, record and inserts` });
  } finally {
    session.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
}

let generation = 0;

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
  suite.write();
}
