/**
 * The row engine (src/kb/rowengine.ts) with list arguments (terms interned by canonical text,
 * patterns with variables inside a list matched against the term), driven one sentence per
 * write through rowengine-driver.ts: after every assert and retract of facts and rules whose
 * arguments nest, what it stores and each stored fact's label, and each stored fact's
 * `firings`, are exactly the rules oracle's (test/kb/oracle/rules-oracle.ts).
 */
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { RowDriver, type RowLiteral } from "./rowengine-driver.js";
import { evaluate, type OraclePremise } from "./oracle/rules-oracle.js";
import { parseTerm, printTerm, type Term } from "../../src/kb/term.js";
import type { Strength } from "../../src/kb/write.js";

const C = fc.constantFrom("One", "Two");
const lit = (neg: boolean, atom: Term[]): RowLiteral => ({ neg, atom });
const text = (l: RowLiteral) => (l.neg ? `(not ${printTerm(l.atom)})` : printTerm(l.atom));

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

type Entry = { kind: "fact"; lit: RowLiteral } | { kind: "rule"; ants: readonly RowLiteral[]; head: RowLiteral };
const sentenceOf = (e: Entry) =>
  e.kind === "fact" ? text(e.lit) : `(implies ${e.ants.length === 1 ? text(e.ants[0]!) : `(and ${e.ants.map(text).join(" ")})`} ${text(e.head)})`;
const entryArb: fc.Arbitrary<Entry> = fc.oneof(
  { weight: 3, arbitrary: factArb.map((l) => ({ kind: "fact" as const, lit: l })) },
  { weight: 2, arbitrary: ruleArb.map((r) => ({ kind: "rule" as const, ...r })) },
);
const programArb = fc.uniqueArray(entryArb, { minLength: 1, maxLength: 8, selector: sentenceOf }).chain((pool) =>
  fc.tuple(
    fc.constant(pool),
    fc.array(
      fc.oneof(
        { weight: 6, arbitrary: fc.record({ kind: fc.constant("assert" as const), i: fc.nat(pool.length - 1), strength: fc.constantFrom<Strength>("default", "default", "monotonic") }) },
        { weight: 3, arbitrary: fc.record({ kind: fc.constant("retract" as const), i: fc.nat(pool.length - 1) }) },
      ),
      { minLength: 1, maxLength: 14 },
    ),
  ),
);

describe("row engine against the rules oracle, list arguments", () => {
  it("stores, labels and justifies exactly as the oracle's fixpoint after every step", () => {
    fc.assert(
      fc.property(programArb, ([pool, steps]) => {
        const e = new RowDriver();
        const live = new Map<number, { h: number; strength: Strength }>();
        const ruleKey = new Map<number, string>();
        for (const s of steps) {
          const entry = pool[s.i]!;
          if (s.kind === "assert") {
            if (entry.kind === "rule") {
              if (!live.has(s.i)) {
                const h = e.assertRule(entry.ants, entry.head);
                live.set(s.i, { h, strength: s.strength });
                ruleKey.set(h, `CxA|${printTerm(parseTerm(sentenceOf(entry)))}`);
              }
            } else {
              const h = e.assert(entry.lit, s.strength);
              const was = live.get(s.i);
              live.set(s.i, { h, strength: was?.strength === "monotonic" ? "monotonic" : s.strength });
            }
          } else {
            const was = live.get(s.i);
            if (!was) continue;
            e.retract(was.h);
            live.delete(s.i);
          }
          const premises: OraclePremise[] = [...live].map(([i, l]) => ({ sentence: sentenceOf(pool[i]!), context: "CxA", strength: l.strength }));
          const fix = evaluate(premises);
          const want = new Map([...fix.stored.values()].filter((x) => !x.rule).map((x) => [`${x.ctx}|${x.text}`, x.believed ? x.strength : "out"] as const));
          expect(new Map([...e.stored()].sort()), JSON.stringify(steps)).toEqual(new Map([...want].sort()));
          for (const x of fix.stored.values()) {
            if (x.rule) continue;
            const t = parseTerm(x.text) as Term[];
            const neg = t[0] === "not";
            const firings = e.why({ neg, atom: (neg ? t[1] : t) as Term[] }, x.ctx).map((f) => `${ruleKey.get(f.rule)} <- ${f.ants.join(" & ")}`);
            expect(firings.sort(), `why ${x.ctx}|${x.text}`).toEqual(x.firings.map((f) => `${f.rule} <- ${f.ants.join(" & ")}`).sort());
          }
        }
      }),
      { numRuns: 3000 },
    );
  });
});
