/**
 * The benchmark's baselines are only worth a ratio if they are right: the plain semi-naive
 * closure derives exactly the reach pairs a breadth-first search finds, and as many as the
 * engine derives; a delivery run that lost a delivery fails instead of reporting fewer samples.
 */
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { SemiNaiveClosure, EngineClosure, type Edge } from "../../bench/closure.js";
import { delivered } from "../../bench/delivery.js";

function bfsPairs(edges: Edge[]): number {
  const out = new Map<number, number[]>();
  for (const [a, b] of edges) out.set(a, [...(out.get(a) ?? []), b]);
  let pairs = 0;
  for (const x of new Set(edges.map(([a]) => a))) {
    const seen = new Set<number>();
    const todo = [...(out.get(x) ?? [])];
    while (todo.length) {
      const y = todo.pop()!;
      if (seen.has(y)) continue;
      seen.add(y);
      todo.push(...(out.get(y) ?? []));
    }
    pairs += seen.size;
  }
  return pairs;
}

const edgeLists = fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 9 })), { maxLength: 25 });

describe("rules bench baselines", () => {
  it("the plain semi-naive closure counts exactly the reach pairs of a breadth-first search, and the engine derives as many", async () => {
    await fc.assert(
      fc.asyncProperty(edgeLists, async (edges) => {
        const plain = new SemiNaiveClosure();
        await plain.load(edges);
        await plain.derive();
        const engine = new EngineClosure();
        await engine.load(edges);
        await engine.derive();
        expect(plain.count()).toBe(bfsPairs(edges));
        expect(engine.count()).toBe(plain.count());
      }),
      { numRuns: 60 },
    );
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
