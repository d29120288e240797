/**
 * A test driver for the row engine (src/kb/rowengine.ts): single-sentence writes and the
 * reads the row engine's tests compare against their oracles, all through the engine's
 * production API only: `write` with prepared adds (src/kb/write.ts `PreparedAdd`, built as
 * `Engine.prepare`/`replayAdd` build them: `sentenceShape`, then `compileRule` for a rule),
 * `headSeq`, `keyOf`, `firings`, `clashPairs` and the index (`RowIndex`: `byHandle`, `find`).
 * Nothing here reaches into the engine's rows.
 */
import { RowEngine } from "../../src/kb/rowengine.js";
import { compileRule } from "../../src/kb/compiled.js";
import { UNIVERSE } from "../../src/kb/contexts.js";
import { literalTerm, sentenceShape } from "../../src/kb/sentence.js";
import { parseTerm, printTerm, type List, type Term } from "../../src/kb/term.js";
import { IN_DEFAULT, IN_MONO, type Label, type PremiseMark, type PreparedAdd, type Strength } from "../../src/kb/write.js";

export interface RowLiteral {
  neg: boolean;
  /** Predicate then arguments (symbols or lists); a variable is `?name`. */
  atom: readonly Term[];
}

/** A stored sentex's state as the engine's views show it (depth is no view field: it is not compared). */
export interface RowState {
  h: number;
  label: Label;
  premise: PremiseMark;
  creator: string | null;
  createdAt: number;
  seq: number;
}

/** A literal's sentence text, `(p A)` or `(not (p A))`. */
export const literalText = (l: RowLiteral): string => printTerm(literalTerm({ neg: l.neg, atom: l.atom as List }));

/** A rule's sentence text: `(implies A C)`, or `(implies (and A B ...) C)`. */
export const ruleText = (ants: readonly RowLiteral[], head: RowLiteral): string =>
  `(implies ${ants.length === 1 ? literalText(ants[0]!) : `(and ${ants.map(literalText).join(" ")})`} ${literalText(head)})`;

/** A write's add for `sentence` in `context` with premise mark `mark`, prepared as `Engine.prepare` prepares it (without its checks). */
export function prepareAdd(sentence: string, context: string, mark: 1 | 2, creator: string | null = null): PreparedAdd {
  const parsed = sentenceShape(parseTerm(sentence));
  if (parsed.kind === "rule") {
    const text = printTerm(parsed.term);
    return { ctx: context, neg: false, atom: parsed.term, akey: text, text, rule: compileRule(parsed.rule), mark, creator };
  }
  const { neg, atom } = parsed.lit;
  const akey = printTerm(atom);
  // A link is forced into CxUniverse, monotonic (as Engine.prepare does).
  const edge = !neg && atom[0] === "genlCx";
  return { ctx: edge ? UNIVERSE : context, neg, atom, akey, text: neg ? `(not ${akey})` : akey, rule: null, mark: edge ? 2 : mark, creator };
}

const strengthOf = (label: Label): "out" | "default" | "monotonic" => (label === IN_MONO ? "monotonic" : label === IN_DEFAULT ? "default" : "out");

/** A row engine driven one sentence at a time, and read as the tests compare it. */
export class RowDriver {
  constructor(readonly engine: RowEngine = new RowEngine()) {}

  /** Assert a fact in a context, as one write; its handle. A re-assert may upgrade a default premise to monotonic. */
  assert(lit: RowLiteral, strength: Strength = "default", context = "CxA"): number {
    return this.writeOne(prepareAdd(literalText(lit), context, strength === "monotonic" ? 2 : 1));
  }

  /** Assert a rule (monotonic) in a context, as one write; its handle. */
  assertRule(ants: readonly RowLiteral[], head: RowLiteral, context = "CxA"): number {
    return this.writeOne(prepareAdd(ruleText(ants, head), context, 2));
  }

  /** Retract a premise or a rule by handle, as one write (a fact that is also derived stays, as a conclusion). */
  retract(h: number): void {
    this.engine.write([], [h], this.engine.headSeq + 1);
  }

  private writeOne(add: PreparedAdd): number {
    return this.engine.write([add], [], this.engine.headSeq + 1).addedHandles[0]!;
  }

  /** Every stored sentex (facts and rules) by `context|text`, with its state. */
  dump(): Map<string, RowState> {
    const out = new Map<string, RowState>();
    for (const v of this.engine.index.byHandle.values()) {
      out.set(`${v.ctx}|${v.text}`, { h: v.h, label: v.label, premise: v.premise, creator: v.creator, createdAt: v.createdAt, seq: v.seq });
    }
    return out;
  }

  /** Every stored fact (no rule) as `context|text`, with its label. */
  stored(): Map<string, "out" | "default" | "monotonic"> {
    const out = new Map<string, "out" | "default" | "monotonic">();
    for (const v of this.engine.index.byHandle.values()) if (v.rule === null) out.set(`${v.ctx}|${v.text}`, strengthOf(v.label));
    return out;
  }

  /** `firings` of the literal stored in `context` (none when it is not stored), antecedents as `context|text`. */
  why(lit: RowLiteral, context: string): { rule: number; ants: string[] }[] {
    const v = this.engine.index.find(context, lit.neg, lit.atom as List);
    return v ? this.engine.firings(v.h).map((f) => ({ rule: f.rule, ants: f.ants.map((a) => this.engine.keyOf(a)!) })) : [];
  }

  /** `clashPairs` seen from `ctx`, each as `kind: context|text|strength vs context|text|strength`, sorted. */
  clashes(ctx: string): { contradictions: string[]; conflicts: string[] } {
    const side = (h: number) => `${this.engine.keyOf(h)}|${this.engine.index.byHandle.get(h)!.label === IN_MONO ? "monotonic" : "default"}`;
    const contradictions = new Set<string>();
    const conflicts = new Set<string>();
    for (const c of this.engine.clashPairs(ctx)) (c.kind === "conflict" ? conflicts : contradictions).add(`${c.kind}: ${side(c.pos)} vs ${side(c.neg)}`);
    return { contradictions: [...contradictions].sort(), conflicts: [...conflicts].sort() };
  }
}
