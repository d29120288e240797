/**
 * SPIKE: the row engine against main's engine, write by write. Programs are drawn as main's
 * oracle test draws them (facts of either polarity and strength in four contexts, rules with
 * negative antecedents and conclusions, genlCx links), played as batches of adds and removes,
 * each batch one write through both engines with the same prepared adds. After every write,
 * both store the same sentexes (by context and text) with the same label, premise mark,
 * creator, time, seq and depth, and report the same outcome: the handles added and whether
 * each was new, what was created, updated and deleted (with the reason), which beliefs came
 * and went (with the reason), the write's seq and whether chaining was bounded. Handles differ
 * between the engines (derived facts are minted in firing order); they are compared through
 * the sentex each names.
 */
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { RowEngine, type RowOutcome } from "../../src/kb/rowengine.js";
import { Engine, type WriteOutcome, type Strength } from "../../src/kb/engine.js";

const UNARY = ["p", "q", "r"] as const;
const CONSTANTS = ["One", "Two"] as const;
const CONTEXTS = ["CxA", "CxB", "CxC"] as const;
const FACT_CONTEXTS = [...CONTEXTS, "CxCore"] as const;
const skewed = <T,>(xs: readonly T[]) => fc.constantFrom(xs[0]!, xs[0]!, ...xs);

const lit = (neg: boolean, atom: string) => (neg ? `(not ${atom})` : atom);

const factArb = fc
  .record({ binary: fc.constantFrom(false, false, false, true), pred: skewed(UNARY), a: skewed(CONSTANTS), b: skewed(CONSTANTS), neg: fc.boolean() })
  .map(({ binary, pred, a, b, neg }) => lit(neg && !binary, binary ? `(e ${a} ${b})` : `(${pred} ${a})`));

/** Rules shaped as the oracle test draws them: a positive antecedent binds every variable. */
const ruleArb = fc
  .record({
    first: skewed(UNARY),
    firstNeg: fc.constantFrom(false, false, true),
    second: fc.option(fc.record({ pred: skewed(UNARY), neg: fc.boolean() }), { nil: undefined, freq: 2 }),
    viaEdge: fc.constantFrom(false, false, true),
    cons: fc.constantFrom(...UNARY),
    consNeg: fc.boolean(),
  })
  .map(({ first, firstNeg, second, viaEdge, cons, consNeg }) => {
    const ants = [lit(firstNeg && viaEdge, `(${first} ?x)`)];
    if (viaEdge) ants.push("(e ?x ?y)");
    if (second) ants.push(lit(second.neg, `(${second.pred} ${viaEdge ? "?y" : "?x"})`));
    const head = lit(consNeg, `(${cons} ${viaEdge ? "?y" : "?x"})`);
    return `(implies ${ants.length === 1 ? ants[0] : `(and ${ants.join(" ")})`} ${head})`;
  });

interface Entry {
  sentence: string;
  context: string;
}
const edgeArb = fc
  .tuple(fc.constantFrom(...CONTEXTS), fc.constantFrom(...FACT_CONTEXTS))
  .filter(([a, b]) => a !== b)
  .map(([a, b]): Entry => ({ sentence: `(genlCx ${a} ${b})`, context: "CxUniverse" }));
const entryArb: fc.Arbitrary<Entry> = fc.oneof(
  { weight: 5, arbitrary: fc.tuple(factArb, skewed(FACT_CONTEXTS)).map(([sentence, context]) => ({ sentence, context })) },
  { weight: 3, arbitrary: fc.tuple(ruleArb, skewed(FACT_CONTEXTS)).map(([sentence, context]) => ({ sentence, context })) },
  { weight: 1, arbitrary: edgeArb },
);

const strengthArb = fc.constantFrom<Strength>("default", "default", "monotonic");
interface Batch {
  adds: { i: number; strength: Strength; creator: string }[];
  removes: number[];
}
const programArb = fc.uniqueArray(entryArb, { minLength: 1, maxLength: 8, selector: (e) => `${e.context}|${e.sentence}` }).chain((pool) =>
  fc.tuple(
    fc.constant(pool),
    fc.array(
      fc.record({
        adds: fc.array(fc.record({ i: fc.nat(pool.length - 1), strength: strengthArb, creator: fc.constantFrom("Ann", "Bo") }), { maxLength: 3 }),
        removes: fc.array(fc.nat(pool.length - 1), { maxLength: 2 }),
      }),
      { minLength: 1, maxLength: 10 },
    ),
  ),
);

/** Each stored sentex of main's engine by `context|text`, with the state the row engine reports. */
function mainState(m: Engine) {
  const out = new Map<string, object>();
  for (const n of m.index.byHandle.values()) {
    out.set(`${n.ctx}|${n.text}`, { label: n.label, premise: n.premise, creator: n.creator, createdAt: n.createdAt, seq: n.seq, depth: n.depth });
  }
  return out;
}

function rowState(e: RowEngine) {
  const out = new Map<string, object>();
  for (const [k, { h: _h, ...s }] of e.dump()) out.set(k, s);
  return out;
}

