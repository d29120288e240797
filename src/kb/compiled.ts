/**
 * Rules compiled for the join: every variable of a rule gets a slot number, and each
 * antecedent and the consequent become patterns where a constant atom is its string, a
 * variable is its slot number and a list is an array of patterns. Matching binds slots in
 * one shared array and undoes them on backtrack (a trail), so a firing allocates no
 * binding objects.
 */
import { type List, type Term, isVariable, termEquals, printTerm } from "./term.js";
import { predKey, type Literal, type RuleShape } from "./sentence.js";

export type Pat = string | number | Pat[];

export interface CompiledLiteral {
  neg: boolean;
  key: string;
  pat: Pat[];
}

export interface CompiledRule {
  antecedents: Literal[];
  consequent: Literal;
  /** predKey of each antecedent. */
  keys: string[];
  lits: CompiledLiteral[];
  head: CompiledLiteral;
  slots: number;
}

function compilePat(t: Term, vars: Map<string, number>): Pat {
  if (typeof t === "string") {
    if (!isVariable(t)) return t;
    let slot = vars.get(t);
    if (slot === undefined) vars.set(t, (slot = vars.size));
    return slot;
  }
  return t.map((x) => compilePat(x, vars));
}

export function compileRule(shape: RuleShape): CompiledRule {
  const vars = new Map<string, number>();
  const lit = (l: Literal): CompiledLiteral => ({ neg: l.neg, key: predKey(l.neg, l.atom[0] as string), pat: compilePat(l.atom, vars) as Pat[] });
  const lits = shape.antecedents.map(lit);
  const head = lit(shape.consequent);
  return { antecedents: shape.antecedents, consequent: shape.consequent, keys: lits.map((l) => l.key), lits, head, slots: vars.size };
}

/** Match a pattern against a ground term, binding free slots (pushed on `trail`). */
export function matchPat(p: Pat, t: Term, slots: (Term | undefined)[], trail: number[]): boolean {
  if (typeof p === "string") return p === t;
  if (typeof p === "number") {
    const bound = slots[p];
    if (bound === undefined) {
      slots[p] = t;
      trail.push(p);
      return true;
    }
    return bound === t || (typeof bound !== "string" && termEquals(bound, t));
  }
  if (typeof t === "string" || t.length !== p.length) return false;
  for (let i = 0; i < p.length; i++) if (!matchPat(p[i]!, t[i]!, slots, trail)) return false;
  return true;
}

/** Undo the bindings made since `mark`. */
export function undo(slots: (Term | undefined)[], trail: number[], mark: number): void {
  while (trail.length > mark) slots[trail.pop()!] = undefined;
}

/** The index key of argument `p` under the current bindings, or undefined when not ground. */
export function argKeyOf(p: Pat, slots: readonly (Term | undefined)[]): string | undefined {
  if (typeof p === "string") return p;
  if (typeof p === "number") {
    const v = slots[p];
    return v === undefined ? undefined : typeof v === "string" ? v : printTerm(v);
  }
  const t = instantiate(p, slots);
  return t === undefined ? undefined : printTerm(t);
}

/** The term a pattern denotes under the bindings (undefined when a slot is free). */
export function instantiate(p: Pat, slots: readonly (Term | undefined)[]): Term | undefined {
  if (typeof p === "string") return p;
  if (typeof p === "number") return slots[p];
  const out: Term[] = new Array(p.length);
  for (let i = 0; i < p.length; i++) {
    const x = instantiate(p[i]!, slots);
    if (x === undefined) return undefined;
    out[i] = x;
  }
  return out as List;
}
