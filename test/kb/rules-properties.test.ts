/**
 * Issue 3 property: any order of a random set of facts, rules and retractions (defaults,
 * monotonic facts, negations, 3 contexts joined by genlCx edges) reaches the same believed
 * set, the same contradictions and the same conflicts; and the incremental result equals a
 * from-scratch oracle (a fresh KB given only the surviving premises, in one fixed order).
 * Programs stay small (3 unary predicates, 1 binary, 2 constants) so shrinking is useful.
 */
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Kb, Strength } from "../../src/kb/index.js";
import { openKb } from "../../src/kb/index.js";
import { believed, clashes, memoryKb, tempDir } from "./helpers.js";

const CONTEXTS = ["CxA", "CxB", "CxC"] as const;
const UNARY = ["p", "q", "r"] as const;
const CONSTANTS = ["One", "Two"] as const;
/** Draw the first of a list more often than the others: dense programs collide, sparse ones rarely do. */
const skewed = <T,>(xs: readonly T[]) => fc.constantFrom(xs[0]!, xs[0]!, ...xs);

interface Premise {
  sentence: string;
  context: string;
  strength: Strength;
}

const lit = (neg: boolean, atom: string) => (neg ? `(not ${atom})` : atom);

const factArb: fc.Arbitrary<Premise> = fc
  .record({
    binary: fc.constantFrom(false, false, false, true),
    pred: skewed(UNARY),
    a: skewed(CONSTANTS),
    b: skewed(CONSTANTS),
    neg: fc.boolean(),
    context: skewed(CONTEXTS),
    strength: fc.constantFrom<Strength>("default", "monotonic"),
  })
  .map(({ binary, pred, a, b, neg, context, strength }) => ({
    sentence: lit(neg && !binary, binary ? `(e ${a} ${b})` : `(${pred} ${a})`),
    context,
    strength,
  }));

/** Rules over ?x (and ?y through the binary e): one or two antecedents, either polarity. */
const ruleArb: fc.Arbitrary<Premise> = fc
  .record({
    first: skewed(UNARY),
    second: fc.option(fc.record({ pred: skewed(UNARY), neg: fc.boolean() }), { nil: undefined, freq: 2 }),
    viaEdge: fc.constantFrom(false, false, true),
    cons: fc.constantFrom(...UNARY),
    consNeg: fc.boolean(),
    context: skewed(CONTEXTS),
  })
  .map(({ first, second, viaEdge, cons, consNeg, context }) => {
    const ants = [`(${first} ?x)`];
    if (viaEdge) ants.push("(e ?x ?y)");
    if (second) ants.push(lit(second.neg, `(${second.pred} ${viaEdge ? "?y" : "?x"})`));
    const c = lit(consNeg, `(${cons} ${viaEdge ? "?y" : "?x"})`);
    return { sentence: `(implies (and ${ants.join(" ")}) ${c})`, context, strength: "default" as Strength };
  });

const edgeArb: fc.Arbitrary<Premise> = fc
  .tuple(fc.constantFrom(...CONTEXTS), fc.constantFrom(...CONTEXTS))
  .filter(([a, b]) => a !== b)
  .map(([a, b]) => ({ sentence: `(genlCx ${a} ${b})`, context: "CxUniverse", strength: "monotonic" as Strength }));

/**
 * One premise with its fate: whether it is retracted, and where its assert and its retract
 * fall in each of two orders (sort keys). A flat record array shrinks well, unlike a chain.
 */
interface Entry {
  premise: Premise;
  retracted: boolean;
  keys: [number, number, number, number];
}

const entryArb: fc.Arbitrary<Entry> = fc.record({
  premise: fc.oneof({ weight: 5, arbitrary: factArb }, { weight: 3, arbitrary: ruleArb }, { weight: 1, arbitrary: edgeArb }),
  retracted: fc.constantFrom(false, false, true),
  keys: fc.tuple(fc.nat(99), fc.nat(99), fc.nat(99), fc.nat(99)),
});

const entriesArb = fc.uniqueArray(entryArb, { minLength: 1, maxLength: 9, selector: (e) => `${e.premise.context}|${e.premise.sentence}` });

type Step = { kind: "assert" | "retract"; i: number };

/** The steps of one order: every assert, and each chosen retract after its own assert. */
function order(entries: readonly Entry[], which: 0 | 1): Step[] {
  const keyed: [number, number, Step][] = [];
  entries.forEach((e, i) => {
    const a = e.keys[which * 2]!;
    keyed.push([a, 0, { kind: "assert", i }]);
    if (e.retracted) keyed.push([Math.max(a, e.keys[which * 2 + 1]!), 1, { kind: "retract", i }]);
  });
  return keyed.sort((x, y) => x[0] - y[0] || x[1] - y[1] || x[2].i - y[2].i).map(([, , s]) => s);
}

async function play(premises: readonly Premise[], steps: readonly Step[], path?: string): Promise<Kb> {
  const kb = path ? await openKb({ path, durability: "normal" }) : await memoryKb({ contextsDir: undefined });
  const handles = new Map<number, number>();
  for (const s of steps) {
    const p = premises[s.i]!;
    if (s.kind === "assert") handles.set(s.i, (await kb.assert(p.sentence, p.context, { strength: p.strength })).handle);
    else await kb.retract(handles.get(s.i)!);
  }
  return kb;
}

function snapshot(kb: Kb) {
  return { believed: believed(kb), ...clashes(kb, CONTEXTS) };
}

/** A derived monotonic conclusion must defeat a default opposite already stored (found by this property). */
const REGRESSION: Entry[] = [
  { premise: { sentence: "(implies (and (p ?x)) (not (q ?x)))", context: "CxA", strength: "default" }, retracted: false, keys: [0, 0, 0, 0] },
  { premise: { sentence: "(q One)", context: "CxA", strength: "default" }, retracted: false, keys: [1, 0, 2, 0] },
  { premise: { sentence: "(p One)", context: "CxA", strength: "monotonic" }, retracted: false, keys: [2, 0, 1, 0] },
];

describe("issue 3 property", () => {
  it("any order of facts, rules and retractions reaches the same belief and clashes as a from-scratch oracle, also after reopening", async () => {
    const dir = tempDir();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(entriesArb, async (entries) => {
        const premises = entries.map((e) => e.premise);
        // The oracle: only the surviving premises, asserted once each in list order.
        const oracleSteps: Step[] = entries.flatMap((e, i) => (e.retracted ? [] : [{ kind: "assert" as const, i }]));
        const path = join(dir, `run-${n++}.db`);
        const kbs = [await play(premises, order(entries, 0), path), await play(premises, order(entries, 1)), await play(premises, oracleSteps)];
        try {
          const [a, b, oracle] = kbs.map(snapshot);
          expect(a, "first order vs oracle").toEqual(oracle);
          expect(b, "second order vs oracle").toEqual(oracle);
          // The engine rebuilt from the store of the first order believes the same.
          await kbs[0]!.close();
          kbs[0] = await openKb({ path });
          expect(snapshot(kbs[0]), "first order reopened vs oracle").toEqual(oracle);
        } finally {
          for (const kb of kbs) await kb.close();
        }
      }),
      { numRuns: 400, examples: [[REGRESSION]] },
    );
  });
});
