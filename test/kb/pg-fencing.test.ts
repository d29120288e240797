/**
 * One writer on a shared PostgreSQL database, fenced by the lease's epoch: while a writer
 * holds the lease a contender is not elected; once the lease runs out (the writer paused
 * past it, simulated by expiring the row as PostgreSQL's clock would) the contender is
 * elected with a higher epoch, rebuilds from the store and continues the log without a
 * gap; the deposed writer's next commit is refused inside its own transaction, stores
 * nothing, and stops that KB (fail-stop).
 */
import pg from "pg";
import { describe, expect, it, onTestFinished } from "vitest";
import { openKb, type Kb } from "../../src/kb/index.js";
import { PgStore, checkPgLimits, DEFAULT_PG_LIMITS } from "../../src/kb/pgstore.js";
import { DEFAULT_DAEMON_LIMITS } from "../../src/daemon/server.js";
import { CONTEXTS_DIR, believed, refusal } from "./helpers.js";
import { freshDatabase, pgQuery } from "./pg.js";

async function kbOn(store: PgStore): Promise<Kb> {
  const kb = await openKb({ path: "", store, contextsDir: CONTEXTS_DIR });
  onTestFinished(() => kb.close());
  return kb;
}

/** Another session takes the lease row FOR UPDATE (as an election does); resolves, holding it, to its release. */
async function lockLeaseRow(url: string): Promise<() => Promise<void>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query("begin");
  await c.query("select 1 from lease where name = 'writer' for update");
  return async () => {
    await c.query("rollback");
    await c.end();
  };
}

/** The lease row locked by another session for `ms`. */
async function holdLeaseRow(url: string, ms: number): Promise<void> {
  const release = await lockLeaseRow(url);
  await new Promise((r) => setTimeout(r, ms));
  await release();
}

const sentexCount = async (url: string) => Number((await pgQuery<{ n: string }>(url, "select count(*) as n from sentex"))[0]!.n);

const lease = (url: string) => pgQuery<{ holder: string; epoch: number }>(url, "select holder, epoch::int from lease where name = 'writer'");