const sorted = (xs: string[]) => [...xs].sort();

function mainOutcome(o: WriteOutcome, key: (h: number) => string) {
  const node = (n: { ctx: string; text: string }) => `${n.ctx}|${n.text}`;
  return {
    seq: o.seq,
    added: o.addedHandles.map((h, i) => `${key(h)} ${o.createdFlags[i]}`),
    removed: sorted(o.removedHandles.map(key)),
    created: sorted(o.created.map(node)),
    updated: sorted(o.updated.map(node)),
    deleted: sorted(o.deleted.map((d) => `${node(d.node)} ${d.reason}`)),
    beliefAdded: sorted(o.beliefAdded.map(node)),
    beliefRemoved: sorted(o.beliefRemoved.map((d) => `${node(d.node)} ${d.reason}`)),
    bounded: o.bounded,
  };
}

function rowOutcome(o: RowOutcome, key: (h: number) => string) {
  return {
    seq: o.seq,
    added: o.addedHandles.map((h, i) => `${key(h)} ${o.createdFlags[i]}`),
    removed: sorted(o.removedHandles.map(key)),
    created: sorted(o.created.map(key)),
    updated: sorted(o.updated.map(key)),
    deleted: sorted(o.deleted.map((d) => `${key(d.h)} ${d.reason}`)),
    beliefAdded: sorted(o.beliefAdded.map(key)),
    beliefRemoved: sorted(o.beliefRemoved.map((d) => `${key(d.h)} ${d.reason}`)),
    bounded: o.bounded,
  };
}

/** Play a program through both engines, comparing after every write. */
function play(pool: Entry[], batches: Batch[], limits: { maxDerivations: number; maxDepth: number } = { maxDerivations: 1e9, maxDepth: 1e9 }) {
  let clock = 1_000;
  const m = new Engine({ limits, now: () => clock });
  const e = new RowEngine({ limits, now: () => clock });
  /** Pool index -> each engine's handle for it, while stored. */
  const mainH = new Map<number, number>();
  const rowH = new Map<number, number>();
  /** Every handle main minted -> its sentex (main forgets deleted nodes). */
  const mainKeys = new Map<number, string>();
  /** Handles each engine reported deleted: never handed out again. */
  const retired = { main: new Set<number>(), row: new Set<number>() };
  const fresh = (gone: Set<number>, deleted: number[], created: number[], where: string) => {
    for (const h of created) expect(gone.has(h), `handle ${h} came back after it was deleted, ${where}`).toBe(false);
    for (const h of deleted) gone.add(h);
  };
  let seq = 0;
  for (const [step, b] of batches.entries()) {
    clock += 10;
    seq++;
    const prepared = b.adds.map((a) => m.prepare({ sentence: pool[a.i]!.sentence, context: pool[a.i]!.context, strength: a.strength, creator: a.creator }));
    const mo = m.apply(prepared, b.removes.flatMap((i) => (mainH.has(i) ? [mainH.get(i)!] : [])), seq);
    const ro = e.write(prepared, b.removes.flatMap((i) => (rowH.has(i) ? [rowH.get(i)!] : [])), seq);
    for (const n of [...mo.created, ...mo.updated]) mainKeys.set(n.h, `${n.ctx}|${n.text}`);
    for (const n of m.index.byHandle.values()) mainKeys.set(n.h, `${n.ctx}|${n.text}`);
    const where = `write ${step} of ${JSON.stringify(batches)} over ${JSON.stringify(pool)}`;
    expect(rowOutcome(ro, (h) => e.keyOf(h) ?? `?${h}`), where).toEqual(mainOutcome(mo, (h) => mainKeys.get(h) ?? `?${h}`));
    fresh(retired.main, mo.removedHandles, mo.addedHandles, where);
    fresh(retired.row, ro.removedHandles, ro.addedHandles, where);
    if (mo.bounded) return; // past a bound, which firings ran is each engine's own order
    expect(new Map([...rowState(e)].sort()), where).toEqual(new Map([...mainState(m)].sort()));
    b.adds.forEach((a, k) => {
      mainH.set(a.i, mo.addedHandles[k]!);
      rowH.set(a.i, ro.addedHandles[k]!);
    });
    for (const i of b.removes) {
      if (!m.index.byHandle.has(mainH.get(i) ?? -1)) mainH.delete(i);
      if (!e.live(rowH.get(i) ?? -1)) rowH.delete(i);
    }
  }
}

describe("row engine spike against main's engine", () => {
  it("stores the same sentexes with the same state and reports the same outcome after every write", () => {
    fc.assert(
      fc.property(programArb, ([pool, batches]) => play(pool, batches)),
      { numRuns: 3000 },
    );
  });

  it("refuses the same writes at maxDepth and maxDerivations", () => {
    fc.assert(
      fc.property(programArb, fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 6 }), ([pool, batches], maxDepth, maxDerivations) =>
        play(pool, batches, { maxDepth, maxDerivations }),
      ),
      { numRuns: 2000 },
    );
  });
});
