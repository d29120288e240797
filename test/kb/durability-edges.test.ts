/**
 * The promises at the store's edges (K11, K12), in-process against a real SQLite file at
 * `full` durability, with the WAL fsync held or failed through the store's fsync seam:
 *
 *  - a reader never sees a write whose fsync has not returned (kb.read, the daemon's read
 *    routes, the local medium), and every read names the durable seq it reflects;
 *  - a store failure (a statement after engine.apply, a failed fsync) or a broken invariant
 *    stops the KB: the failing write and every later one is `unavailable`, reads are
 *    refused, /health is 503 with the reason, and what the store holds on reopen is exactly
 *    what was acknowledged.
 */
import { fsync, fsyncSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { join } from "node:path";
import { describe, it, expect } from "vitest";
import { openKb, type Kb, type FsyncFn } from "../../src/kb/index.js";
import { createServer } from "../../src/daemon/index.js";
import { local } from "../../src/channel/index.js";
import { tempDir, CONTEXTS_DIR } from "./helpers.js";
import { pino } from "pino";

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

/** An fsync seam the test controls: `hold` parks every fsync until `release` (or `failNext`). */
function heldFsync() {
  const parked: ((err: NodeJS.ErrnoException | null) => void)[] = [];
  let holding = false;
  let failure: NodeJS.ErrnoException | undefined;
  const fn: FsyncFn = (fd, cb) => {
    if (failure) return cb(failure);
    if (!holding) return fsync(fd, cb);
    parked.push((err) => (err ? cb(err) : fsync(fd, cb)));
  };
  return {
    fn,
    hold: () => (holding = true),
    get parked() {
      return parked.length;
    },
    release() {
      holding = false;
      for (const p of parked.splice(0)) p(null);
    },
    fail(code = "EIO") {
      failure = Object.assign(new Error(`${code}: i/o error, fsync`), { code });
      for (const p of parked.splice(0)) p(failure);
    },
  };
}

async function fullKb(dir: string, fsyncFn?: FsyncFn): Promise<Kb> {
  return openKb({ path: join(dir, "kb.db"), durability: "full", contextsDir: CONTEXTS_DIR, fsync: fsyncFn });
}

const settle = <T>(p: Promise<T>) => p.then((v) => ({ ok: true as const, v }), (e: unknown) => ({ ok: false as const, e }));

describe("group commit at full: the fsync never holds the next group", () => {
  it("while a group's fsync is out, the next writes are applied and committed, and one fsync covers them all", async () => {
    const dir = tempDir();
    const disk = heldFsync();
    let fsyncs = 0;
    const kb = await fullKb(dir, (fd, cb) => (fsyncs++, disk.fn(fd, cb)));
    const store = kb.store as unknown as { commits: number };
    fsyncs = 0; // opening fsynced its own writes
    disk.hold();
    const a = kb.assert("(dog Ana)", "CxPets");
    await turns(3);
    expect([disk.parked, fsyncs]).toEqual([1, 1]);
    const committed = store.commits;
    const b = kb.assert("(dog Bo)", "CxPets");
    await turns(3);
    const c = kb.assert("(dog Cy)", "CxPets");
    await turns(3);
    expect(store.commits).toBe(committed + 2); // both groups committed while the first fsync is out
    expect(fsyncs).toBe(1); // and wait for the next fsync, not one each
    disk.release();
    const seqs = (await Promise.all([a, b, c])).map((r) => r.seq);
    expect(fsyncs).toBe(2); // one fsync for the two groups that gathered behind the first
    expect(kb.headSeq).toBe(seqs[2]);
    await kb.close();
  });
});

describe("a lone writer's fsync runs inline (walsync.ts)", () => {
  /** Both seams over the real fsync, counting which one each group used. */
  function countedDisk() {
    const n = { pool: 0, inline: 0 };
    return { n, fsync: ((fd, cb) => (n.pool++, fsync(fd, cb))) as FsyncFn, fsyncSync: (fd: number) => (n.inline++, fsyncSync(fd)) };
  }
  /**
   * Seams that keep time instead of calling the disk (what they cover is not the point here):
   * the pool's answers on the next turn, the inline one busy-waits `slowMs` while `slow` is set.
   */
  function timedDisk(slowMs: number) {
    const n = { pool: 0, inline: 0 };
    const d = {
      n,
      slow: false,
      fsync: ((_fd, cb) => (n.pool++, setImmediate(() => cb(null)))) as FsyncFn,
      fsyncSync: () => {
        n.inline++;
        const until = performance.now() + (d.slow ? slowMs : 0);
        while (performance.now() < until);
      },
    };
    return d;
  }
  /** Its bound is wide unless given: this machine's own fsync time must not decide the path. */
  const open = (dir: string, disk: { fsync: FsyncFn; fsyncSync: (fd: number) => void }, inlineFsyncMaxMs = 60_000) =>
    openKb({ path: join(dir, "kb.db"), durability: "full", contextsDir: CONTEXTS_DIR, fsync: disk.fsync, fsyncSync: disk.fsyncSync, inlineFsyncMaxMs });

  it("one awaited writer at a time: each group's fsync runs inline; writers committed together share one fsync on the thread pool", async () => {
    const disk = countedDisk();
    const kb = await open(tempDir(), disk);
    const at = { ...disk.n };
    for (let i = 0; i < 3; i++) await kb.assert(`(dog D${i})`, "CxPets");
    expect([disk.n.inline - at.inline, disk.n.pool - at.pool]).toEqual([3, 0]);
    await Promise.all([1, 2, 3].map((i) => kb.assert(`(cat C${i})`, "CxPets")));
    expect([disk.n.inline - at.inline, disk.n.pool - at.pool]).toEqual([3, 1]);
    expect((kb.store as unknown as { walFsyncs: { count: number; inline: number } }).walFsyncs).toMatchObject({ inline: disk.n.inline });
    await kb.close();
  });

  it("after an fsync slower than inlineFsyncMaxMs the next goes to the thread pool; 0 never runs one inline", async () => {
    const disk = timedDisk(60);
    const kb = await open(tempDir(), disk, 20);
    const at = { ...disk.n };
    await kb.assert("(dog Fast)", "CxPets");
    disk.slow = true;
    await kb.assert("(dog Slow)", "CxPets"); // inline, and 60 ms long
    disk.slow = false;
    await kb.assert("(dog Next)", "CxPets"); // after a 60 ms fsync: the thread pool
    await kb.assert("(dog Back)", "CxPets"); // after a fast one: inline again
    expect([disk.n.inline - at.inline, disk.n.pool - at.pool]).toEqual([3, 1]);
    await kb.close();
    const never = timedDisk(0);
    const kb0 = await open(tempDir(), never, 0);
    await kb0.assert("(dog Pool)", "CxPets");
    expect(never.n.inline).toBe(0); // none inline, the open's own included
    expect(never.n.pool).toBeGreaterThan(0);
    await kb0.close();
    await expect(open(tempDir(), timedDisk(0), -1)).rejects.toThrow(/inlineFsyncMaxMs/);
  });

  it("an inline fsync that fails stops the KB: its writer is refused, nothing it covered is published, later writes are refused", async () => {
    const disk = countedDisk();
    let fail = false;
    const kb = await open(tempDir(), {
      fsync: disk.fsync,
      fsyncSync: (fd) => {
        if (fail) throw Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
        disk.fsyncSync(fd);
      },
    });
    const published: number[] = [];
    kb.onEvent((e) => published.push(e.seq));
    const acked = await kb.assert("(dog Muffet)", "CxPets");
    fail = true;
    await expect(kb.assert("(dog Rex)", "CxPets")).rejects.toMatchObject({ type: "unavailable" });
    expect(published).toEqual([acked.seq]);
    expect(kb.failure?.reason).toMatch(/EIO/);
    await expect(kb.assert("(dog X)", "CxPets")).rejects.toMatchObject({ type: "unavailable" });
    await kb.close();
  });
});

describe("reads see only durable state (K11)", () => {
  it("a read made while a write's fsync is pending answers only after the fsync, and names that write's seq", async () => {
    const dir = tempDir();
    const disk = heldFsync();
    const kb = await fullKb(dir, disk.fn);
    const before = kb.headSeq;
    disk.hold();
    const write = kb.assert("(dog Rex)", "CxPets");
    let read: { value: { solutions: Record<string, string>[] }; asOf: number } | undefined;
    const reading = kb.read(() => kb.query("(dog ?x)", "CxPets")).then((r) => (read = r));
    await turns(20);
    expect(disk.parked).toBeGreaterThan(0);
    expect(read).toBeUndefined(); // the write is in memory, its fsync is not back: no answer yet
    expect(kb.headSeq).toBe(before); // nor is the head the reader may be told
    disk.release();
    const w = await write;
    await reading;
    expect(read!.value.solutions).toEqual([{ "?x": "Rex" }]);
    expect(read!.asOf).toBe(w.seq);
    await kb.close();
  });

  it("over the wire: query, match, sentex and why wait for the fsync and carry asOf; /health's seq never runs ahead of it", async () => {
    const dir = tempDir();
    const disk = heldFsync();
    const kb = await fullKb(dir, disk.fn);
    const server = await createServer({ kb, logger: pino({ level: "silent" }) });
    const url = await server.listen(0, "127.0.0.1");
    try {
      const first = await kb.assert("(dog Muffet)", "CxPets");
      disk.hold();
      const write = kb.assert("(dog Rex)", "CxPets");
      await turns(5);
      const post = (path: string, body: unknown) => fetch(url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const answers: Record<string, unknown> = {};
      const reads = {
        query: post("/v1/query", { goal: "(dog ?x)", context: "CxPets" }),
        match: post("/v1/match", { sentence: "(dog ?x)", context: "CxPets" }),
        sentex: fetch(`${url}/v1/sentex/${first.handle}`),
        why: post("/v1/why", { handle: first.handle }),
      };
      for (const [k, p] of Object.entries(reads)) void p.then((r) => r.json()).then((b) => (answers[k] = b));
      const health = (await (await fetch(url + "/health")).json()) as { seq: number };
      expect(health.seq).toBe(first.seq);
      await new Promise((r) => setTimeout(r, 100));
      expect(answers).toEqual({}); // every read is held behind the pending fsync
      disk.release();
      const w = await write;
      await Promise.all(Object.values(reads));
      await turns(5);
      for (const k of Object.keys(reads)) expect((answers[k] as { asOf: number }).asOf, k).toBe(w.seq);
      expect((answers.query as { solutions: unknown[] }).solutions).toHaveLength(2);
    } finally {
      await server.close();
      await kb.close();
    }
  });

  it("the local medium reads and reports the head at a durable seq too", async () => {
    const dir = tempDir();
    const disk = heldFsync();
    const kb = await fullKb(dir, disk.fn);
    const m = local(kb);
    const before = await m.headSeq();
    disk.hold();
    const write = kb.assert("(dog Rex)", "CxPets");
    let matched: unknown;
    void m.match("(dog ?x)", "CxPets").then((r) => (matched = r));
    await turns(20);
    expect(matched).toBeUndefined();
    expect(await m.headSeq()).toBe(before);
    disk.release();
    const w = await write;
    await turns(5);
    expect(matched).toMatchObject([{ sentence: "(dog Rex)", seq: w.seq }]);
    expect(await m.headSeq()).toBe(w.seq);
    await m.close();
    await kb.close();
  });
});

describe("fail-stop (K12)", () => {
  it("a statement that fails after engine.apply stops the KB: that write and its group are refused, reads are refused, the store keeps exactly what was acknowledged", async () => {
    const dir = tempDir();
    const kb = await fullKb(dir);
    const acked = await kb.assert("(dog Muffet)", "CxPets");
    // The store refuses the Nth statement from here on (N = 2: the second write's event row).
    const insertEvent = kb.store.insertEvent.bind(kb.store);
    let calls = 0;
    kb.store.insertEvent = (event, write) => {
      if (++calls === 2) throw Object.assign(new Error("SQLITE_FULL: database or disk is full"), { code: "SQLITE_FULL" });
      insertEvent(event, write);
    };
    const failures: string[] = [];
    kb.onFailure((f) => failures.push(f.reason));
    const sameGroup = settle(kb.assert("(dog Rex)", "CxPets")); // first statement of this turn's group: fine
    const failing = settle(kb.assert("(dog Fido)", "CxPets")); // its event row fails
    const [a, b] = await Promise.all([sameGroup, failing]);
    expect(b).toMatchObject({ ok: false, e: { type: "unavailable" } });
    expect(a).toMatchObject({ ok: false, e: { type: "unavailable" } }); // rolled back with its group: never acknowledged
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/SQLITE_FULL/);
    expect(() => kb.match("(dog ?x)", "CxPets")).toThrow(expect.objectContaining({ type: "unavailable" })); // memory holds Fido; nobody may read it
    await expect(kb.read(() => 1)).rejects.toMatchObject({ type: "unavailable" });
    await expect(kb.assert("(dog Later)", "CxPets")).rejects.toMatchObject({ type: "unavailable" });
    await kb.close();
    const again = await fullKb(dir);
    expect(again.match("(dog ?x)", "CxPets").map((s) => s.sentence)).toEqual(["(dog Muffet)"]);
    expect(again.headSeq).toBe(acked.seq);
    await again.close();
  });

  it("a failed fsync refuses every write it covered and every later one; nothing it covered is published", async () => {
    const dir = tempDir();
    const disk = heldFsync();
    const kb = await fullKb(dir, disk.fn);
    const published: number[] = [];
    kb.onEvent((e) => published.push(e.seq));
    const acked = await kb.assert("(dog Muffet)", "CxPets");
    disk.hold();
    const w = settle(kb.assert("(dog Rex)", "CxPets"));
    await turns(5);
    disk.fail();
    expect(await w).toMatchObject({ ok: false, e: { type: "unavailable" } });
    expect(published).toEqual([acked.seq]);
    expect(kb.failure?.reason).toMatch(/EIO/);
    await expect(kb.edit({ add: [{ sentence: "(dog X)", context: "CxPets" }] })).rejects.toMatchObject({ type: "unavailable" });
    await kb.close();
  });

  it("a feed listener that throws is a broken invariant: the KB stops instead of letting the listeners after it miss the event", async () => {
    const dir = tempDir();
    const kb = await fullKb(dir);
    const seen: number[] = [];
    kb.onEvent(() => {
      throw new Error("ring invariant: size over its bound");
    });
    kb.onEvent((e) => seen.push(e.seq));
    const failures: string[] = [];
    kb.onFailure((f) => failures.push(f.reason));
    await kb.assert("(dog Rex)", "CxPets").catch(() => undefined);
    expect(failures).toEqual([expect.stringMatching(/invariant broken: a feed listener threw/)]);
    expect(seen).toEqual([]); // no listener got an event the KB then stopped on
    await expect(kb.assert("(dog Fido)", "CxPets")).rejects.toMatchObject({ type: "unavailable" });
    await kb.close();
  });

  it("over the wire: after a store failure writes and reads answer 503 unavailable and /health answers 503 with the reason", async () => {
    const dir = tempDir();
    const kb = await fullKb(dir);
    const server = await createServer({ kb, logger: pino({ level: "silent" }) });
    const url = await server.listen(0, "127.0.0.1");
    try {
      const post = (path: string, body: unknown) => fetch(url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      expect((await post("/v1/assert", { sentence: "(dog Muffet)", context: "CxPets" })).status).toBe(200);
      kb.store.insertSentexes = () => {
        throw Object.assign(new Error("SQLITE_IOERR: disk I/O error"), { code: "SQLITE_IOERR" });
      };
      const failed = await post("/v1/assert", { sentence: "(dog Rex)", context: "CxPets" });
      expect(failed.status).toBe(503);
      expect(await failed.json()).toMatchObject({ ok: false, type: "unavailable" });
      const read = await post("/v1/match", { sentence: "(dog ?x)", context: "CxPets" });
      expect(read.status).toBe(503);
      expect(await read.json()).toMatchObject({ ok: false, type: "unavailable" });
      const health = await fetch(url + "/health");
      expect(health.status).toBe(503);
      expect(await health.json()).toMatchObject({ ok: false, reason: expect.stringMatching(/SQLITE_IOERR/) });
    } finally {
      await server.close();
      await kb.close();
    }
  });
});
