/**
 * The rules oracle property, shared by the default run (test/kb/rules-oracle.test.ts) and
 * the slow one (test/kb/rules-oracle.slow.test.ts): random programs (facts of either
 * polarity and strength, rules with negative antecedents and conclusions, genlCx edges,
 * four contexts with CxCore among them) played as random assert / retract / edit
 * sequences against a real KB on a SQLite file; after every step the engine and the
 * oracle agree on what is stored, believed and at which strength, on the clashes each
 * context sees, on `(not ...)` and `(unknown ...)` queries; and every justification `why`
 * gives is a valid firing in the oracle's fixpoint, the edges it names a shortest path.
 */
import { join } from "node:path";
import fc from "fast-check";
import { expect } from "vitest";
import { openKb, type Kb, type Strength } from "../../../src/kb/index.js";
import { believed, clashes, stored as storedOf } from "../helpers.js";
import { evaluate, keyOf, type Fixpoint, type OraclePremise } from "./rules-oracle.js";
import { FACT_CONTEXTS, factArb, linkArb, literalText, ruleArb, skewed } from "./program-arbs.js";

/** A premise without its strength: the strength is drawn per assert (a re-assert may upgrade it). */
type Sentence = Omit<OraclePremise, "strength">;

const factSentenceArb: fc.Arbitrary<Sentence> = fc.tuple(factArb, skewed(FACT_CONTEXTS)).map(([l, context]) => ({ sentence: literalText(l), context }));

/** Rules written `(implies (and A ...) C)`, one antecedent too. */
const ruleSentenceArb: fc.Arbitrary<Sentence> = fc
  .tuple(ruleArb, skewed(FACT_CONTEXTS))
  .map(([{ ants, head }, context]) => ({ sentence: `(implies (and ${ants.map(literalText).join(" ")}) ${literalText(head)})`, context }));

const edgeArb: fc.Arbitrary<Sentence> = linkArb.map(([a, b]) => ({ sentence: `(genlCx ${a} ${b})`, context: "CxUniverse" }));

const poolArb = fc.uniqueArray(fc.oneof({ weight: 5, arbitrary: factSentenceArb }, { weight: 3, arbitrary: ruleSentenceArb }, { weight: 1, arbitrary: edgeArb }), {
  minLength: 1,
  maxLength: 8,
  selector: (s) => `${s.context}|${s.sentence}`,
});

const strengthArb = fc.constantFrom<Strength>("default", "default", "monotonic");

/** One step: assert a pool entry, retract one (skipped when it is not asserted), or an edit batch. */
type Step =
  | { kind: "assert"; i: number; strength: Strength }
  | { kind: "retract"; i: number }
  | { kind: "edit"; add: { i: number; strength: Strength }[]; remove: number[] };

const stepArb = (n: number): fc.Arbitrary<Step> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant("assert" as const), i: fc.nat(n - 1), strength: strengthArb }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("retract" as const), i: fc.nat(n - 1) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("edit" as const),
        add: fc.array(fc.record({ i: fc.nat(n - 1), strength: strengthArb }), { maxLength: 3 }),
        remove: fc.uniqueArray(fc.nat(n - 1), { maxLength: 2 }),
      }),
    },
  );

export const programArb = poolArb.chain((pool) => fc.tuple(fc.constant(pool), fc.array(stepArb(pool.length), { minLength: 1, maxLength: 14 })));

/** Every believed sentex as "context|sentence|strength" (the helpers' `believed` form). */
function oracleBelieved(fix: Fixpoint): string[] {
  return [...fix.stored.values()].filter((e) => e.believed).map((e) => `${e.ctx}|${e.text}|${e.strength}`).sort();
}

function oracleStored(fix: Fixpoint): string[] {
  return [...fix.stored.values()].map((e) => `${e.ctx}|${e.text}|${e.believed ? "in" : "out"}`).sort();
}

/** Query goals exercising classical negation and negation as failure. */
const GOALS = [
  "(p ?x)",
  "(not (q ?x))",
  "(and (p ?x) (not (q ?x)))",
  "(and (p ?x) (unknown (q ?x)))",
  "(and (e ?x ?y) (unknown (not (r ?y))))",
  "(unknown (r ?z))",
  "(and (q ?x) (unknown (and (e ?x ?y) (p ?y))))",
];

