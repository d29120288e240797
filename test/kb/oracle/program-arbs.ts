/**
 * The programs the rules oracle's tests draw, shared by them (rules-oracle-check.ts,
 * rowengine.test.ts, rowengine-differential.test.ts): a vocabulary small enough that drawn
 * sentences collide (three unary predicates and a binary `e`, two constants, three contexts and
 * CxCore), facts of either polarity, rules with negative antecedents and conclusions whose one
 * positive antecedent binds every variable, and genlCx links between two different contexts.
 * Drawn as literals; each test prints them as it writes sentences.
 */
import fc from "fast-check";

export const UNARY = ["p", "q", "r"] as const;
export const CONSTANTS = ["One", "Two"] as const;
export const CONTEXTS = ["CxA", "CxB", "CxC"] as const;
export const FACT_CONTEXTS = [...CONTEXTS, "CxCore"] as const;

/** Draw the first of a list more often than the others: dense programs collide, sparse ones rarely do. */
export const skewed = <T,>(xs: readonly T[]) => fc.constantFrom(xs[0]!, xs[0]!, ...xs);

/** A drawn literal: its polarity and its atom (predicate, then arguments; a variable is `?x`). */
export interface DrawnLiteral {
  neg: boolean;
  atom: string[];
}

/** A literal's sentence text: `(p One)` or `(not (p One))`. */
export const literalText = (l: DrawnLiteral): string => (l.neg ? `(not (${l.atom.join(" ")}))` : `(${l.atom.join(" ")})`);

/** A fact: a unary fact of either polarity, or a positive edge `(e A B)`. */
export const factArb: fc.Arbitrary<DrawnLiteral> = fc
  .record({ binary: fc.constantFrom(false, false, false, true), pred: skewed(UNARY), a: skewed(CONSTANTS), b: skewed(CONSTANTS), neg: fc.boolean() })
  .map(({ binary, pred, a, b, neg }) => ({ neg: neg && !binary, atom: binary ? ["e", a, b] : [pred, a] }));

/** A rule: the first antecedent (negative only beside the edge, which then binds), the edge or not, a second antecedent or not, the conclusion. */
export const ruleArb: fc.Arbitrary<{ ants: DrawnLiteral[]; head: DrawnLiteral }> = fc
  .record({
    first: skewed(UNARY),
    firstNeg: fc.constantFrom(false, false, true),
    second: fc.option(fc.record({ pred: skewed(UNARY), neg: fc.boolean() }), { nil: undefined, freq: 2 }),
    viaEdge: fc.constantFrom(false, false, true),
    cons: fc.constantFrom(...UNARY),
    consNeg: fc.boolean(),
  })
  .map(({ first, firstNeg, second, viaEdge, cons, consNeg }) => {
    const v = viaEdge ? "?y" : "?x";
    const ants: DrawnLiteral[] = [{ neg: firstNeg && viaEdge, atom: [first, "?x"] }];
    if (viaEdge) ants.push({ neg: false, atom: ["e", "?x", "?y"] });
    if (second) ants.push({ neg: second.neg, atom: [second.pred, v] });
    return { ants, head: { neg: consNeg, atom: [cons, v] } };
  });

/** A genlCx link: a sub-context and a different super-context (CxCore among the supers). */
export const linkArb: fc.Arbitrary<[sub: string, sup: string]> = fc.tuple(fc.constantFrom(...CONTEXTS), fc.constantFrom(...FACT_CONTEXTS)).filter(([a, b]) => a !== b);
