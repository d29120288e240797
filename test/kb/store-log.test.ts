/**
 * The SQLite event log as the store of record and the sentex table as its checkpoint
 * (store.ts, rowlog.ts), on real files. Pinned here: for any program of writes, closes and
 * reopens under small checkpoint thresholds, the rows, the tombstones and the feed equal
 * those of a store that checkpoints every event, at every step and after every reopen; a
 * single assert commits about one WAL page; a checkpoint that fails stops the store and the
 * reopen shows exactly the committed writes; the prune never passes the checkpoint.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openKb, type Kb, type KbOptions } from "../../src/kb/index.js";
import { DEFAULT_CHECKPOINT, SqliteStore, type CheckpointLimits } from "../../src/kb/store.js";
import { refusal, tempDir } from "./helpers.js";

const sqlite = (kb: Kb) => kb.store as SqliteStore;

/** Rows in one table of the file, read through a connection of its own. */
function countRows(path: string, table: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** Run SQL on the file through a connection of its own (a trigger that injects a failure, and its removal). */
function execOnFile(path: string, text: string): void {
  const db = new Database(path);
  try {
    db.exec(text);
  } finally {
    db.close();
  }
}

/**
 * The rows the engine holds in memory, as the store should hold them: an oracle that shares
 * no code with the store. Derived rows too carry their creator and time (a premise retracted
 * while still derived keeps them, in memory, in its row and across a reopen).
 */
const engineRows = (kb: Kb) => [...kb.engine.index.byHandle.values()].map((n) => [n.h, n.ctx, n.text, n.premise, n.creator, n.createdAt, n.seq]);

/** What a reopen would see: the rows as of the head, every handle's tombstone, the feed. */
async function state(kb: Kb) {
  const store = sqlite(kb);
  const rows = [...store.rows()];
  const tombstones: Record<number, unknown> = {};
  for (let h = 1; h < kb.engine.nextHandle; h++) {
    const t = store.tombstone(h);
    if (t) tombstones[h] = t;
  }
  return { rows, rowCount: store.rowCount(), tombstones, feed: await kb.readEvents(0, 100_000), nextHandle: kb.engine.nextHandle, headSeq: kb.headSeq };
}

type Op =
  | { k: "assert"; s: number; mono: boolean }
  | { k: "burst"; ss: number[] }
  | { k: "edit"; add: number[]; remove: number[] }
  | { k: "retract"; i: number }
  | { k: "reopen"; limits: Partial<CheckpointLimits> };

/** Facts, a rule that derives from them, and what it derives (asserted: a derived row becomes a premise, an update). */
const SENTENCES = ["(implies (dog ?x) (animal ?x))", "(dog Rex)", "(dog Ann)", "(animal Rex)", "(animal Ann)", "(not (animal Ann))", "(cat Tom)", "(dog Tom)"];
const limitsArb = fc.record(
  { events: fc.integer({ min: 1, max: 4 }), rows: fc.integer({ min: 1, max: 8 }), eventRows: fc.integer({ min: 1, max: 4 }), segmentRows: fc.integer({ min: 1, max: 3 }) },
  { requiredKeys: [] },
);
const sentence = fc.nat({ max: SENTENCES.length - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ k: fc.constant("assert" as const), s: sentence, mono: fc.boolean() }),
  fc.record({ k: fc.constant("burst" as const), ss: fc.array(sentence, { minLength: 2, maxLength: 4 }) }),
  fc.record({ k: fc.constant("edit" as const), add: fc.array(sentence, { maxLength: 6 }), remove: fc.array(fc.nat(), { maxLength: 2 }) }),
  fc.record({ k: fc.constant("retract" as const), i: fc.nat() }),
  fc.record({ k: fc.constant("reopen" as const), limits: limitsArb }),
);