/** Every check of one step: the engine against the oracle's fixpoint of the asserted premises. */
function agree(kb: Kb, premises: readonly OraclePremise[], step: string): void {
  const fix = evaluate(premises);
  expect(storedOf(kb), `${step}: stored`).toEqual(oracleStored(fix));
  expect(believed(kb), `${step}: believed`).toEqual(oracleBelieved(fix));
  const views = [...FACT_CONTEXTS];
  const want = { contradictions: views.flatMap((c) => fix.clashes(c).contradictions).sort(), conflicts: views.flatMap((c) => fix.clashes(c).conflicts).sort() };
  expect(clashes(kb, views), `${step}: clashes`).toEqual(want);
  for (const ctx of views) {
    for (const goal of GOALS) {
      const got = kb.query(goal, ctx).solutions.map((s) => Object.keys(s).sort().map((k) => `${k}=${s[k]}`).join(" "));
      expect([...new Set(got)].sort(), `${step}: query ${goal} in ${ctx}`).toEqual(fix.query(goal, ctx));
    }
  }
  const key = (h: number) => {
    const r = kb.sentex(h);
    expect(r, `${step}: why names handle ${h}, which is not stored`).toBeDefined();
    return keyOf(r!.context, r!.sentence);
  };
  for (const h of kb.engine.index.byHandle.keys()) {
    const r = kb.sentex(h)!;
    const k = keyOf(r.context, r.sentence);
    const o = fix.stored.get(k)!;
    const w = kb.why(h);
    expect({ believed: w.believed, premise: w.premise, strength: w.strength, reason: w.reason }, `${step}: why ${k}`).toEqual({
      believed: o.believed,
      premise: o.premise,
      strength: o.strength,
      reason: o.believed ? undefined : "defeated",
    });
    for (const s of w.support) {
      const ants = s.antecedents.map(key);
      expect(fix.validFiring(key(s.rule), ants, k), `${step}: why ${k} gives ${key(s.rule)} over ${ants.join(", ")}`).toBeUndefined();
      checkEdges(kb, fix, k, [fix.rules.get(key(s.rule))!.ctx, ...ants.map((a) => fix.stored.get(a)!.ctx)], s.edges, `${step}: why ${k} edges`);
    }
    // Complete as well as sound: the justifications are exactly the oracle's firings over IN.
    const given = w.support.map((s) => `${key(s.rule)} <- ${s.antecedents.map(key).join(", ")}`).sort();
    expect(given, `${step}: why ${k} support`).toEqual(o.firings.map((f) => `${f.rule} <- ${f.ants.join(", ")}`).sort());
  }
}

/** The edges `why` names: stored genlCx edges holding one shortest path from the conclusion up to each source. */
function checkEdges(kb: Kb, fix: Fixpoint, concl: string, sources: string[], edges: number[], what: string): void {
  const from = fix.stored.get(concl)!.ctx;
  const named = edges.map((h) => {
    const t = kb.sentex(h)!.sentence.match(/^\(genlCx (\S+) (\S+)\)$/);
    expect(t, `${what}: handle ${h} is no genlCx edge`).not.toBeNull();
    return [t![1]!, t![2]!] as [string, string];
  });
  for (const src of sources) {
    const shortest = fix.contexts.distance(from, src);
    if (shortest === undefined) continue; // seen through CxCore alone: no edge to name
    expect(fix.contexts.distance(from, src, named), `${what}: a shortest path ${from} -> ${src}`).toBe(shortest);
  }
  for (const [a, b] of named) {
    const onPath = sources.some((src) => {
      const total = fix.contexts.distance(from, src);
      const head = fix.contexts.distance(from, a);
      const tail = fix.contexts.distance(b, src);
      return total !== undefined && head !== undefined && tail !== undefined && head + 1 + tail === total;
    });
    expect(onPath, `${what}: edge ${a} -> ${b} is on no shortest path`).toBe(true);
  }
}

/** Play one program on a KB in `dir`, checking agreement after every step, then after reopening. */
export async function playProgram(dir: string, run: number, pool: readonly Sentence[], steps: readonly Step[]): Promise<void> {
  const path = join(dir, `oracle-${run}.db`);
  let kb = await openKb({ path, durability: "normal" });
  const asserted = new Map<number, { handle: number; strength: Strength }>();
  const premises = () =>
    [...asserted].map(([i, a]) => ({ ...pool[i]!, strength: a.strength }));
  const upgrade = (i: number, s: Strength): Strength => (asserted.get(i)?.strength === "monotonic" ? "monotonic" : s);
  try {
    agree(kb, premises(), "empty");
    for (const [n, step] of steps.entries()) {
      const label = `step ${n} ${JSON.stringify(step)}`;
      if (step.kind === "assert") {
        const p = pool[step.i]!;
        const { handle } = await kb.assert(p.sentence, p.context, { strength: step.strength });
        asserted.set(step.i, { handle, strength: upgrade(step.i, step.strength) });
      } else if (step.kind === "retract") {
        const a = asserted.get(step.i);
        if (!a) continue;
        await kb.retract(a.handle);
        asserted.delete(step.i);
      } else {
        const remove = step.remove.filter((i) => asserted.has(i) && !step.add.some((x) => x.i === i));
        const res = await kb.edit({
          add: step.add.map((x) => ({ ...pool[x.i]!, strength: x.strength })),
          remove: remove.map((i) => asserted.get(i)!.handle),
        });
        for (const i of remove) asserted.delete(i);
        step.add.forEach((x, j) => asserted.set(x.i, { handle: res.added[j]!, strength: upgrade(x.i, x.strength) }));
      }
      agree(kb, premises(), label);
    }
    await kb.close();
    kb = await openKb({ path });
    agree(kb, premises(), "reopened");
  } finally {
    await kb.close();
  }
}

/** Run the property `numRuns` times in `dir`. */
export async function checkAgainstOracle(dir: string, numRuns: number): Promise<void> {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(programArb, async ([pool, steps]) => playProgram(dir, run++, pool, steps)),
    { numRuns },
  );
}
