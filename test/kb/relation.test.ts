/**
 * The row engine's relation (src/kb/relation.ts) on its own: identity and argument chains
 * against a plain Map and arrays, over enough rows that the identity hash and the columns
 * grow several times (a relation starts with 64 rows and 128 slots). The engine's tests use
 * small programs whose relations rarely pass 64 atoms, so growth is shown here.
 */
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { Rel } from "../../src/kb/relation.js";

/** A tuple: the context then two arguments (ids), the shape of `(p A B)` in some context. */
type Tuple = [number, number, number];

const tupleArb = (ids: number): fc.Arbitrary<Tuple> => fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: ids }), fc.integer({ min: 0, max: ids }));

const key = (t: readonly number[]) => t.join(" ");

describe("Rel: identity and chains as the relation grows", () => {
  it("finds every tuple added, and none other, after each add; an atom's rows list it in every context; each argument's chain and count list its rows in order", () => {
    fc.assert(
      fc.property(fc.integer({ min: 20, max: 3_000 }), fc.array(tupleArb(3_000), { minLength: 300, maxLength: 3_000 }), (ids, raw) => {
        const tuples = raw.map(([c, a, b]) => [c, a % (ids + 1), b % (ids + 1)] as Tuple);
        const rel = new Rel(0, "p", false, 3);
        const rowOf = new Map<string, number>();
        const byAtom = new Map<string, number[]>();
        const probe = new Int32Array(3);
        const seen: Tuple[] = [];
        const check = (t: readonly number[]) => {
          probe.set(t);
          expect(rel.find(probe)).toBe(rowOf.get(key(t)) ?? -1);
        };
        tuples.forEach((t, i) => {
          probe.set(t);
          if (rel.find(probe) < 0) {
            const r = rel.add(probe, i + 1);
            expect(r).toBe(rowOf.size);
            rowOf.set(key(t), r);
            const atom = key(t.slice(1));
            byAtom.set(atom, [...(byAtom.get(atom) ?? []), r]);
            seen.push(t);
          }
          // Every few adds (and the last): each tuple so far, and a tuple never added.
          if (i % 97 === 0 || i === tuples.length - 1) {
            for (const s of seen) check(s);
            check([t[0], ids + 1, t[2]]);
          }
        });
        expect(rel.n).toBe(rowOf.size);
        for (const p of [1, 2]) expect([rel.head(p, ids + 1), rel.count(p, ids + 1)]).toEqual([-1, 0]); // an id no row holds
        for (const [atom, rows] of byAtom) {
          const [a, b] = atom.split(" ").map(Number);
          probe.set([0, a!, b!]);
          const listed: number[] = [];
          for (let r = rel.atomHead(probe); r >= 0; r = rel.atomNext[r]!) listed.push(r);
          expect(listed).toEqual([...rows].reverse()); // newest first
        }
        for (const p of [1, 2]) {
          const want = new Map<number, number[]>();
          seen.forEach((t, r) => want.set(t[p]!, [...(want.get(t[p]!) ?? []), r]));
          for (const [v, rows] of want) {
            const listed: number[] = [];
            for (let r = rel.head(p, v); r >= 0; r = rel.next[p]![r]!) listed.push(r);
            expect(listed).toEqual(rows);
            expect(rel.count(p, v)).toBe(rows.length);
          }
        }
      }),
      { numRuns: 40 },
    );
  });
});
