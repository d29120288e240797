/**
 * The SQLite store's counters (`next_handle`, `head_seq`) without a `meta` update per
 * group: a write's event row carries them, `meta` is written only by a group whose newest
 * event does not (the reopen's repairs, a prune), and the open takes the larger of the two.
 * Pinned here: a reopen restores both counters exactly on every path (writes, retracts,
 * writes that take no seq, a prune that empties the log, a file written before migration
 * 008), and an ordinary write's commit leaves `meta` alone.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openKb, type Kb } from "../../src/kb/index.js";
import { tempDir } from "./helpers.js";

const counters = (kb: Kb) => ({ nextHandle: kb.engine.nextHandle, headSeq: kb.engine.headSeq });

function metaRows(path: string): Record<string, number> {
  const db = new Database(path, { readonly: true });
  try {
    return Object.fromEntries((db.prepare("select key, value from meta").all() as { key: string; value: number }[]).map((r) => [r.key, r.value]));
  } finally {
    db.close();
  }
}

/** Reopen `path` and answer the counters the open found. */
async function reopened(path: string, opts: { feedRetentionEvents?: number } = {}): Promise<{ nextHandle: number; headSeq: number }> {
  const kb = await openKb({ path, durability: "normal", ...opts });
  try {
    return counters(kb);
  } finally {
    await kb.close();
  }
}

describe("the SQLite store's counters", () => {
  it("an ordinary write's commit leaves meta alone: its event row carries the counters, and a reopen restores them", async () => {
    const path = join(tempDir(), "kb.db");
    const kb = await openKb({ path, durability: "normal" });
    const initial = metaRows(path);
    const a = await kb.assert("(dog Muffet)", "CxPets");
    await kb.edit({ add: [{ sentence: "(dog Rex)", context: "CxPets" }, { sentence: "(cat Tom)", context: "CxPets" }] });
    await kb.retract(a.handle);
    expect(metaRows(path)).toEqual(initial);
    const live = counters(kb);
    await kb.close();
    expect(await reopened(path)).toEqual(live);
  });

  it("any run of asserts, repeats, edits and retracts reopens with the exact counters, and the next handle is never reused", async () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant("assert" as const), n: fc.integer({ min: 0, max: 5 }) }),
      fc.record({ k: fc.constant("edit" as const), ns: fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 3 }) }),
      fc.record({ k: fc.constant("retract" as const), i: fc.nat() }),
      fc.record({ k: fc.constant("reopen" as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
        const path = join(tempDir(), "kb.db");
        let kb = await openKb({ path, durability: "normal" });
        const handles: number[] = [];
        try {
          for (const o of ops) {
            if (o.k === "assert") handles.push((await kb.assert(`(dog D${o.n})`, "CxPets")).handle);
            else if (o.k === "edit") {
              const add = [...new Set(o.ns)].map((n) => ({ sentence: `(cat C${n})`, context: "CxPets" }));
              handles.push(...(await kb.edit({ add })).added);
            } else if (o.k === "retract") {
              const live = handles.filter((h) => kb.engine.index.byHandle.has(h));
              if (live.length) await kb.retract(live[o.i % live.length]!);
            } else {
              const live = counters(kb);
              await kb.close();
              kb = await openKb({ path, durability: "normal" });
              expect(counters(kb)).toEqual(live);
            }
          }
          const live = counters(kb);
          await kb.close();
          kb = await openKb({ path, durability: "normal" });
          expect(counters(kb)).toEqual(live);
          const fresh = await kb.assert("(bird Fresh)", "CxPets");
          expect(fresh.handle).toBe(live.nextHandle);
          expect(fresh.seq).toBe(live.headSeq + 1);
        } finally {
          await kb.close();
        }
      }),
      { numRuns: 25 },
    );
  });

  it("a group that prunes the whole event log writes meta, so a reopen still restores the counters", async () => {
    const path = join(tempDir(), "kb.db");
    // Retention 0: the prune that runs every 1 024 writes deletes every event, the newest too
    // (a checkpoint per event: the prune never passes the checkpoint).
    const kb = await openKb({ path, durability: "normal", feedRetentionEvents: 0, checkpoint: { events: 1 } });
    for (let i = 0; i < 1024; i++) await kb.assert(`(dog D${i})`, "CxPets");
    const live = counters(kb);
    expect(kb.oldestRetainedSeq()).toBe(live.headSeq + 1); // the log is empty
    expect(metaRows(path)).toEqual({ next_handle: live.nextHandle, head_seq: live.headSeq, checkpoint_seq: live.headSeq });
    await kb.close();
    expect(await reopened(path)).toEqual(live);
  });

  it("meta ahead of the newest event row (as a group that wrote no event leaves it) wins at the reopen", async () => {
    const path = join(tempDir(), "kb.db");
    const kb = await openKb({ path, durability: "normal" });
    await kb.assert("(dog Muffet)", "CxPets");
    const live = counters(kb);
    await kb.close();
    // What the reopen's repairs leave: handles minted, no event, counters in meta only.
    const db = new Database(path);
    db.prepare("update meta set value = ? where key = ?").run(live.nextHandle + 5, "next_handle");
    db.prepare("update meta set value = ? where key = ?").run(live.headSeq, "head_seq");
    db.close();
    expect(await reopened(path)).toEqual({ nextHandle: live.nextHandle + 5, headSeq: live.headSeq });
  });

  it("a file written before migration 008 (events without next_handle, meta written by every group) opens with its exact counters and upgrades", async () => {
    const path = join(tempDir(), "kb.db");
    // A checkpoint per event: every row is in the tables, as before migration 009.
    const kb = await openKb({ path, durability: "normal", checkpoint: { events: 1 } });
    const a = await kb.assert("(dog Muffet)", "CxPets");
    await kb.assert("(dog Rex)", "CxPets");
    await kb.retract(a.handle);
    const live = counters(kb);
    const events = await kb.readEvents(0, 100);
    await kb.close();
    // The previous schema, as the previous code left it: no column, no migration row, meta exact.
    const db = new Database(path);
    db.exec("alter table event drop column next_handle");
    db.exec("alter table event drop column changes");
    db.exec("drop table segment");
    db.prepare("delete from kysely_migration where name in (?, ?, ?)").run("008-sqlite-event-counters", "009-sqlite-log-of-record", "010-sqlite-checkpoint-segments");
    db.prepare("delete from meta where key = ?").run("checkpoint_seq");
    db.prepare("update meta set value = ? where key = ?").run(live.nextHandle, "next_handle");
    db.prepare("update meta set value = ? where key = ?").run(live.headSeq, "head_seq");
    db.close();
    const again = await openKb({ path, durability: "normal" });
    expect(counters(again)).toEqual(live);
    expect(await again.readEvents(0, 100)).toEqual(events);
    const next = await again.assert("(dog Fido)", "CxPets");
    expect(next).toMatchObject({ handle: live.nextHandle, seq: live.headSeq + 1 });
    const after = counters(again);
    await again.close();
    expect(await reopened(path)).toEqual(after);
  });
});
