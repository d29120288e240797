/**
 * Reads over believed sentexes.
 *
 * `solve` is the cone-aware query: a literal goal matches believed sentexes stored anywhere
 * the context sees; `(and G ...)` joins left to right, most-bound conjunct first;
 * `(not S)` matches stored negations (classical negation, never absence); `(unknown G)` is
 * negation as failure: it holds when G has no solution under the current bindings.
 * `matchExact` is the exact-context read (`?ctx`, or any variable, means every context).
 */
import { type Bindings, type List, type Term, matchTerm, substitute, printTerm, isVariable } from "./term.js";
import { type Goal } from "./sentence.js";
import { type Node, OUT, predKey } from "./node.js";
import type { MemIndex } from "./memindex.js";

export interface SolveResult {
  solutions: Bindings[];
  truncated: boolean;
}

function boundCount(g: Goal, b: Bindings): number {
  if (g.kind !== "lit") return -1; // conjunctions and NAF go after the literals that bind
  let n = 0;
  for (let i = 1; i < g.lit.atom.length; i++) {
    const a = g.lit.atom[i]!;
    if (typeof a !== "string" || !isVariable(a) || b[a] !== undefined) n++;
  }
  return n;
}

/** Which stored nodes a read may see (the cone, minus `except` masks). */
export type Visible = (n: Node) => boolean;

export function solve(index: MemIndex, visible: Visible, goal: Goal, limit: number): SolveResult {
  const solutions: Bindings[] = [];
  const seen = new Set<string>();
  let truncated = false;
  const emit = (b: Bindings): boolean => {
    const key = printBindings(b);
    if (seen.has(key)) return true;
    if (solutions.length >= limit) {
      truncated = true;
      return false;
    }
    seen.add(key);
    solutions.push(b);
    return true;
  };
  run(index, visible, [goal], {}, emit);
  return { solutions, truncated };
}

/** Depth-first evaluation of a goal list; `emit` returns false to stop. */
function run(index: MemIndex, visible: Visible, goals: Goal[], b: Bindings, emit: (b: Bindings) => boolean): boolean {
  if (goals.length === 0) return emit(b);
  // Pick the most-bound goal next (NAF waits until the literals have bound what they can).
  let pick = 0;
  let best = -2;
  for (let i = 0; i < goals.length; i++) {
    const g = goals[i]!;
    const score = g.kind === "unknown" ? (goals.length === 1 ? 0 : -2) : boundCount(g, b);
    if (score > best) {
      best = score;
      pick = i;
    }
  }
  const g = goals[pick]!;
  const rest = goals.filter((_, i) => i !== pick);
  switch (g.kind) {
    case "and":
      return run(index, visible, [...g.goals, ...rest], b, emit);
    case "unknown": {
      let found = false;
      run(index, visible, [g.goal], b, () => {
        found = true;
        return false;
      });
      return found ? true : run(index, visible, rest, b, emit);
    }
    case "lit": {
      const pattern = substitute(g.lit.atom, b) as List;
      for (const n of index.candidates(predKey(g.lit.neg, pattern[0] as string), pattern)) {
        if (n.label === OUT || !visible(n)) continue;
        const b2 = matchTerm(pattern, n.atom, b);
        if (b2 && !run(index, visible, rest, b2, emit)) return false;
      }
      return true;
    }
  }
}

/** Believed sentexes stored exactly in `ctx` (any context when ctx is a variable) matching a literal. */
export function matchExact(index: MemIndex, ctx: string, neg: boolean, pattern: List, hidden: (n: Node, ctx: string) => boolean): Node[] {
  const any = isVariable(ctx);
  const out: Node[] = [];
  for (const n of index.candidates(predKey(neg, pattern[0] as string), pattern)) {
    if (n.label === OUT || (!any && (n.ctx !== ctx || hidden(n, ctx)))) continue;
    if (matchTerm(pattern, n.atom, {})) out.push(n);
  }
  return out.sort((a, b) => a.h - b.h);
}

export function printBindings(b: Bindings): string {
  return Object.keys(b)
    .sort()
    .map((k) => `${k}=${printTerm(b[k] as Term)}`)
    .join(" ");
}
