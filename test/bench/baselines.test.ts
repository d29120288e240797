/**
 * The benchmark's baselines are only worth a ratio if they are right: the plain semi-naive
 * closure derives exactly the reach pairs a breadth-first search finds, and as many as the
 * engine derives, and the index-only and bulk-row systems hold exactly those pairs (the
 * bulk rows each with a justification that derives it); a delivery run that
 * lost a delivery fails instead of reporting fewer samples; the closed loop that drives both a figure and its baseline (the cluster bench's daemons and
 * raw pg clients) runs exactly `clients` operations at a time and counts every one it ran;
 * the SSE reader that times deliveries sees every event however the stream is cut.
 */
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { Readable } from "node:stream";
import { SemiNaiveClosure, EngineClosure, BulkRowsClosure, DurableFloor, chain, tree, type Closure, type Edge } from "../../bench/closure.js";
import { delivered } from "../../bench/delivery.js";
import { closedLoop } from "../../bench/lib.js";
import { readSse, markersOf, markedSentence } from "../../bench/sse.js";

/** Every reach pair, as `Nx Nz`, by a breadth-first search from each node. */
function bfsPairs(edges: Edge[]): Set<string> {
  const out = new Map<number, number[]>();
  for (const [a, b] of edges) out.set(a, [...(out.get(a) ?? []), b]);
  const pairs = new Set<string>();
  for (const x of new Set(edges.map(([a]) => a))) {
    const seen = new Set<number>();
    const todo = [...(out.get(x) ?? [])];
    while (todo.length) {
      const y = todo.pop()!;
      if (seen.has(y)) continue;
      seen.add(y);
      todo.push(...(out.get(y) ?? []));
    }
    for (const z of seen) pairs.add(`N${x} N${z}`);
  }
  return pairs;
}

/** `c` with `edges` stored and the closure derived. */
async function derived<C extends Closure>(c: C, edges: Edge[]): Promise<C> {
  await c.load(edges);
  await c.derive();
  return c;
}

const edgeLists = fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 9 })), { maxLength: 25 });

describe("rules bench baselines", () => {
  it("the plain semi-naive closure counts exactly the reach pairs of a breadth-first search, the engine derives as many", async () => {
    await fc.assert(
      fc.asyncProperty(edgeLists, async (edges) => {
        const plain = await derived(new SemiNaiveClosure(), edges);
        const engine = await derived(new EngineClosure(), edges);
        const pairs = bfsPairs(edges);
        expect(plain.count()).toBe(pairs.size);
        expect(engine.count()).toBe(plain.count());
      }),
      { numRuns: 60 },
    );
  });
});

describe("the bulk-row baseline", () => {
  /** Whether `f` is a firing of one of the two rules over the facts named as its antecedents. */
  const derives = (f: { pair: string; rule: number; ants: string[] }): boolean => {
    const [x, z] = f.pair.split(" ");
    if (f.rule === 1) return f.ants.length === 1 && f.ants[0] === `edge ${x} ${z}`;
    if (f.rule !== 2 || f.ants.length !== 2) return false;
    const [e, ex, ey] = f.ants[0]!.split(" ");
    const [r, ry, rz] = f.ants[1]!.split(" ");
    return e === "edge" && r === "reach" && ex === x && ey === ry && rz === z;
  };

  it("holds exactly the reach pairs of a breadth-first search, each once, each justified by a firing over facts it holds, and lists each added handle once", async () => {
    await fc.assert(
      fc.asyncProperty(edgeLists, async (edges) => {
        const rows = await derived(new BulkRowsClosure(), edges);
        const facts = rows.facts();
        const pairs = bfsPairs(edges);
        expect(facts.length).toBe(pairs.size);
        expect(new Set(facts.map((f) => f.pair))).toEqual(pairs);
        for (const f of facts) expect(derives(f), JSON.stringify(f)).toBe(true);
        expect(new Set(rows.added).size).toBe(rows.count());
        for (const x of new Set(edges.map(([a]) => `N${a}`))) expect(new Set(rows.reachFrom(x))).toEqual(new Set([...pairs].filter((p) => p.startsWith(`${x} `)).map((p) => p.split(" ")[1])));
      }),
      { numRuns: 60 },
    );
  });

  it("keeps every row through its columns' growth and its hash table's rehashing (graphs of thousands of facts)", async () => {
    for (const edges of [chain(200), tree(3_000)]) {
      const rows = await derived(new BulkRowsClosure(), edges);
      const facts = rows.facts();
      expect(new Set(facts.map((f) => f.pair))).toEqual(bfsPairs(edges));
      expect(facts.length).toBeGreaterThan(10_000); // past the first column capacity (1 024) and hash size (2 048) several times
      for (const f of facts) if (!derives(f)) expect.fail(JSON.stringify(f));
      const from = new Map<string, string[]>();
      for (const f of facts) {
        const [x, z] = f.pair.split(" ") as [string, string];
        from.set(x, [...(from.get(x) ?? []), z]);
      }
      for (const [x, zs] of from) expect(rows.reachFrom(x).sort()).toEqual(zs.sort());
    }
  });
});

