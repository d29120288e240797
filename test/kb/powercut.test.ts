/**
 * A power cut, simulated at the store's fsync seam against a real SQLite file: the disk
 * keeps only what an fsync that has returned covered. The seam snapshots the WAL's bytes
 * when each fsync is issued and promotes that snapshot to "on the platter" when the fsync
 * returns; at a random moment the power goes, and the store that survives is the main file
 * (checkpoints are off, so it does not change) plus the last promoted WAL snapshot.
 *
 * K8: at `full` durability every acknowledged write survives that cut. The same harness
 * run at `normal` (acknowledged at COMMIT, before any fsync) loses acknowledged writes,
 * which shows the harness can see a loss: removing the fsync, or answering before it
 * returns, turns the `full` test red.
 */
import { fsync, fsyncSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { openKb, type Durability, type FsyncFn } from "../../src/kb/index.js";
import { SqliteStore } from "../../src/kb/store.js";
import { tempDir } from "./helpers.js";

interface CutResult {
  acked: { handle: number; seq: number; sentence: string }[];
  survived: Set<string>;
  /** The store's own fsync counts (how many ran inline, for a lone writer). */
  fsyncs: { count: number; inline: number } | undefined;
}

/** Run `writes` concurrent-ish asserts, cut the power after `cutAfterAcks` acknowledgements, reopen what the disk kept. */
async function runUntilCut(durability: Durability, writes: number, cutAfterAcks: number, burst: number): Promise<CutResult> {
  const dir = tempDir();
  const path = join(dir, "kb.db");
  const wal = `${path}-wal`;
  let platter: Buffer | undefined; // the WAL as the disk holds it: what the last returned fsync covered
  const seam: FsyncFn = (fd, cb) => {
    const issued = existsSync(wal) ? readFileSync(wal) : Buffer.alloc(0);
    fsync(fd, (err) => {
      if (!err) platter = issued;
      cb(err);
    });
  };
  // A lone writer's fsync runs inline (walsync.ts): the same disk, called synchronously.
  const seamSync = (fd: number): void => {
    const issued = existsSync(wal) ? readFileSync(wal) : Buffer.alloc(0);
    fsyncSync(fd);
    platter = issued;
  };
  // Its bound is wide: the seam's own copy of the WAL must not send fsyncs to the thread pool.
  const store = await SqliteStore.open(path, durability, { fsync: seam, fsyncSync: seamSync, inlineFsyncMaxMs: 60_000 });
  const kb = await openKb({ path, durability, store });
  store.db.pragma("wal_autocheckpoint = 0"); // the main file stays as it is; the WAL holds every write
  store.db.pragma("wal_checkpoint(TRUNCATE)"); // start from a main file that holds the schema, an empty WAL
  platter = Buffer.alloc(0);
  const acked: CutResult["acked"] = [];
  let cut: { main: Buffer; wal: Buffer } | undefined;
  const cutNow = () => {
    cut ??= { main: readFileSync(path), wal: platter ?? Buffer.alloc(0) };
  };
  let next = 0;
  const one = async (): Promise<void> => {
    while (next < writes && !cut) {
      const sentence = `(reading Sensor${next++} Value)`;
      const r = await kb.assert(sentence, "CxPlant");
      if (cut) return; // answered after the cut: the caller never heard it
      acked.push({ handle: r.handle, seq: r.seq, sentence });
      if (acked.length >= cutAfterAcks) cutNow();
    }
  };
  await Promise.all(Array.from({ length: burst }, one));
  cutNow();
  const fsyncs = store.walFsyncs;
  await kb.close();
  const after = join(dir, "after.db");
  writeFileSync(after, cut!.main);
  if (cut!.wal.length) writeFileSync(`${after}-wal`, cut!.wal);
  const survivor = await openKb({ path: after, durability: "normal" });
  const survived = new Set(survivor.match("(reading ?s ?v)", "CxPlant").map((s) => s.sentence));
  await survivor.close();
  return { acked, survived, fsyncs };
}

describe("a power cut keeps every acknowledged write at full durability (K8)", () => {
  it("property: whatever the burst and the moment of the cut, every write acknowledged before it survives", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 8 })), fc.integer({ min: 1, max: 60 }), async (burst, cutAfter) => {
        const { acked, survived, fsyncs } = await runUntilCut("full", 80, cutAfter, burst);
        expect(acked.length).toBeGreaterThanOrEqual(Math.min(cutAfter, 80));
        // A lone writer's fsyncs ran inline, through the same simulated disk.
        if (burst === 1) expect([fsyncs!.inline > 0, fsyncs!.inline]).toEqual([true, fsyncs!.count]);
        const lost = acked.filter((a) => !survived.has(a.sentence));
        expect(lost, `acknowledged but lost in the cut: ${lost.map((l) => l.seq).join(", ")}`).toEqual([]);
      }),
      { numRuns: 15 },
    );
  });

  it("the harness sees a loss: at normal durability (answered at COMMIT, before the fsync) acknowledged writes are lost", async () => {
    let lostSomewhere = 0;
    for (let i = 0; i < 5 && lostSomewhere === 0; i++) {
      const { acked, survived } = await runUntilCut("normal", 60, 40, 4);
      lostSomewhere += acked.filter((a) => !survived.has(a.sentence)).length;
    }
    expect(lostSomewhere).toBeGreaterThan(0);
  });
});
