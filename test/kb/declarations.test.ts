/**
 * The checks' declaration memo (engine.ts `DeclMemo`): what the checks look up about arity,
 * functional, lease and target-following declarations is kept across writes until a write
 * touches a declaring sentex or a genlCx link. Pinned here against the same checks with
 * nothing memoized, after every step of any program of declarations, their negations and
 * retractions, links between contexts and facts.
 */
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openKb, type Kb, type AddEntry } from "../../src/kb/index.js";
import { DeclMemo } from "../../src/kb/engine.js";
import { tempDir } from "./helpers.js";

const CONTEXTS = ["CxA", "CxB", "CxC"];
const DECLARATIONS = [
  "(arity likes 2)",
  "(arity likes 3)",
  "(binaryPredicate likes)",
  "(unaryPredicate likes)",
  "(ternaryPredicate owner)",
  "(functional owner)",
  "(not (functional owner))",
  "(not (binaryPredicate likes))",
  "(leasePredicate claims)",
  "(targetFollowingPredicate note)",
];
const LINKS = ["(genlCx CxA CxB)", "(genlCx CxB CxC)", "(genlCx CxC CxA)"];
const FACTS = ["(likes Ann)", "(likes Ann Bob)", "(likes Ann Bob Cy)", "(owner Rex Ann)", "(owner Rex Bob)", "(owner Rex Bob Cy)", "(claims AgentAva T1 99999999999999)", "(claims AgentBo T1 99999999999999)", "(note (sentexHandle 1))", "(note (sentexHandle 999))"];

type Op = { k: "declare"; s: number; cx: number; mono: boolean } | { k: "link"; s: number } | { k: "fact"; s: number; cx: number } | { k: "retract"; i: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ k: fc.constant("declare" as const), s: fc.nat({ max: DECLARATIONS.length - 1 }), cx: fc.nat({ max: 2 }), mono: fc.boolean() }),
  fc.record({ k: fc.constant("link" as const), s: fc.nat({ max: LINKS.length - 1 }) }),
  fc.record({ k: fc.constant("fact" as const), s: fc.nat({ max: FACTS.length - 1 }), cx: fc.nat({ max: 2 }) }),
  fc.record({ k: fc.constant("retract" as const), i: fc.nat() }),
);

/** A check's answer: accepted, or the refusal's type and text. */
function check(kb: Kb, entry: AddEntry, decls?: DeclMemo): string {
  try {
    kb.engine.prepare(entry, undefined, [], decls);
    return "ok";
  } catch (e) {
    return `${(e as { type?: string }).type}: ${(e as Error).message}`;
  }
}

/** Every fact in every context, checked with the engine's memo and with a fresh one. */
function allChecks(kb: Kb): { memo: string[]; fresh: string[] } {
  const memo: string[] = [];
  const fresh: string[] = [];
  for (const context of CONTEXTS) {
    for (const sentence of FACTS) {
      memo.push(`${context} ${sentence} ${check(kb, { sentence, context })}`);
      fresh.push(`${context} ${sentence} ${check(kb, { sentence, context }, new DeclMemo())}`);
    }
  }
  return { memo, fresh };
}

describe("the checks' declaration memo", () => {
  it("after every step of any program, every check answers as a check with nothing memoized", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
        const kb = await openKb({ path: join(tempDir(), "kb.db"), durability: "normal" });
        try {
          for (const op of ops) {
            const write =
              op.k === "declare"
                ? kb.assert(DECLARATIONS[op.s]!, CONTEXTS[op.cx]!, { strength: op.mono ? "monotonic" : "default" })
                : op.k === "link"
                  ? kb.assert(LINKS[op.s]!, "CxUniverse")
                  : op.k === "fact"
                    ? kb.assert(FACTS[op.s]!, CONTEXTS[op.cx]!)
                    : (() => {
                        const premises = [...kb.engine.index.byHandle.values()].filter((n) => n.premise !== 0).map((n) => n.h);
                        return premises.length ? kb.retract(premises[op.i % premises.length]!) : Promise.resolve();
                      })();
            await write.catch(() => undefined); // refusals are part of the program
            const { memo, fresh } = allChecks(kb);
            expect(memo).toEqual(fresh);
          }
        } finally {
          await kb.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it("a declaration made after a check was memoized is seen by the next check", async () => {
    const kb = await openKb({ path: join(tempDir(), "kb.db"), durability: "normal" });
    try {
      await kb.assert("(likes Ann Bob Cy)", "CxA"); // memoizes: likes has no arity where CxA is
      await kb.assert("(binaryPredicate likes)", "CxB");
      await kb.assert("(likes Ann Bob Cy)", "CxB").then(
        () => expect.unreachable("refused: CxB declares likes binary"),
        (e: { type: string }) => expect(e.type).toBe("arity"),
      );
      await kb.assert("(likes Dan Eve Fay)", "CxA"); // CxA does not see CxB yet
      await kb.assert("(genlCx CxA CxB)", "CxUniverse");
      await kb.assert("(likes Gus Hal Ivy)", "CxA").then(
        () => expect.unreachable("refused: CxA now sees CxB's declaration"),
        (e: { type: string }) => expect(e.type).toBe("arity"),
      );
    } finally {
      await kb.close();
    }
  });
});