describe("the fenced writer on PostgreSQL", () => {
  it("only the lease holder writes; after its lease runs out the next daemon takes over with a higher epoch, no gap, and the deposed writer commits nothing", async () => {
    const url = await freshDatabase();
    // A renews rarely (its renewal must not notice the loss first: its commit must refuse itself).
    const a = await PgStore.open({ url, holder: "daemon-a", limits: { leaseMs: 60_000, leaseRenewMs: 30_000 } });
    const kbA = await kbOn(a);
    expect(await lease(url)).toEqual([{ holder: "daemon-a", epoch: 1 }]);
    await kbA.assert("(dog Muffet)", "CxPets");

    // A contender is not elected while A's lease is live.
    const denied = await refusal(async () => {
      try {
        await PgStore.open({ url, holder: "daemon-c", limits: { leaseMs: 1_000, leaseRenewMs: 100 } }, AbortSignal.timeout(800));
      } catch (e) {
        throw Object.assign(new Error(String(e)), { type: "not-elected" });
      }
    });
    expect(denied.type).toBe("not-elected");
    expect(await lease(url)).toEqual([{ holder: "daemon-a", epoch: 1 }]);

    const bOpening = PgStore.open({ url, holder: "daemon-b", limits: { leaseMs: 1_000, leaseRenewMs: 100 } });
    const lastOfA = await kbA.assert("(dog Rex)", "CxPets");
    const beliefOfA = believed(kbA);
    // A is paused past its lease: as far as PostgreSQL knows, the lease ran out.
    await pgQuery(url, "update lease set expires_at = clock_timestamp() - interval '1 second' where name = 'writer'");
    const b = await bOpening;
    expect(b.epoch).toBe(2);
    expect(await lease(url)).toEqual([{ holder: "daemon-b", epoch: 2 }]);
    const kbB = await kbOn(b);
    expect(kbB.headSeq).toBe(lastOfA.seq);
    expect(believed(kbB)).toEqual(beliefOfA);

    // A wakes and writes: B's election ended A's sessions (the lease had run out), so A has
    // stopped; had it not, its transaction would see epoch 2 and refuse itself.
    expect((await refusal(() => kbA.assert("(dog Stale)", "CxPets"))).type).toBe("unavailable");
    expect(kbA.failure?.reason).toMatch(/lease of epoch 1 is lost|writer lock ended/);
    expect(await pgQuery(url, "select handle from sentex where sentence = '(dog Stale)'")).toEqual([]);

    const first = await kbB.assert("(dog Fido)", "CxPets");
    expect(first.seq).toBe(lastOfA.seq + 1);
    const seqs = (await pgQuery<{ seq: number }>(url, "select seq from event order by seq")).map((r) => Number(r.seq));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    const [head] = await pgQuery<{ value: number }>(url, "select value from meta where key = 'head_seq'");
    expect(Number(head!.value)).toBe(first.seq);
  });

  it("a writer whose renewal finds the lease taken stops (fail-stop) without waiting for a write", async () => {
    const url = await freshDatabase();
    const a = await PgStore.open({ url, holder: "daemon-a", limits: { leaseMs: 1_000, leaseRenewMs: 100 } });
    const kbA = await kbOn(a);
    const stopped = new Promise<string>((resolve) => kbA.onFailure((f) => resolve(f.reason)));
    await pgQuery(url, "update lease set holder = 'daemon-z', epoch = epoch + 1 where name = 'writer'");
    expect(await stopped).toMatch(/lease of epoch 1 is lost/);
    expect((await refusal(() => kbA.assert("(dog Rex)", "CxPets"))).type).toBe("unavailable");
  });

  it("a graceful close hands the lease over at once; the bounds are checked", async () => {
    const url = await freshDatabase();
    const a = await PgStore.open({ url, holder: "daemon-a", limits: { leaseMs: 60_000, leaseRenewMs: 30_000 } });
    await a.close();
    const b = await PgStore.open({ url, holder: "daemon-b" }, AbortSignal.timeout(30_000));
    expect(b.epoch).toBe(2);
    await b.close();
    expect(() => checkPgLimits({ ...DEFAULT_PG_LIMITS, leaseMs: 1_000, leaseRenewMs: 600 })).toThrow(/at most half of leaseMs/);
    expect(() => checkPgLimits({ ...DEFAULT_PG_LIMITS, lockTimeoutMs: 0 })).toThrow(/lockTimeoutMs must be a positive whole number/);
  });

  it("a commit under an epoch that moved on (same holder name, lease live) is refused inside its one statement and stores nothing", async () => {
    const url = await freshDatabase();
    // Renewals too rare to notice first: the commit itself must refuse.
    const a = await PgStore.open({ url, holder: "daemon-a", limits: { leaseMs: 60_000, leaseRenewMs: 30_000 } });
    const kbA = await kbOn(a);
    const kept = await kbA.assert("(dog Muffet)", "CxPets");
    // An election that named the same holder again (a daemon restarted with a fixed name): only the epoch differs.
    await pgQuery(url, "update lease set epoch = epoch + 1 where name = 'writer'");
    expect((await refusal(() => kbA.assert("(dog Stale)", "CxPets"))).type).toBe("unavailable");
    expect(kbA.failure?.reason).toMatch(/lease of epoch 1 is lost/);
    expect(await pgQuery(url, "select handle from sentex where sentence = '(dog Stale)'")).toEqual([]);
    const [head] = await pgQuery<{ value: string }>(url, "select value from meta where key = 'head_seq'");
    expect(Number(head!.value)).toBe(kept.seq);
    expect(await pgQuery(url, "select seq from event where seq > $1", [kept.seq])).toEqual([]);
  });

  it("a commit over a head another writer moved is refused and stores nothing", async () => {
    const url = await freshDatabase();
    const a = await PgStore.open({ url, holder: "daemon-a", limits: { leaseMs: 60_000, leaseRenewMs: 30_000 } });
    const kbA = await kbOn(a);
    const kept = await kbA.assert("(dog Muffet)", "CxPets");
    const rows = await sentexCount(url);
    await pgQuery(url, "update meta set value = value + 1 where key = 'head_seq'");
    expect((await refusal(() => kbA.assert("(dog Stale)", "CxPets"))).type).toBe("unavailable");
    expect(kbA.failure?.reason).toMatch(new RegExp(`head_seq is no longer ${kept.seq}`));
    expect(await sentexCount(url)).toBe(rows);
    expect(await pgQuery(url, "select seq from event where seq > $1", [kept.seq])).toEqual([]);
  });

  it("a commit extends the lease: a writer that commits is not deposed for want of a renewal", async () => {
    const url = await freshDatabase();
    const a = await PgStore.open({ url, holder: "daemon-a", limits: { leaseMs: 60_000, leaseRenewMs: 30_000 } });
    const kbA = await kbOn(a);
    await pgQuery(url, "update lease set expires_at = clock_timestamp() + interval '2 seconds' where name = 'writer'");
    await kbA.assert("(dog Muffet)", "CxPets");
    const [row] = await pgQuery<{ far: boolean }>(url, "select expires_at > clock_timestamp() + interval '30 seconds' as far from lease where name = 'writer'");
    expect(row!.far).toBe(true);
  });

  it(`an edit of ${DEFAULT_DAEMON_LIMITS.maxEditEntries} entries (the daemon's default limit) commits while renewals run into lock_timeout, and the store keeps running`, async () => {
    const url = await freshDatabase();
    // Renewals every 100 ms with a lock_timeout of 50 ms, far shorter than such a commit:
    // a renewal that waits on the commit's row lock times out, and must not stop the store.
    const limits = { leaseRenewMs: 100, lockTimeoutMs: 50 };
    const a = await PgStore.open({ url, holder: "daemon-a", limits });
    const kbA = await kbOn(a);
    const n = DEFAULT_DAEMON_LIMITS.maxEditEntries;
    const before = await sentexCount(url);
    const add = Array.from({ length: n }, (_, i) => ({ sentence: `(rel E${i} V${i})`, context: "CxPets" }));
    const edit = await kbA.edit({ add });
    expect(edit.added).toHaveLength(n);
    expect(await sentexCount(url)).toBe(before + n);
    // Several renewal periods later the store still writes.
    await new Promise((r) => setTimeout(r, 10 * limits.leaseRenewMs));
    expect(kbA.failure).toBeUndefined();
    const next = await kbA.assert("(dog Muffet)", "CxPets");
    expect(next.seq).toBe(edit.seq + 1);
    expect(await sentexCount(url)).toBe(before + n + 1);
  }, 120_000);

  it("a renewal that times out on the lease row's lock while the lease is valid by the writer's own bound does not stop the store; past the lease it does", async () => {
    const url = await freshDatabase();
    const a = await PgStore.open({ url, holder: "daemon-a", limits: { leaseMs: 3_000, leaseRenewMs: 100, lockTimeoutMs: 50 } });
    const kbA = await kbOn(a);
    // Renewals run into lock_timeout for most of a second, well within the lease.
    await holdLeaseRow(url, 800);
    expect(kbA.failure).toBeUndefined();
    await kbA.assert("(dog Muffet)", "CxPets");
    expect(kbA.failure).toBeUndefined();
    // Held past the lease: the writer can no longer know it still holds it, and stops.
    const stopped = new Promise<string>((resolve) => kbA.onFailure((f) => resolve(f.reason)));
    await holdLeaseRow(url, 4_000);
    expect(await stopped).toMatch(/lock timeout|lease of epoch 1 is lost/);
  }, 30_000);

  it("writes that arrive, each in its own event-loop turn, while a commit is in flight are committed together by the next commit", async () => {
    const url = await freshDatabase();
    const a = await PgStore.open({ url, holder: "daemon-a", limits: { leaseMs: 60_000, leaseRenewMs: 30_000 } });
    const kbA = await kbOn(a);
    const before = a.commits;
    // The first write's commit waits on the row lock; 49 more writes arrive meanwhile.
    const release = await lockLeaseRow(url);
    const writes = [];
    for (let i = 0; i < 50; i++) {
      writes.push(kbA.assert(`(dog D${i})`, "CxPets"));
      await new Promise((r) => setImmediate(r));
    }
    await release();
    const seqs = (await Promise.all(writes)).map((w) => w.seq);
    expect(seqs).toEqual(Array.from({ length: 50 }, (_, i) => seqs[0]! + i));
    expect(a.commits - before).toBe(2);
    expect(await pgQuery(url, "select seq from event where seq >= $1", [seqs[0]])).toHaveLength(50);
  });

  it("a commit waits for as many writes as the writers the last one saw, so writers answered together commit together again; a lone writer never waits", async () => {
    const url = await freshDatabase();
    // A gathering that only ends by its count: a commit that waited for its timer would time the test out.
    const a = await PgStore.open({ url, holder: "daemon-a", gatherMs: 600_000, limits: { leaseMs: 60_000, leaseRenewMs: 30_000 } });
    const kbA = await kbOn(a);
    // A lone writer: each commit carried one write, so the next one write commits at once.
    for (let i = 0; i < 3; i++) await kbA.assert(`(cat C${i})`, "CxPets");
    // Four writers in one turn: one commit of four.
    await Promise.all(Array.from({ length: 4 }, (_, i) => kbA.assert(`(dog D${i})`, "CxPets")));
    // The four come back one per event-loop turn: the first three wait for the fourth, and one commit carries them.
    const before = a.commits;
    const writes = [];
    for (let i = 0; i < 4; i++) {
      writes.push(kbA.assert(`(dog E${i})`, "CxPets"));
      await new Promise((r) => setImmediate(r));
    }
    const seqs = (await Promise.all(writes)).map((w) => w.seq);
    expect(a.commits - before).toBe(1);
    expect(seqs).toEqual(Array.from({ length: 4 }, (_, i) => seqs[0]! + i));
    expect(await pgQuery(url, "select seq from event where seq >= $1", [seqs[0]])).toHaveLength(4);
  });

  it("a gathering ends after gatherMs when fewer writers come back, and commits what it has", async () => {
    const url = await freshDatabase();
    const a = await PgStore.open({ url, holder: "daemon-a", gatherMs: 50, limits: { leaseMs: 60_000, leaseRenewMs: 30_000 } });
    const kbA = await kbOn(a);
    await Promise.all(Array.from({ length: 4 }, (_, i) => kbA.assert(`(dog D${i})`, "CxPets")));
    const before = a.commits;
    const w = await kbA.assert("(dog Alone)", "CxPets");
    expect(a.commits - before).toBe(1);
    expect(await pgQuery(url, "select 1 from event where seq = $1", [w.seq])).toHaveLength(1);
  });

  it("refuses a gatherMs that is not a whole number of milliseconds >= 0", async () => {
    const url = await freshDatabase();
    for (const gatherMs of [-1, 1.5, Number.NaN]) await expect(PgStore.open({ url, holder: "daemon-a", gatherMs })).rejects.toThrow(/gatherMs must be a whole number of milliseconds >= 0/);
  });

  /** A writer, and a follower with no polling fallback and no lease reads within a test: only NOTIFYs wake it. */
  async function writerAndFollower() {
    const url = await freshDatabase();
    const a = await PgStore.open({ url, holder: "daemon-a", limits: { leaseMs: 600_000, leaseRenewMs: 300_000 } });
    const kbA = await kbOn(a);
    await kbA.assert("(dog Muffet)", "CxPets");
    const f = await PgStore.open({ url, holder: "daemon-f", follow: true, limits: { leaseMs: 600_000, leaseRenewMs: 300_000, followPollMs: 600_000 } });
    const kbF = await kbOn(f);
    const until = async (seq: number) => {
      for (let i = 0; kbF.headSeq < seq; i++) {
        if (i > 2_000) throw new Error(`the follower stayed at seq ${kbF.headSeq}, short of ${seq}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    // The follower's pooled queries, seen (and possibly held) by `spy` before they return.
    let spy: (text: string, result: unknown) => Promise<void> = async () => {};
    const pool = (f as unknown as { pool: pg.Pool }).pool;
    const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
    pool.query = (async (text: unknown, ...rest: unknown[]) => {
      const r = await query(text, ...rest);
      if (typeof text === "string") await spy(text, r);
      return r;
    }) as typeof pool.query;
    // Once the follower applied a write made after it opened, it listens and its first pass (which reads the head) is over.
    await kbA.assert("(dog Rex)", "CxPets");
    await until(kbA.headSeq);
    return { f, kbA, kbF, until, spyOn: (fn: typeof spy) => (spy = fn) };
  }

  it("a follower woken by a NOTIFY applies up to its head without reading the head", async () => {
    const { kbA, kbF, until, spyOn } = await writerAndFollower();
    const heads: string[] = [];
    spyOn(async (text) => void (/from meta where key = 'head_seq'/.test(text) && heads.push(text)));
    for (let i = 0; i < 30; i++) await kbA.assert(`(dog D${i})`, "CxPets");
    await until(kbA.headSeq);
    expect(kbF.headSeq).toBe(kbA.headSeq);
    expect(heads).toEqual([]);
  });

  it("a follower misses no NOTIFY that arrives while it applies", async () => {
    const { f, kbA, until, spyOn } = await writerAndFollower();
    const head = kbA.headSeq;
    const knownHead = () => (f as unknown as { knownHead: number }).knownHead;
    // The follower's read of seq head+1 returns only once the NOTIFY of head+2 has reached it.
    let held = false;
    spyOn(async (text) => {
      if (held || !/from event where seq >/.test(text)) return;
      held = true;
      while (knownHead() < head + 2) await new Promise((r) => setTimeout(r, 5));
    });
    await kbA.assert("(dog D1)", "CxPets");
    await kbA.assert("(dog D2)", "CxPets");
    await until(head + 2);
    expect(held).toBe(true);
  });
});
