/**
 * The row engine (src/kb/rowengine.ts) against the independent rules oracle
 * (test/kb/oracle/rules-oracle.ts), on programs drawn as the engine's oracle test
 * (rules-oracle.test.ts) draws them (facts of either polarity and strength in four contexts
 * with CxCore among them, rules with negative antecedents and conclusions, genlCx links),
 * driven one sentence per write through rowengine-driver.ts: after every assert and retract,
 * what it stores where, and each stored fact's label (out, default, monotonic), are exactly
 * the oracle's, `firings` lists exactly the oracle's firings over IN for each stored fact, and
 * every context sees exactly the oracle's contradictions and conflicts (`clashPairs`). Then
 * worked examples of single settles (a new conclusion defeating or widening the region, a
 * link placing a conclusion).
 */
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { RowDriver } from "./rowengine-driver.js";
import { playAgainstOracle, programArb, type PlayEntry } from "./oracle/rowengine-play.js";
import { FACT_CONTEXTS, factArb, linkArb, ruleArb, skewed } from "./oracle/program-arbs.js";

const edgeArb = linkArb.map(([a, b]): PlayEntry => ({ kind: "fact", lit: { neg: false, atom: ["genlCx", a, b] }, context: "CxUniverse" }));
const entryArb: fc.Arbitrary<PlayEntry> = fc.oneof(
  { weight: 5, arbitrary: fc.tuple(factArb, skewed(FACT_CONTEXTS)).map(([lit, context]) => ({ kind: "fact" as const, lit, context })) },
  { weight: 3, arbitrary: fc.tuple(ruleArb, skewed(FACT_CONTEXTS)).map(([r, context]) => ({ kind: "rule" as const, ...r, context })) },
  { weight: 1, arbitrary: edgeArb },
);

describe("row engine against the rules oracle", () => {
  it("stores and labels exactly as the oracle's fixpoint after every assert and retract of facts and rules", () => {
    fc.assert(
      fc.property(programArb(entryArb), ([pool, steps]) => {
        playAgainstOracle(pool, steps, (e, fix) => {
          for (const c of FACT_CONTEXTS) {
            const seen = e.clashes(c);
            const sees = (xs: string[]) => xs.map((x) => `${c} sees ${x}`);
            expect({ contradictions: sees(seen.contradictions), conflicts: sees(seen.conflicts) }, `clashes from ${c}`).toEqual(fix.clashes(c));
          }
        });
      }),
      { numRuns: 5000 },
    );
  });
});

describe("row engine, settle examples", () => {
  it("a monotonic conclusion new in a write defeats a stored default opposite that no dependent reaches", () => {
    const e = new RowDriver();
    e.assert({ neg: true, atom: ["q", "One"] }, "default");
    e.assertRule([{ neg: false, atom: ["p", "?x"] }], { neg: false, atom: ["q", "?x"] });
    e.assert({ neg: false, atom: ["p", "One"] }, "monotonic");
    expect(e.stored().get("CxA|(not (q One))")).toBe("out");
    expect(e.stored().get("CxA|(q One)")).toBe("monotonic");
  });

  it("a conclusion outside the region that a fact new in this write moves widens the region (a new fact's rule concludes its stored opposite)", () => {
    // Found by the property after 24 791 programs: with an invariant in place of the widening,
    // the monotonic (r One) this write creates concludes (not (r One)), stored outside the region.
    const e = new RowDriver();
    e.assert({ neg: true, atom: ["r", "One"] }, "default");
    e.assertRule([{ neg: false, atom: ["r", "?x"] }], { neg: true, atom: ["r", "?x"] });
    e.assertRule([{ neg: false, atom: ["p", "?x"] }], { neg: false, atom: ["r", "?x"] });
    e.assert({ neg: false, atom: ["p", "One"] }, "monotonic");
    expect(e.stored().get("CxA|(r One)")).toBe("monotonic");
    expect(e.stored().get("CxA|(not (r One))")).toBe("monotonic"); // a conflict: both monotonic
  });

  it("a stored fact outside the region that a fact new in this write would raise joins the region", () => {
    const e = new RowDriver();
    e.assert({ neg: false, atom: ["s", "One"] }, "default");
    e.assertRule([{ neg: false, atom: ["q", "?x"] }], { neg: false, atom: ["s", "?x"] });
    e.assertRule([{ neg: false, atom: ["p", "?x"] }], { neg: false, atom: ["q", "?x"] });
    e.assert({ neg: false, atom: ["p", "One"] }, "monotonic"); // (q One) is new: (s One) was no dependent of the seed
    expect(e.stored().get("CxA|(s One)")).toBe("monotonic");
  });

  it("a view of a sentex that left the store stays gone, its label OUT, when the same fact is stored again under a new handle", () => {
    const e = new RowDriver();
    const first = e.assert({ neg: false, atom: ["p", "One"] }, "default");
    const old = e.engine.index.byHandle.get(first)!;
    e.retract(first);
    const again = e.assert({ neg: false, atom: ["p", "One"] }, "default"); // the same row, a new handle
    expect(again).not.toBe(first);
    expect({ gone: old.gone, label: old.label, text: old.text }).toEqual({ gone: true, label: 0, text: "(p One)" });
    const now = e.engine.index.byHandle.get(again)!;
    expect({ gone: now.gone, label: now.label }).toEqual({ gone: false, label: 1 });
    expect(e.engine.index.byHandle.has(first)).toBe(false);
  });

  it("a link placed a conclusion: retracting the link takes the conclusion away", () => {
    const e = new RowDriver();
    e.assertRule([{ neg: false, atom: ["p", "?x"] }], { neg: false, atom: ["q", "?x"] }, "CxA");
    e.assert({ neg: false, atom: ["p", "One"] }, "default", "CxB");
    expect(e.stored().has("CxB|(q One)")).toBe(false); // no context sees both CxA and CxB
    const link = e.assert({ neg: false, atom: ["genlCx", "CxB", "CxA"] }, "default", "CxUniverse");
    expect(e.stored().get("CxB|(q One)")).toBe("default"); // CxB sees CxA: the most general context that sees both
    e.retract(link);
    expect(e.stored().has("CxB|(q One)")).toBe(false);
    expect(e.stored().has("CxUniverse|(genlCx CxB CxA)")).toBe(false);
  });
});