describe("the durable floor beside the rules bench's steps through openKb", () => {
  it("commits one row of the given size per call, in WAL mode at synchronous=FULL (an fsync per commit)", () => {
    const floor = new DurableFloor(1_024);
    try {
      for (let i = 0; i < 3; i++) expect(floor.commit()).toBeGreaterThan(0);
      expect(floor.db.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(floor.db.pragma("synchronous", { simple: true })).toBe(2); // FULL: the WAL is fsynced at every commit
      expect(floor.db.prepare("SELECT count(*) AS n, min(length(body)) AS lo, max(length(body)) AS hi FROM event").get()).toEqual({ n: 3, lo: 1_024, hi: 1_024 });
    } finally {
      floor.close();
    }
  });
});

describe("delivery timing", () => {
  const sentAt = new Map([
    [1, 1000],
    [2, 2000],
  ]);
  it("gives latencies when every expected delivery arrived", () => {
    const d = delivered("t", ["1 1001.5", "2 2003", "0 5"], sentAt, 2);
    expect(d).toMatchObject({ deliveries: 2, missing: 0, p50: 1.5, p99: 3 });
  });
  it("fails the run when a delivery never arrived, naming how many and the lagged count", () => {
    expect(() => delivered("t", ["1 1001.5"], sentAt, 2, 1)).toThrow(/1 of 2 expected deliveries arrived \(1 missing; the daemon reported 1 lagged\)/);
  });
});

describe("the closed loop that drives a figure and its baseline alike", () => {
  it("keeps exactly `clients` operations in flight, each started after the previous one of its worker answered, and counts every one", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 8 }), async (clients) => {
        let inFlight = 0;
        let most = 0;
        let calls = 0;
        const perWorker = new Map<number, number>();
        const r = await closedLoop(clients, 20, async (c) => {
          expect(perWorker.get(c) ?? 0).toBe(0); // closed: this worker's previous op has answered
          perWorker.set(c, 1);
          calls++;
          most = Math.max(most, ++inFlight);
          await new Promise((resume) => setImmediate(resume));
          inFlight--;
          perWorker.set(c, 0);
        });
        expect(r.ops).toBe(calls);
        expect(most).toBe(clients);
        expect(perWorker.size).toBe(clients);
        expect(r.rps).toBeCloseTo(r.ops / r.seconds);
      }),
      { numRuns: 10 },
    );
  });
  it("fails when an operation fails, instead of reporting the others", async () => {
    let n = 0;
    await expect(
      closedLoop(2, 50, async () => {
        if (++n === 5) throw new Error("assert answered 503");
        await new Promise((resume) => setImmediate(resume));
      }),
    ).rejects.toThrow(/503/);
  });
});

describe("reading the SSE stream that times deliveries", () => {
  // A sentence holding the text "data: " and a two-byte character, so a frame's JSON can look like a line and a chunk can cut a character.
  const frame = (m: number) => `id: ${m}\ndata: ${JSON.stringify({ seq: m, added: [{ sentence: markedSentence(m) }, { sentence: "(other \"data: é\")" }] })}\n\n`;
  it("sees every marked event and every lagged notice exactly once, however the stream is cut into chunks", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.nat(10_000), { maxLength: 20 }), fc.nat(50), fc.array(fc.nat(400), { maxLength: 30 }), async (markers, lagged, cuts) => {
        const bytes = Buffer.from(": heartbeat\n\n" + markers.map(frame).join("") + `event: lagged\ndata: ${JSON.stringify({ lagged })}\n\n`);
        const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const points = [0, ...at, bytes.length];
        const chunks = points.slice(1).map((end, i) => bytes.subarray(points[i], end));
        async function* body() {
          for (const c of chunks) yield c;
        }
        const seen: number[] = [];
        const notices: number[] = [];
        const others: string[] = [];
        const onEvent = (ev: { added?: { sentence: string }[] }) => {
          seen.push(...markersOf(ev));
          others.push(ev.added![1]!.sentence);
        };
        await readSse(Readable.from(body(), { objectMode: false }), onEvent, (n) => notices.push(n));
        expect(seen).toEqual(markers);
        expect(others).toEqual(markers.map(() => '(other "data: é")'));
        expect(notices).toEqual([lagged]);
      }),
    );
  });
});
