/**
 * The row engine (src/kb/rowengine.ts) with list arguments (terms interned by canonical text,
 * patterns with variables inside a list matched against the term), driven one sentence per
 * write through rowengine-driver.ts: after every assert and retract of facts and rules whose
 * arguments nest, what it stores and each stored fact's label, and each stored fact's
 * `firings`, are exactly the rules oracle's (test/kb/oracle/rules-oracle.ts).
 */
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import type { RowLiteral } from "./rowengine-driver.js";
import { playAgainstOracle, programArb, type PlayEntry } from "./oracle/rowengine-play.js";
import type { Term } from "../../src/kb/term.js";

const C = fc.constantFrom("One", "Two");
const lit = (neg: boolean, atom: Term[]): RowLiteral => ({ neg, atom });

/** Facts over nested terms: (holds A (pair B C)), (wraps (box A)), (p A). */
const factArb: fc.Arbitrary<RowLiteral> = fc.oneof(
  fc.tuple(C, C, C, fc.boolean()).map(([a, b, c, neg]) => lit(neg, ["holds", a, ["pair", b, c]])),
  fc.tuple(C, fc.boolean()).map(([a, neg]) => lit(neg, ["wraps", ["box", a]])),
  fc.tuple(fc.constantFrom("p", "q"), C, fc.boolean()).map(([p, a, neg]) => lit(neg, [p, a])),
);

/** Rules that take lists apart, build them, and join through them; every head variable bound by a positive antecedent. */
const ruleArb = fc.oneof(
  fc.tuple(fc.boolean(), fc.constantFrom("p", "q")).map(([neg, q]) => ({ ants: [lit(false, ["holds", "?x", ["pair", "?x", "?y"]])], head: lit(neg, [q, "?y"]) })),
  fc.tuple(fc.boolean()).map(([neg]) => ({ ants: [lit(false, ["p", "?x"])], head: lit(neg, ["wraps", ["box", "?x"]]) })),
  fc.tuple(fc.constantFrom("p", "q")).map(([q]) => ({ ants: [lit(false, ["wraps", ["box", "?x"]])], head: lit(false, [q, "?x"]) })),
  fc.tuple(fc.boolean()).map(([neg]) => ({ ants: [lit(false, ["q", "?x"]), lit(false, ["holds", "?x", "?pr"])], head: lit(neg, ["wraps", ["box", "?pr"]]) })),
  fc.constant({ ants: [lit(false, ["holds", "?x", ["pair", "?y", "One"]]), lit(true, ["p", "?y"])], head: lit(false, ["q", "?x"]) }),
);

const entryArb: fc.Arbitrary<PlayEntry> = fc.oneof(
  { weight: 3, arbitrary: factArb.map((l) => ({ kind: "fact" as const, lit: l, context: "CxA" })) },
  { weight: 2, arbitrary: ruleArb.map((r) => ({ kind: "rule" as const, ...r, context: "CxA" })) },
);

describe("row engine against the rules oracle, list arguments", () => {
  it("stores, labels and justifies exactly as the oracle's fixpoint after every step", () => {
    fc.assert(
      fc.property(programArb(entryArb), ([pool, steps]) => playAgainstOracle(pool, steps)),
      { numRuns: 3000 },
    );
  });
});
