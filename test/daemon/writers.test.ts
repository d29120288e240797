/**
 * The daemon's lone-writer gate (src/daemon/writers.ts): at `full`, a WAL fsync runs inline
 * on the event loop only while one client is writing; once another client has written within
 * `loneWriterWindowMs`, the fsyncs go to the thread pool.
 */
import { fsync, fsyncSync } from "node:fs";
import { join } from "node:path";
import { describe, it, expect } from "vitest";
import { Client } from "undici";
import { pino } from "pino";
import { openKb, type FsyncFn } from "../../src/kb/index.js";
import { createServer } from "../../src/daemon/index.js";
import { RecentWriters } from "../../src/daemon/writers.js";
import { tempDir } from "./helpers.js";

describe("RecentWriters", () => {
  it("says several only while a second socket wrote within the window", () => {
    let now = 0;
    const w = new RecentWriters(10, () => now);
    const a = {};
    const b = {};
    expect(w.several()).toBe(false);
    w.saw(a);
    now = 5;
    w.saw(a);
    expect(w.several()).toBe(false); // one socket, however often
    now = 6;
    w.saw(b);
    expect(w.several()).toBe(true); // a wrote 1 ms before b
    now = 16;
    expect(w.several()).toBe(false); // a's last write is 11 ms old
    now = 17;
    w.saw(b);
    expect(w.several()).toBe(false); // still b alone
    now = 20;
    w.saw(a);
    expect(w.several()).toBe(true); // b wrote 3 ms before a
    expect(() => new RecentWriters(-1)).toThrow(/loneWriterWindowMs/);
  });
});

describe("the daemon's lone writer at full", () => {
  it("one client's writes each fsync inline; after a second client writes, the fsyncs go to the thread pool", async () => {
    const n = { pool: 0, inline: 0 };
    const kb = await openKb({
      path: join(tempDir(), "kb.db"),
      durability: "full",
      fsync: ((fd, cb) => (n.pool++, fsync(fd, cb))) as FsyncFn,
      fsyncSync: (fd) => (n.inline++, fsyncSync(fd)),
      inlineFsyncMaxMs: 60_000, // this machine's fsync time must not decide the path
    });
    // A wide window: the second client counts for the rest of the test, however slow the machine.
    const server = await createServer({ kb, version: "test", logger: pino({ level: "silent" }), limits: { loneWriterWindowMs: 60_000 } });
    const url = await server.listen(0, "127.0.0.1");
    const a = new Client(url);
    const b = new Client(url);
    const assert = async (c: Client, sentence: string) => {
      const r = await c.request({ path: "/v1/assert", method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ sentence, context: "CxPets" }) });
      expect(r.statusCode).toBe(200);
      await r.body.text();
    };
    try {
      const at = { ...n };
      for (let i = 0; i < 3; i++) await assert(a, `(dog A${i})`);
      expect([n.inline - at.inline, n.pool - at.pool]).toEqual([3, 0]);
      await assert(b, "(dog B0)");
      for (let i = 3; i < 5; i++) await assert(a, `(dog A${i})`);
      expect([n.inline - at.inline, n.pool - at.pool]).toEqual([3, 3]);
    } finally {
      await a.close();
      await b.close();
      await server.close();
      await kb.close();
    }
  });
});
