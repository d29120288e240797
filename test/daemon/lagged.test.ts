/**
 * A poll's `lagged` is exact: every matching event written is either delivered in an
 * answer the reader keeps or counted, once, in `lagged` (ring overflow). An event an answer
 * already carried is never counted as lost when the ring overflows before the next poll
 * acknowledges it; a poll that repeats an older cursor (its answer was lost) reads it back
 * from the durable log.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import fc from "fast-check";
import { openKb } from "../../src/kb/index.js";
import { FeedHub, type PollAnswer } from "../../src/feed/index.js";
import { spawnDaemon, call, type Daemon } from "./helpers.js";

const admin = { id: "admin", admin: true };

describe("lagged over the wire", () => {
  let d: Daemon;
  beforeAll(async () => {
    d = await spawnDaemon({ args: ["--max-events", "4"] });
  });
  afterAll(async () => {
    await d.stop();
  });

  it("with --max-events 4, a poller that missed one event is told one, not four (answered events are not lost)", async () => {
    const w = (await call(d.url, "POST", "/v1/watch", { context: "CxLag" })).body;
    const write = async (i: number) => (await call(d.url, "POST", "/v1/assert", { sentence: `(tick T${i})`, context: "CxLag" })).body.seq as number;
    const first: number[] = [];
    for (let i = 0; i < 4; i++) first.push(await write(i));
    const a = (await call(d.url, "POST", "/v1/poll", { token: w.token, cursor: w.cursor })).body;
    expect([a.events.map((e: { seq: number }) => e.seq), a.lagged]).toEqual([first, 0]);
    const next: number[] = [];
    for (let i = 4; i < 9; i++) next.push(await write(i)); // 4 answered + 5 new through a ring of 4: one is lost
    const b = (await call(d.url, "POST", "/v1/poll", { token: w.token, cursor: a.cursor })).body;
    expect(b.lagged).toBe(1);
    expect(b.events.map((e: { seq: number }) => e.seq)).toEqual(next.slice(1));
    const c = (await call(d.url, "POST", "/v1/poll", { token: w.token, cursor: b.cursor })).body;
    expect([c.events.length, c.lagged]).toEqual([0, 0]);
  });
});

type Step = { op: "write"; n: number; match: boolean } | { op: "poll"; limit: number } | { op: "lose"; limit: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant("write" as const), n: fc.integer({ min: 1, max: 7 }), match: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("poll" as const), limit: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("lose" as const), limit: fc.integer({ min: 1, max: 6 }) }) },
);

describe("lagged accounting (property)", () => {
  it("delivered + lagged = matching events written, for any interleaving of writes, polls and lost answers, with no event twice or out of order", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.array(step, { maxLength: 30 }), async (maxEvents, steps) => {
        const kb = await openKb({ path: ":memory:" });
        const hub = await FeedHub.open(kb, { maxEvents });
        try {
          const w = hub.watch(admin, { context: "CxMine" });
          let written = 0;
          let k = 0;
          const kept: PollAnswer[] = [];
          let cursor = w.cursor;
          const poll = (limit: number) => hub.poll(admin, { token: w.token, cursor, limit });
          for (const s of steps) {
            if (s.op === "write") {
              for (let i = 0; i < s.n; i++) await kb.assert(`(item I${k++})`, s.match ? "CxMine" : "CxOther");
              if (s.match) written += s.n;
            } else if (s.op === "poll") {
              const a = await poll(s.limit);
              kept.push(a);
              cursor = a.cursor;
            } else {
              await poll(s.limit); // answered, then lost on the way: the reader repeats its cursor next time
            }
          }
          for (let guard = 0; guard < 1000; guard++) {
            const a = await poll(6);
            kept.push(a);
            cursor = a.cursor;
            if (a.events.length === 0 && a.lagged === 0) break;
          }
          const seqs = kept.flatMap((a) => a.events.map((e) => e.seq));
          const lagged = kept.reduce((n, a) => n + a.lagged, 0);
          expect(seqs.length + lagged).toBe(written);
          for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);
        } finally {
          hub.shutdown();
          await kb.close();
        }
      }),
      { numRuns: 150 },
    );
  });
});
