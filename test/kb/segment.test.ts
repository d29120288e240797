/**
 * Checkpoint segments (src/kb/segment.ts): a body reads back as exactly the rows written,
 * runs or not; the range index finds the segment holding a handle as a scan of every range
 * does, and refuses a range that overlaps a stored one.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeSegment, encodeSegment, mergeByHandle, SegmentRanges } from "../../src/kb/segment.js";
import type { StoredRow } from "../../src/kb/write.js";

const text = fc.string({ unit: "grapheme", maxLength: 20 });
/** Rows in handle order: gaps of 0-2 handles, each field drawn from two values so runs form and break. */
const rows = fc
  .array(
    fc.record({
      gap: fc.nat(2),
      sentence: text,
      context: fc.constantFrom("CxBench", "CxPets"),
      premise: fc.constantFrom(0 as const, 1 as const, 2 as const),
      creator: fc.constantFrom(null, "AgentAva"),
      createdAt: fc.constantFrom(5, 6),
      seq: fc.constantFrom(9, 10),
    }),
    { maxLength: 40 },
  )
  .map((rs) => {
    let h = 1;
    return rs.map(({ gap, ...r }): StoredRow => ({ handle: (h += gap + 1), ...r }));
  });

describe("checkpoint segments", () => {
  it("a segment's body reads back as exactly the rows written, in handle order", () => {
    fc.assert(
      fc.property(rows, (rs) => {
        expect(decodeSegment(encodeSegment(rs))).toStrictEqual(rs.map((r) => [r.handle, r.context, r.sentence, r.premise, r.creator, r.createdAt, r.seq]));
      }),
    );
  });

  it("an edit's rows are one run: the shared fields once", () => {
    const r = (handle: number, sentence: string): StoredRow => ({ handle, sentence, context: "CxBench", premise: 1, creator: "AgentAva", createdAt: 5, seq: 9 });
    expect(encodeSegment([r(7, "(rel E1 V1)"), r(8, "(rel E2 V2)"), r(10, "(rel E3 V3)")])).toBe(
      '[[7,["(rel E1 V1)","(rel E2 V2)"],"CxBench",1,"AgentAva",5,9],[10,"(rel E3 V3)","CxBench",1,"AgentAva",5,9]]',
    );
  });

  it("the range index finds the segment holding a handle as a scan of every range does", () => {
    const ranges = fc.array(fc.tuple(fc.nat(3), fc.nat(4)), { maxLength: 12 }).map((parts) => {
      let h = 0;
      return parts.map(([gap, len]) => {
        const first = (h += gap + 1);
        h += len;
        return [first, h] as const;
      });
    });
    fc.assert(
      fc.property(ranges, fc.array(fc.nat(), { maxLength: 4 }), (rs, drops) => {
        const index = new SegmentRanges();
        for (const [first, last] of [...rs].reverse()) index.add(first, last); // any insertion order
        const kept = [...rs];
        for (const d of drops) {
          if (kept.length === 0) break;
          const [first] = kept.splice(d % kept.length, 1)[0]!;
          index.remove(first);
        }
        const copy = index.copy();
        const top = rs.length ? rs[rs.length - 1]![1] + 2 : 3;
        for (let h = 0; h <= top; h++) {
          const want = kept.find(([f, l]) => f <= h && h <= l)?.[0];
          expect(index.holding(h)).toBe(want);
          expect(copy.holding(h)).toBe(want);
        }
        expect(index.size).toBe(kept.length);
      }),
    );
  });

  it("refuses a range that overlaps a stored one, and the removal of a range it does not hold", () => {
    const index = new SegmentRanges();
    index.add(10, 20);
    expect(() => index.add(20, 25)).toThrow(/overlaps/);
    expect(() => index.add(5, 10)).toThrow(/overlaps/);
    expect(() => index.add(12, 13)).toThrow(/overlaps/);
    expect(() => index.remove(11)).toThrow(/no segment starts at 11/);
    index.add(21, 30);
    expect(index.holding(21)).toBe(21);
  });

  it("merges two handle-ordered streams in handle order, and stops on a handle in both", () => {
    const row = (h: number) => [h, "CxPets", `(dog D${h})`, 1, null, 0, 1] as [number, string, string, 1, null, number, number];
    expect([...mergeByHandle([1, 4, 5].map(row), [2, 3, 6].map(row))].map((r) => r[0])).toEqual([1, 2, 3, 4, 5, 6]);
    expect(() => [...mergeByHandle([1, 4].map(row), [4].map(row))]).toThrow(/handle 4 is both/);
  });
});
