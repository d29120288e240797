/**
 * A program of the row engine's oracle tests (rowengine.test.ts, rowengine-terms.test.ts):
 * a pool of facts and rules, and steps that assert (at a drawn strength) or retract one, played
 * one sentence per write through rowengine-driver.ts. After every step, what the engine stores
 * and each stored fact's label, and each stored fact's `firings`, are exactly the rules
 * oracle's fixpoint's; `each` adds the caller's own checks.
 */
import fc from "fast-check";
import { expect } from "vitest";
import { RowDriver, literalText, ruleText, type RowLiteral } from "../rowengine-driver.js";
import { evaluate, type Fixpoint, type OraclePremise } from "./rules-oracle.js";
import { parseTerm, printTerm, type Term } from "../../../src/kb/term.js";
import type { Strength } from "../../../src/kb/write.js";

export type PlayEntry = { kind: "fact"; lit: RowLiteral; context: string } | { kind: "rule"; ants: readonly RowLiteral[]; head: RowLiteral; context: string };
export type PlayStep = { kind: "assert"; i: number; strength: Strength } | { kind: "retract"; i: number };

export const sentenceOf = (e: PlayEntry): string => (e.kind === "fact" ? literalText(e.lit) : ruleText(e.ants, e.head));

/** Steps over a pool of n entries: asserts twice as often as retracts, a third of them monotonic. */
export const stepsArb = (n: number): fc.Arbitrary<PlayStep[]> =>
  fc.array(
    fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant("assert" as const), i: fc.nat(n - 1), strength: fc.constantFrom<Strength>("default", "default", "monotonic") }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant("retract" as const), i: fc.nat(n - 1) }) },
    ),
    { minLength: 1, maxLength: 14 },
  );

/** A pool of distinct entries (by context and sentence) and steps over it. */
export const programArb = (entryArb: fc.Arbitrary<PlayEntry>): fc.Arbitrary<[PlayEntry[], PlayStep[]]> =>
  fc
    .uniqueArray(entryArb, { minLength: 1, maxLength: 8, selector: (e) => `${e.context}|${sentenceOf(e)}` })
    .chain((pool) => fc.tuple(fc.constant(pool), stepsArb(pool.length)));

export function playAgainstOracle(pool: readonly PlayEntry[], steps: readonly PlayStep[], each: (e: RowDriver, fix: Fixpoint) => void = () => {}): void {
  const e = new RowDriver();
  /** Pool index -> its handle and strength while asserted. */
  const live = new Map<number, { h: number; strength: Strength }>();
  /** Rule handle -> the oracle's key for it. */
  const ruleKey = new Map<number, string>();
  for (const s of steps) {
    const entry = pool[s.i]!;
    if (s.kind === "assert") {
      if (entry.kind === "rule") {
        if (!live.has(s.i)) {
          const h = e.assertRule(entry.ants, entry.head, entry.context);
          live.set(s.i, { h, strength: s.strength });
          ruleKey.set(h, `${entry.context}|${printTerm(parseTerm(sentenceOf(entry)))}`);
        }
      } else {
        const h = e.assert(entry.lit, s.strength, entry.context);
        const was = live.get(s.i);
        live.set(s.i, { h, strength: was?.strength === "monotonic" ? "monotonic" : s.strength });
      }
    } else {
      const was = live.get(s.i);
      if (!was) continue;
      e.retract(was.h);
      live.delete(s.i);
    }
    const premises: OraclePremise[] = [...live].map(([i, l]) => ({ sentence: sentenceOf(pool[i]!), context: pool[i]!.context, strength: l.strength }));
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
    each(e, fix);
  }
}
