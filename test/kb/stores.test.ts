/**
 * The store of record's guarantees, run against both stores: the embedded SQLite file and
 * PostgreSQL (a throwaway cluster, or KOINII_TEST_PG_URL). What one store promises the
 * other must: writes round-trip, a reopen rebuilds the same state, an edit is atomic, an
 * acknowledged write is in the store (read back with the store's own client), and a
 * failing transaction stops the KB and commits nothing.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it, onTestFinished } from "vitest";
import { openKb, type Kb } from "../../src/kb/index.js";
import { PgStore } from "../../src/kb/pgstore.js";
import { SqliteStore } from "../../src/kb/store.js";
import { CONTEXTS_DIR, believed, stored, refusal, tempDir } from "./helpers.js";
import { freshDatabase, pgQuery } from "./pg.js";

/** One store under test: open a KB on it (again), and query it directly. */
interface Rig {
  open(): Promise<Kb>;
  query<R>(text: string, params?: unknown[]): Promise<R[]>;
  /** The sentexes as the store holds them at its head, read with its own client (SQLite: the checkpoint with the log's tail applied, see store.ts). */
  sentexes(): Promise<{ handle: number; sentence: string; creator: string | null; seq: number }[]>;
  /** The head seq as the store holds it (SQLite: the larger of `meta` and the newest event row that carries the counters, see store.ts). */
  headSql: string;
}

async function sqliteRig(): Promise<Rig> {
  const path = join(tempDir(), "kb.db");
  return {
    open: () => openKb({ path, contextsDir: CONTEXTS_DIR, durability: "full" }),
    query: async <R>(text: string, params: unknown[] = []) => {
      const db = new Database(path);
      try {
        const st = db.prepare(text.replace(/\$\d+/g, "?")); // our queries use $1, $2... in order
        return (st.reader ? st.all(...params) : (st.run(...params), [])) as R[];
      } finally {
        db.close();
      }
    },
    sentexes: async () => {
      const store = await SqliteStore.open(path, "normal");
      try {
        return [...store.rows()].map(([handle, , sentence, , creator, , seq]) => ({ handle, sentence, creator, seq }));
      } finally {
        await store.close();
      }
    },
    headSql: "select max((select value from meta where key = 'head_seq'), coalesce((select max(seq) from event where next_handle is not null), 0)) as value",
  };
}

async function postgresRig(): Promise<Rig> {
  const url = await freshDatabase();
  return {
    open: async () => openKb({ path: "", store: await PgStore.open({ url, limits: { leaseMs: 2_000, leaseRenewMs: 200 } }), contextsDir: CONTEXTS_DIR }),
    query: async <R>(text: string, params: unknown[] = []) => (await pgQuery(url, text, params)) as R[],
    sentexes: async () =>
      (await pgQuery<{ handle: string; sentence: string; creator: string | null; seq: string }>(url, "select handle, sentence, creator, seq from sentex order by handle")).map((r) => ({
        handle: Number(r.handle),
        sentence: r.sentence,
        creator: r.creator,
        seq: Number(r.seq),
      })),
    headSql: "select value from meta where key = 'head_seq'",
  };
}

async function opened(rig: Rig): Promise<Kb> {
  const kb = await rig.open();
  onTestFinished(() => kb.close());
  return kb;
}

