/**
 * SPIKE: the row engine against the independent rules oracle, on the fragment it covers
 * (one context, monotonic, positive literals over symbols): after every assert and retract
 * of facts and rules, its alive facts are exactly the oracle's stored facts.
 */
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { RowEngine, type Atom } from "../../src/kb/rowengine.js";
import { evaluate, type OraclePremise } from "../kb/oracle/rules-oracle.js";

const CONST = ["a", "b", "c", "d"];
const VARS = ["?x", "?y", "?z"];
const PREDS: [string, number][] = [["p", 2], ["q", 2], ["r", 1]];

const text = (a: Atom) => `(${a.join(" ")})`;
const fact = fc.constantFrom(...PREDS).chain(([p, n]) => fc.array(fc.constantFrom(...CONST), { minLength: n, maxLength: n }).map((args): Atom => [p, ...args]));
const patAtom = fc.constantFrom(...PREDS).chain(([p, n]) => fc.array(fc.constantFrom(...VARS, ...CONST.slice(0, 2)), { minLength: n, maxLength: n }).map((args): Atom => [p, ...args]));
const rule = fc
  .tuple(fc.array(patAtom, { minLength: 1, maxLength: 2 }), fc.constantFrom(...PREDS))
  .chain(([ants, [hp, hn]]) => {
    const bound = [...new Set(ants.flatMap((a) => a.slice(1).filter((x) => x.startsWith("?"))))];
    const pool = bound.length ? bound : CONST;
    return fc.array(fc.constantFrom(...pool, "a"), { minLength: hn, maxLength: hn }).map((args) => ({ ants, head: [hp, ...args] as Atom }));
  });
type Step = { kind: "fact"; atom: Atom } | { kind: "rule"; ants: Atom[]; head: Atom } | { kind: "retract"; pick: number };
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fact.map((atom) => ({ kind: "fact" as const, atom })) },
  { weight: 2, arbitrary: rule.map((r) => ({ kind: "rule" as const, ...r })) },
  { weight: 3, arbitrary: fc.nat(20).map((pick) => ({ kind: "retract" as const, pick })) },
);

describe("row engine spike", () => {
  it("keeps exactly the oracle's fixpoint through any order of asserts and retracts of facts and rules", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
        const e = new RowEngine();
        const live: { h: number; premise: OraclePremise }[] = [];
        for (const s of steps) {
          if (s.kind === "fact") {
            const h = e.assertFact(s.atom);
            if (!live.some((l) => l.h === h)) live.push({ h, premise: { sentence: text(s.atom), context: "CxA", strength: "monotonic" } });
          } else if (s.kind === "rule") {
            const h = e.assertRule(s.ants, s.head);
            const body = s.ants.length === 1 ? text(s.ants[0]!) : `(and ${s.ants.map(text).join(" ")})`;
            live.push({ h, premise: { sentence: `(implies ${body} ${text(s.head)})`, context: "CxA", strength: "monotonic" } });
          } else if (live.length) {
            const [gone] = live.splice(s.pick % live.length, 1);
            e.retract(gone!.h);
          }
          const fix = evaluate(live.map((l) => l.premise));
          const want = new Set([...fix.stored.values()].filter((x) => !x.rule).map((x) => x.text));
          expect(e.facts()).toEqual(want);
        }
      }),
      { numRuns: 300 },
    );
  });
});
