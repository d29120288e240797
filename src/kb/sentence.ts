/**
 * Sentence shapes: what a stored sentence, a rule and a query goal may look like, checked
 * once at the door. A sentence is a literal (an atom or `(not atom)`) or a rule
 * `(implies (and A1 ... An) C)`; a goal may also be `(and G ...)` or `(unknown G)`.
 */
import { KbError } from "./errors.js";
import { type List, type Term, isList, isSymbol, isGround, variablesOf, printTerm } from "./term.js";

export interface Literal {
  neg: boolean;
  atom: List;
}

export interface RuleShape {
  antecedents: Literal[];
  consequent: Literal;
}

export type Parsed =
  | { kind: "fact"; lit: Literal }
  | { kind: "rule"; rule: RuleShape; term: List };

/** Heads reserved for logical structure: never a stored predicate. */
const CONNECTIVES = new Set(["not", "and", "or", "implies", "unknown"]);

const PREDICATE_RE = /^[a-z][A-Za-z0-9_]*$/;
const CONTEXT_RE = /^Cx[A-Z][A-Za-z0-9]*$/;

/** Index key of a literal's predicate and polarity: `p` or `~p`. */
export const predKey = (neg: boolean, pred: string): string => (neg ? "~" + pred : pred);

export const isContextName = (s: unknown): s is string => typeof s === "string" && CONTEXT_RE.test(s);

export function checkContextName(ctx: unknown): string {
  if (typeof ctx !== "string") throw new KbError("shape", "context must be a symbol such as CxDeploy");
  if (!CONTEXT_RE.test(ctx)) throw new KbError("naming", `context ${JSON.stringify(ctx)} must be Cx followed by CapitalCamelCase`);
  return ctx;
}

function shapeFail(message: string): never {
  throw new KbError("shape", message);
}

/** An atom: a list whose head is a predicate symbol named lower-case first. */
function atomShape(t: Term, what: string): List {
  if (!isList(t) || t.length === 0) shapeFail(`${what} must be a non-empty list such as (dog Muffet), got ${printTerm(t)}`);
  const head = t[0]!;
  if (!isSymbol(head)) shapeFail(`${what} must start with a predicate symbol, got ${printTerm(head)}`);
  if (CONNECTIVES.has(head as string)) shapeFail(`${what} cannot be a '${head}' form here: ${printTerm(t)}`);
  if (!PREDICATE_RE.test(head as string)) {
    throw new KbError("naming", `predicate ${head} must start with a lower-case letter (camelCase)`);
  }
  return t;
}

export function literalShape(t: Term, what = "a sentence"): Literal {
  if (isList(t) && t[0] === "not") {
    if (t.length !== 2) shapeFail(`(not S) takes exactly one sentence: ${printTerm(t)}`);
    return { neg: true, atom: atomShape(t[1]!, "the sentence inside (not ...)") };
  }
  return { neg: false, atom: atomShape(t, what) };
}

export const literalTerm = (l: Literal): List => (l.neg ? ["not", l.atom] : l.atom);

/** Classify a stored sentence: a ground literal, or a range-restricted rule. */
export function sentenceShape(t: Term): Parsed {
  if (isList(t) && t[0] === "implies") {
    if (t.length !== 3) shapeFail(`(implies A C) takes an antecedent and a consequent: ${printTerm(t)}`);
    const ante = t[1]!;
    const parts = isList(ante) && ante[0] === "and" ? ante.slice(1) : [ante];
    if (parts.length === 0) shapeFail("a rule needs at least one antecedent");
    const antecedents = parts.map((p) => literalShape(p, "an antecedent"));
    const consequent = literalShape(t[2]!, "the consequent");
    if (consequent.atom[0] === "genlCx") shapeFail("a rule cannot conclude genlCx: context topology is asserted, never derived");
    if (antecedents.every((a) => a.neg)) shapeFail("a rule needs at least one positive antecedent");
    const bound = new Set<string>();
    for (const a of antecedents) if (!a.neg) variablesOf(a.atom).forEach((v) => bound.add(v));
    for (const a of antecedents) {
      if (a.neg) for (const v of variablesOf(a.atom)) if (!bound.has(v)) throw new KbError("not-range-restricted", `variable ${v} of a negative antecedent is not bound by a positive one`);
    }
    for (const v of variablesOf(consequent.atom)) {
      if (!bound.has(v)) throw new KbError("not-range-restricted", `consequent variable ${v} is not bound by any antecedent`);
    }
    return { kind: "rule", rule: { antecedents, consequent }, term: t };
  }
  const lit = literalShape(t);
  if (!isGround(lit.atom)) throw new KbError("not-ground", `a stored fact must be ground: ${printTerm(t)} has variables ${variablesOf(t).join(" ")}`);
  if (lit.neg && lit.atom[0] === "genlCx") shapeFail("(not (genlCx ...)) cannot be asserted: retract the edge instead");
  return { kind: "fact", lit };
}

export type Goal =
  | { kind: "lit"; lit: Literal }
  | { kind: "and"; goals: Goal[] }
  | { kind: "unknown"; goal: Goal };

/** Classify a query goal. Variables are allowed anywhere but in the predicate position. */
export function goalShape(t: Term): Goal {
  if (isList(t) && t[0] === "and") {
    if (t.length < 2) shapeFail("(and ...) needs at least one goal");
    return { kind: "and", goals: t.slice(1).map(goalShape) };
  }
  if (isList(t) && t[0] === "unknown") {
    if (t.length !== 2) shapeFail("(unknown G) takes exactly one goal");
    return { kind: "unknown", goal: goalShape(t[1]!) };
  }
  return { kind: "lit", lit: literalShape(t, "a goal") };
}