describe.each([
  ["sqlite", sqliteRig],
  ["postgres", postgresRig],
] as const)("the %s store", (_name, makeRig) => {
  it("asserts, edits and retracts round-trip, and a reopen rebuilds identical state", async () => {
    const rig = await makeRig();
    const kb = await rig.open();
    const rule = await kb.assert("(implies (dog ?x) (animal ?x))", "CxPets");
    const muffet = await kb.assert("(dog Muffet)", "CxPets", { creator: "AgentAva" });
    const rex = await kb.assert("(dog Rex)", "CxPets");
    const batch = await kb.edit({ add: [{ sentence: "(cat Tom)", context: "CxPets" }, { sentence: "(not (dog Tom))", context: "CxPets", strength: "monotonic" }], remove: [rex.handle] });
    await kb.retract(muffet.handle);
    const before = { believed: believed(kb), stored: stored(kb), head: kb.headSeq, events: await kb.readEvents(rule.seq - 1, 100), why: kb.why(muffet.handle) };
    expect(before.why.reason).toBe("retracted");
    expect(before.believed).toContain("CxPets|(cat Tom)|default");
    expect(before.believed).not.toContain("CxPets|(animal Rex)|default");
    expect(before.events.map((e) => e.seq)).toEqual([rule.seq, muffet.seq, rex.seq, batch.seq, batch.seq + 1]);
    await kb.close();
    const again = await opened(rig);
    expect({ believed: believed(again), stored: stored(again), head: again.headSeq, events: await again.readEvents(rule.seq - 1, 100), why: again.why(muffet.handle) }).toEqual(before);
    // the counters too: the next write takes the next seq and a fresh handle
    const next = await again.assert("(dog Fido)", "CxPets");
    expect(next.seq).toBe(before.head + 1);
    expect(next.handle).toBeGreaterThan(Math.max(...before.events.flatMap((e) => e.added.map((a) => a.handle))));
  });

  it("an edit is atomic: one problem stores nothing, a good batch is one seq and one event", async () => {
    const rig = await makeRig();
    const kb = await opened(rig);
    await kb.assert("(dog Muffet)", "CxPets");
    const head = kb.headSeq;
    const bad = await refusal(() => kb.edit({ add: [{ sentence: "(cat Tom)", context: "CxPets" }, { sentence: "(cat", context: "CxPets" }] }));
    expect(bad.type).toBe("inadmissible");
    expect(kb.headSeq).toBe(head);
    expect((await rig.sentexes()).filter((r) => r.sentence === "(cat Tom)")).toEqual([]);
    const good = await kb.edit({ add: [{ sentence: "(cat Tom)", context: "CxPets" }, { sentence: "(cat Kit)", context: "CxPets" }] });
    expect(good.seq).toBe(head + 1);
    const rows = (await rig.sentexes()).filter((r) => r.sentence === "(cat Tom)" || r.sentence === "(cat Kit)");
    expect(rows.map((r) => r.seq)).toEqual([good.seq, good.seq]);
    expect((await rig.query<{ seq: number }>("select seq from event where seq > $1", [head])).map((r) => Number(r.seq))).toEqual([good.seq]);
  });

  it("an acknowledged write is committed: its row, its event and the head are in the store", async () => {
    const rig = await makeRig();
    const kb = await opened(rig);
    const writes = await Promise.all(["Ann", "Bob", "Cy", "Dee"].map((n) => kb.assert(`(person ${n})`, "CxPets", { creator: "AgentAva" })));
    const rows = await rig.sentexes();
    for (const w of writes) {
      const row = rows.find((r) => r.handle === w.handle);
      expect({ seq: row?.seq, creator: row?.creator }).toEqual({ seq: w.seq, creator: "AgentAva" });
      expect(await rig.query("select seq from event where seq = $1", [w.seq])).toHaveLength(1);
    }
    const [head] = await rig.query<{ value: number }>(rig.headSql);
    expect(Number(head!.value)).toBe(Math.max(...writes.map((w) => w.seq)));
  });

  it("a failing transaction stops the KB: the write is refused, nothing of it is stored, later writes are refused", async () => {
    const rig = await makeRig();
    const kb = await opened(rig);
    await kb.assert("(dog Muffet)", "CxPets");
    const head = kb.headSeq;
    // Another client takes the next event seq: the KB's next group fails on its primary key.
    await rig.query("insert into event (seq, body) values ($1, '{}')", [head + 1]);
    const failures: string[] = [];
    kb.onFailure((f) => failures.push(f.reason));
    expect((await refusal(() => kb.assert("(dog Rex)", "CxPets"))).type).toBe("unavailable");
    expect(failures).toHaveLength(1);
    expect((await rig.sentexes()).filter((r) => r.sentence === "(dog Rex)")).toEqual([]);
    const [meta] = await rig.query<{ value: number }>(rig.headSql);
    expect(Number(meta!.value)).toBe(head);
    expect((await refusal(() => kb.assert("(dog Fido)", "CxPets"))).type).toBe("unavailable");
    expect((await refusal(() => kb.read(() => kb.size))).type).toBe("unavailable");
  });
});
