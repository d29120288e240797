/**
 * Reads over believed sentexes.
 *
 * `solve` is the cone-aware query: a literal goal matches believed sentexes stored anywhere
 * the context sees; `(and G ...)` joins left to right, most-bound conjunct first;
 * `(not S)` matches stored negations (classical negation, never absence); `(unknown G)` is
 * negation as failure: it holds when G has no solution under the current bindings.
 * `matchExact` is the exact-context read (`?ctx`, or any variable, means every context).
 *
 * K11: every read runs on the writer's thread, so every read is bounded. A `ReadBudget`
 * counts steps (stored sentexes examined), results and elapsed time; over any of them the
 * read stops at once and is refused `too-costly`, naming the bound.
 */
import { performance } from "node:perf_hooks";
import { KbError } from "./errors.js";
import { type Bindings, type List, type Term, matchTerm, substitute, printTerm, isVariable } from "./term.js";
import { type Goal } from "./sentence.js";
import type { Node } from "./node.js";
import { OUT } from "./write.js";
import { predKey } from "./sentence.js";
import type { RowIndex } from "./rowengine.js";

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

/** The work bounds of one read, each with its unit in its name. */
export interface ReadLimits {
  /** Stored sentexes one read may examine (every candidate of every literal, NAF included). */
  maxQuerySteps: number;
  /** Rows one read may answer: a query is truncated there, a match over it is refused. */
  maxResults: number;
  /** Wall-clock milliseconds one read may run on the writer's thread. */
  maxReadMs: number;
}

/**
 * Defaults measured on a two-core machine: 200 000 steps take 20-60 ms, so a write that
 * arrives behind the worst read the bounds allow waits well under 100 ms.
 */
export const DEFAULT_READ_LIMITS: ReadLimits = { maxQuerySteps: 200_000, maxResults: 10_000, maxReadMs: 50 };

/** How often (in steps) a read looks at the clock. */
const CLOCK_EVERY_STEPS = 256;

/** One read's meter: `step()` per sentex examined; throws `too-costly` past a bound. */
export class ReadBudget {
  steps = 0;
  private readonly startedMs = performance.now();

  constructor(readonly limits: ReadLimits) {}

  step(): void {
    const n = ++this.steps;
    if (n > this.limits.maxQuerySteps) {
      throw new KbError("too-costly", `the read examined more than ${this.limits.maxQuerySteps} sentexes (maxQuerySteps); bind more of the goal or narrow the context`, {
        details: { bound: "maxQuerySteps", limit: this.limits.maxQuerySteps },
      });
    }
    if (n % CLOCK_EVERY_STEPS === 0 && performance.now() - this.startedMs > this.limits.maxReadMs) {
      throw new KbError("too-costly", `the read ran past ${this.limits.maxReadMs} ms (maxReadMs); bind more of the goal or narrow the context`, {
        details: { bound: "maxReadMs", limit: this.limits.maxReadMs },
      });
    }
  }

  results(n: number): void {
    if (n > this.limits.maxResults) {
      throw new KbError("too-costly", `the read would answer more than ${this.limits.maxResults} rows (maxResults); narrow the pattern or the context`, {
        details: { bound: "maxResults", limit: this.limits.maxResults },
      });
    }
  }
}

export function solve(index: RowIndex, visible: Visible, goal: Goal, limit: number, budget: ReadBudget): SolveResult {
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
  run(index, visible, budget, [goal], {}, emit);
  return { solutions, truncated };
}

/** Depth-first evaluation of a goal list; `emit` returns false to stop. */
function run(index: RowIndex, visible: Visible, budget: ReadBudget, goals: Goal[], b: Bindings, emit: (b: Bindings) => boolean): boolean {
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
      return run(index, visible, budget, [...g.goals, ...rest], b, emit);
    case "unknown": {
      let found = false;
      run(index, visible, budget, [g.goal], b, () => {
        found = true;
        return false;
      });
      return found ? true : run(index, visible, budget, rest, b, emit);
    }
    case "lit": {
      const pattern = substitute(g.lit.atom, b) as List;
      for (const n of index.candidates(predKey(g.lit.neg, pattern[0] as string), pattern)) {
        budget.step();
        if (n.label === OUT || !visible(n)) continue;
        const b2 = matchTerm(pattern, n.atom, b);
        if (b2 && !run(index, visible, budget, rest, b2, emit)) return false;
      }
      return true;
    }
  }
}

/** Believed sentexes stored exactly in `ctx` (any context when ctx is a variable) matching a literal. */
export function matchExact(index: RowIndex, ctx: string, neg: boolean, pattern: List, hidden: (n: Node, ctx: string) => boolean, budget: ReadBudget): Node[] {
  const any = isVariable(ctx);
  const out: Node[] = [];
  for (const n of index.candidates(predKey(neg, pattern[0] as string), pattern)) {
    budget.step();
    if (n.label === OUT || (!any && (n.ctx !== ctx || hidden(n, ctx)))) continue;
    if (matchTerm(pattern, n.atom, {})) {
      out.push(n);
      budget.results(out.length);
    }
  }
  return out.sort((a, b) => a.h - b.h);
}

export function printBindings(b: Bindings): string {
  return Object.keys(b)
    .sort()
    .map((k) => `${k}=${printTerm(b[k] as Term)}`)
    .join(" ");
}