/** Run one op on a KB; handles are the same in both KBs (same writes, same order), so an index picks the same one. */
async function run(kb: Kb, op: Op): Promise<void> {
  const live = () => [...kb.engine.index.byHandle.keys()].filter((h) => kb.engine.index.byHandle.get(h)!.premise !== 0);
  const pick = (i: number) => {
    const hs = live();
    return hs.length ? hs[i % hs.length] : undefined;
  };
  if (op.k === "assert") await kb.assert(SENTENCES[op.s]!, "CxPets", { strength: op.mono ? "monotonic" : "default", creator: "AgentAva" });
  else if (op.k === "burst") await Promise.all(op.ss.map((s) => kb.assert(SENTENCES[s]!, "CxPets"))); // one group, several events
  else if (op.k === "edit") {
    const remove = [...new Set(op.remove.map(pick).filter((h): h is number => h !== undefined))];
    if (op.add.length || remove.length) await kb.edit({ add: op.add.map((s) => ({ sentence: SENTENCES[s]!, context: "CxOther" })), remove });
  } else if (op.k === "retract") {
    const h = pick(op.i);
    if (h !== undefined) await kb.retract(h);
  }
}

describe("the SQLite log of record", () => {
  it("any program of writes, closes and reopens under small checkpoint thresholds keeps the rows, tombstones and feed of a checkpoint per event", async () => {
    await fc.assert(
      fc.asyncProperty(limitsArb, fc.array(opArb, { minLength: 1, maxLength: 14 }), async (first, ops) => {
        const dir = tempDir();
        const clock = { t: 1_000 };
        const open = (name: string, checkpoint: Partial<CheckpointLimits>) => openKb({ path: join(dir, name), durability: "normal", now: () => clock.t, checkpoint });
        const every = { events: 1 };
        let kb = await open("log.db", first);
        let ref = await open("ref.db", every);
        try {
          for (const op of ops) {
            clock.t += 7;
            if (op.k === "reopen") {
              await kb.close();
              await ref.close();
              kb = await open("log.db", op.limits);
              ref = await open("ref.db", every);
            } else {
              await run(kb, op);
              await run(ref, op);
            }
            const [got, want] = [await state(kb), await state(ref)];
            expect(got).toEqual(want);
            expect(got.rows).toEqual(engineRows(kb));
            expect(got.rowCount).toBe(got.rows.length);
            // the reference checkpoints every event: its tail is empty
            expect(sqlite(ref).checkpointSeq).toBe(ref.headSeq);
          }
          await kb.close();
          kb = await open("log.db", DEFAULT_CHECKPOINT);
          await ref.close();
          ref = await open("ref.db", every);
          expect(await state(kb)).toEqual(await state(ref));
        } finally {
          await kb.close();
          await ref.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it("a single assert commits about one WAL page (the event row carries its sentex row)", async () => {
    const path = join(tempDir(), "kb.db");
    const kb = await openKb({ path, durability: "normal" });
    try {
      const db = sqlite(kb).db;
      db.pragma("wal_autocheckpoint = 0"); // the WAL only grows: its frames are the commits' pages
      for (let i = 0; i < 50; i++) await kb.assert(`(dog Warm${i})`, "CxPets");
      db.pragma("wal_checkpoint(TRUNCATE)");
      const pageSize = db.pragma("page_size", { simple: true }) as number;
      const commits = sqlite(kb).commits;
      const n = 300; // fewer than a checkpoint's 1 000 events
      for (let i = 0; i < n; i++) await kb.assert(`(dog D${i})`, "CxPets");
      expect(sqlite(kb).commits - commits).toBe(n);
      const frames = (statSync(`${path}-wal`).size - 32) / (pageSize + 24);
      console.log(`WAL pages per single assert: ${(frames / n).toFixed(3)}`);
      expect(frames / n).toBeGreaterThanOrEqual(1);
      expect(frames / n).toBeLessThan(1.2);
    } finally {
      await kb.close();
    }
  });

  it("an event whose row changes are its added records' inserts logs them once (AS_ADDED); any other change is logged as JSON, and a reopen rebuilds both", async () => {
    const path = join(tempDir(), "kb.db");
    const opts = { path, durability: "normal" as const };
    const kb = await openKb(opts);
    let before: Awaited<ReturnType<typeof state>>;
    try {
      await kb.assert("(dog Rex)", "CxPets", { creator: "AgentAva" }); // a premise: its insert is its added record
      await kb.assert("(dog Ann)", "CxPets", { strength: "monotonic" }); // premise mark 2
      await kb.edit({ add: [{ sentence: "(cat Tom)", context: "CxPets" }, { sentence: "(cat Kit)", context: "CxPets" }] });
      await kb.assert("(implies (dog ?x) (animal ?x))", "CxPets"); // derives two rows: three inserts, all added
      const rex = kb.match("(dog Rex)", "CxPets")[0]!.handle;
      await kb.retract(rex); // a delete (and its consequences' deletes): JSON
      await kb.assert("(animal Ann)", "CxPets"); // an update of a derived row to a premise: JSON
      before = await state(kb);
      expect(sqlite(kb).checkpointSeq).toBeLessThan(kb.headSeq); // all of it is in the log's tail
    } finally {
      await kb.close();
    }
    const db = new Database(path, { readonly: true });
    const logged = db.prepare("select changes from event where seq > (select value from meta where key = 'checkpoint_seq') and changes is not null order by seq").all() as { changes: string }[];
    db.close();
    expect(logged.map((r) => (r.changes === "+" ? "+" : JSON.parse(r.changes)[0]))).toEqual(["+", "+", "+", "+", 2, 1]);
    const again = await openKb(opts);
    try {
      expect(await state(again)).toEqual(before);
      expect(engineRows(again).sort((a, b) => (a[0] as number) - (b[0] as number))).toEqual(before.rows);
    } finally {
      await again.close();
    }
  });

  it("an edit's rows are kept in segments of segmentRows rows, not a sentex row each; an update to one moves its segment to the table", async () => {
    const path = join(tempDir(), "kb.db");
    const count = (table: string) => countRows(path, table);
    let kb = await openKb({ path, durability: "normal", checkpoint: { segmentRows: 100 } });
    try {
      const edit = await kb.edit({ add: Array.from({ length: 250 }, (_, i) => ({ sentence: `(rel E${i} V${i})`, context: "CxBench" })) });
      expect([count("segment"), count("sentex")]).toEqual([3, 0]); // 100 + 100 + 50
      const rows = [...sqlite(kb).rows()];
      expect(rows.map((r) => r[0])).toEqual(edit.added);
      expect(rows).toEqual(engineRows(kb));
      await kb.assert("(rel E120 V120)", "CxBench", { strength: "monotonic" }); // in the second segment: its premise mark changes
      await kb.edit({ add: Array.from({ length: 70 }, (_, i) => ({ sentence: `(rel F${i} W${i})`, context: "CxBench" })) }); // checkpoints: the update reaches the tables
      expect([count("segment"), count("sentex")]).toEqual([3, 100]); // the first, the third and the new one; the second's 100 rows
      expect([...sqlite(kb).rows()]).toEqual(engineRows(kb));
      expect(sqlite(kb).rowCount()).toBe(250 + 70);
      const before = engineRows(kb);
      await kb.close();
      kb = await openKb({ path, durability: "normal", checkpoint: { segmentRows: 100 } });
      expect(engineRows(kb)).toEqual(before);
      expect(kb.sentex(edit.added[120]!)!.strength).toBe("monotonic");
    } finally {
      await kb.close();
    }
  });

  it("rows removed from a segment leave it written again without them, or gone when none is left; nothing moves to the table", async () => {
    const path = join(tempDir(), "kb.db");
    const count = (table: string) => countRows(path, table);
    const checkpoint = { segmentRows: 100 };
    let kb = await openKb({ path, durability: "normal", checkpoint });
    try {
      const edit = await kb.edit({ add: Array.from({ length: 250 }, (_, i) => ({ sentence: `(rel E${i} V${i})`, context: "CxBench" })) });
      expect([count("segment"), count("sentex")]).toEqual([3, 0]); // 100 + 100 + 50
      // A large write removes the whole first segment and half the second: written to the tables at once.
      await kb.edit({ remove: edit.added.slice(0, 150) });
      expect([count("segment"), count("sentex"), count("tombstone")]).toEqual([2, 0, 150]); // the second's other 50, the third
      expect([...sqlite(kb).rows()]).toEqual(engineRows(kb));
      // A single retract rides in the log until the next checkpoint, which removes it from its segment.
      await kb.retract(edit.added[210]!);
      await kb.edit({ add: Array.from({ length: 70 }, (_, i) => ({ sentence: `(rel F${i} W${i})`, context: "CxBench" })) });
      expect([count("segment"), count("sentex"), count("tombstone")]).toEqual([3, 0, 151]); // 50, 49 and the new 70
      expect([...sqlite(kb).rows()]).toEqual(engineRows(kb));
      expect(sqlite(kb).rowCount()).toBe(250 - 151 + 70);
      const before = engineRows(kb);
      await kb.close();
      kb = await openKb({ path, durability: "normal", checkpoint });
      expect(engineRows(kb)).toEqual(before);
      expect([kb.why(edit.added[0]!).reason, kb.why(edit.added[149]!).reason, kb.why(edit.added[210]!).reason]).toEqual(["retracted", "retracted", "retracted"]);
    } finally {
      await kb.close();
    }
  });

  it("a premise retracted while still derived keeps its creator and time, in memory and across a reopen (first writer wins)", async () => {
    const clock = { t: 5_000 };
    // a checkpoint per event: the reopen reads the row from the table; the default: from the log's tail
    for (const checkpoint of [{ events: 1 }, {}]) {
      const path = join(tempDir(), "kb.db");
      let kb = await openKb({ path, durability: "normal", now: () => clock.t, checkpoint });
      try {
        await kb.assert("(implies (dog ?x) (animal ?x))", "CxPets");
        clock.t = 6_000;
        const { handle } = await kb.assert("(animal Rex)", "CxPets", { creator: "AgentAva" });
        clock.t = 7_000;
        await kb.assert("(dog Rex)", "CxPets", { creator: "AgentBo" }); // now derived too
        clock.t = 8_000;
        await kb.retract(handle); // no longer a premise, still derived
        const live = kb.sentex(handle)!;
        expect([live.derived, live.creator, live.createdAt]).toEqual([true, "AgentAva", 6_000]);
        await kb.close();
        kb = await openKb({ path, durability: "normal", now: () => clock.t, checkpoint });
        expect(kb.sentex(handle)).toEqual(live);
        clock.t = 9_000;
        await kb.assert("(animal Rex)", "CxPets", { creator: "AgentCy" }); // a premise again: the first writer stays
        expect([kb.sentex(handle)!.creator, kb.sentex(handle)!.createdAt]).toEqual(["AgentAva", 6_000]);
      } finally {
        await kb.close();
      }
    }
  });

  it("a checkpoint that fails stops the store, and the reopen shows exactly the committed writes", async () => {
    const path = join(tempDir(), "kb.db");
    const opts: KbOptions = { path, durability: "normal", now: () => 5_000, checkpoint: { events: 4 } };
    const kb = await openKb(opts);
    const first = await kb.assert("(dog Rex)", "CxPets"); // the open's group wrote no event: this starts the count
    const committed = [first, await kb.assert("(dog Ann)", "CxPets")];
    const gone = await kb.retract(first.handle);
    const before = await state(kb);
    expect(sqlite(kb).checkpointSeq).toBeLessThan(kb.headSeq); // these live in the log's tail
    // The next group reaches the threshold and checkpoints; its first tombstone insert fails.
    execOnFile(path, "create trigger refuse before insert on tombstone begin select raise(abort, 'injected checkpoint failure'); end");
    const failures: string[] = [];
    kb.onFailure((f) => failures.push(f.reason));
    const ann = committed[1]!.handle;
    expect((await refusal(() => kb.retract(ann))).type).toBe("unavailable");
    expect(failures).toEqual([expect.stringContaining("injected checkpoint failure")]);
    // K12: the stopped store's memory is its file's: the failed group's changes left no trace in it
    const store = sqlite(kb);
    expect({ rows: [...store.rows()], rowCount: store.rowCount(), tombstone: store.tombstone(ann) }).toEqual({ rows: before.rows, rowCount: before.rowCount, tombstone: undefined });
    expect((await refusal(() => kb.assert("(dog Fido)", "CxPets"))).type).toBe("unavailable");
    await kb.close();
    execOnFile(path, "drop trigger refuse");
    const again = await openKb(opts);
    try {
      expect(await state(again)).toEqual(before);
      expect(again.why(first.handle).reason).toBe("retracted");
      expect(gone.removed).toEqual([first.handle]);
      expect(again.sentex(ann)?.sentence).toBe("(dog Ann)");
      // the refused write is nowhere; the next write takes the seq it would have had
      expect((await again.retract(ann)).seq).toBe(before.headSeq + 1);
    } finally {
      await again.close();
    }
  });

  it("a lone write's group is one statement in autocommit; a group of several is one transaction, so a failing later event row leaves none of it", async () => {
    const path = join(tempDir(), "kb.db");
    const opts: KbOptions = { path, durability: "normal" };
    const kb = await openKb(opts);
    // Count the store's BEGINs (its statements are private: replace the one it runs).
    const stmts = (sqlite(kb) as unknown as { stmts: Record<string, { run(): unknown }> }).stmts;
    const realBegin = stmts.begin!;
    let begins = 0;
    stmts.begin = { run: () => (begins++, realBegin.run()) };
    await kb.assert("(dog Rex)", "CxPets");
    expect(begins, "no BEGIN for a group whose only statement is its event row").toBe(0);
    const before = await state(kb);
    execOnFile(path, "create trigger refuse before insert on event when new.body like '%(dog Ann)%' begin select raise(abort, 'injected event failure'); end");
    // One turn, two writes: the first event row (held back while alone) goes inside the group's transaction.
    const both = await Promise.allSettled([kb.assert("(dog Bo)", "CxPets"), kb.assert("(dog Ann)", "CxPets")]);
    expect(begins, "the second event row began the transaction").toBe(1);
    expect(both.map((r) => (r.status === "rejected" ? (r.reason as { type: string }).type : "fulfilled"))).toEqual(["unavailable", "unavailable"]);
    await kb.close();
    execOnFile(path, "drop trigger refuse");
    const again = await openKb(opts);
    try {
      expect(await state(again)).toEqual(before);
    } finally {
      await again.close();
    }
  });

  it("the prune never passes the checkpoint: the tail's events stay, and the reopen has every row", async () => {
    const path = join(tempDir(), "kb.db");
    // Retention 0 asks the prune (every 1 024 writes) for every event; no checkpoint comes before it.
    const opts: KbOptions = { path, durability: "normal", feedRetentionEvents: 0, checkpoint: { events: 5_000, rows: 50_000 } };
    const kb = await openKb(opts);
    const n = 1_030;
    for (let i = 0; i < n; i++) await kb.assert(`(dog D${i})`, "CxPets");
    const store = sqlite(kb);
    expect(store.checkpointSeq).toBe(0);
    expect(kb.oldestRetainedSeq()).toBe(store.checkpointSeq + 1);
    const before = await state(kb);
    await kb.close();
    const again = await openKb(opts);
    try {
      expect(await state(again)).toEqual(before);
      expect(again.size).toBe(n);
    } finally {
      await again.close();
    }
  });
});
