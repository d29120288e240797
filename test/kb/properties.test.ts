/**
 * Issue 2 properties: (a) any order of the same asserts gives the same believed set;
 * (b) retracting everything asserted leaves only the loaded vocabulary believed.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Kb, Strength } from "../../src/kb/index.js";
import { believed, clashes, memoryKb } from "./helpers.js";

const CONTEXTS = ["CxA", "CxB", "CxC"] as const;

interface Op {
  sentence: string;
  context: string;
  strength: Strength;
}

const factArb: fc.Arbitrary<Op> = fc.record({
  pred: fc.constantFrom("p", "q"),
  arg: fc.constantFrom("X", "Y", '"X"', "1"),
  neg: fc.boolean(),
  context: fc.constantFrom(...CONTEXTS),
  strength: fc.constantFrom<Strength>("default", "default", "monotonic"),
}).map(({ pred, arg, neg, context, strength }) => ({ sentence: neg ? `(not (${pred} ${arg}))` : `(${pred} ${arg})`, context, strength }));

const edgeArb: fc.Arbitrary<Op> = fc
  .tuple(fc.constantFrom(...CONTEXTS), fc.constantFrom(...CONTEXTS))
  .filter(([a, b]) => a !== b)
  .map(([a, b]) => ({ sentence: `(genlCx ${a} ${b})`, context: "CxUniverse", strength: "monotonic" as Strength }));

const opsArb = fc.array(fc.oneof({ weight: 4, arbitrary: factArb }, { weight: 1, arbitrary: edgeArb }), { minLength: 1, maxLength: 12 });

async function run(ops: readonly Op[]): Promise<{ kb: Kb; handles: number[] }> {
  const kb = await memoryKb();
  const handles: number[] = [];
  for (const op of ops) handles.push((await kb.assert(op.sentence, op.context, { strength: op.strength })).handle);
  return { kb, handles };
}

describe("issue 2 properties", () => {
  it("(a) any order of the same asserts gives the same believed set and the same clashes", async () => {
    await fc.assert(
      fc.asyncProperty(opsArb.chain((ops) => fc.tuple(fc.constant(ops), fc.shuffledSubarray(ops, { minLength: ops.length, maxLength: ops.length }))), async ([ops, shuffled]) => {
        const a = await run(ops);
        const b = await run(shuffled);
        try {
          expect(believed(b.kb)).toEqual(believed(a.kb));
          expect(clashes(b.kb, CONTEXTS)).toEqual(clashes(a.kb, CONTEXTS));
        } finally {
          await a.kb.close();
          await b.kb.close();
        }
      }),
      { numRuns: 100 },
    );
  });

  it("(b) retracting everything asserted, in any order, empties belief down to the loaded vocabulary", async () => {
    const vocabulary = believed(await memoryKb());
    await fc.assert(
      fc.asyncProperty(opsArb, fc.infiniteStream(fc.nat()), async (ops, picks) => {
        const { kb, handles } = await run(ops);
        try {
          const pending = [...new Set(handles)];
          const it = picks[Symbol.iterator]();
          while (pending.length) {
            const [h] = pending.splice(it.next().value % pending.length, 1);
            await kb.retract(h!);
          }
          expect(believed(kb)).toEqual(vocabulary);
          expect(kb.size).toBe(vocabulary.length);
        } finally {
          await kb.close();
        }
      }),
      { numRuns: 60 },
    );
  });
});
