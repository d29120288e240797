/**
 * An independent rules oracle: the semantics of docs/rules.md evaluated the slow, obvious
 * way, to hold the engine against. It shares nothing with src/kb/engine.ts but the term
 * parser and printer (input and output only): its own matcher, its own cones, naive
 * fixpoint iteration over the whole program, no truth maintenance, no indexes.
 *
 *   const fix = evaluate([{ sentence: "(p One)", context: "CxA", strength: "default" }, ...]);
 *   fix.stored.get("CxA|(p One)")  // { believed, strength, premise, firings }
 *
 * The semantics, as docs/rules.md states them:
 *  - contexts: `(genlCx Sub Super)` premises are edges ("Sub sees Super"); the cone of C is
 *    everything C reaches over edges, itself included, plus CxCore and CxCore's cone;
 *  - a firing: a stored rule, one stored sentex per antecedent (same polarity, one
 *    consistent substitution), concluding the instantiated consequent in each placement
 *    context: the sources' one context when they all sit in one, else the most general
 *    contexts that see every source (a cycle represented by its least-named member);
 *  - MONO = monotonic premises plus conclusions of firings over MONO;
 *  - a non-MONO sentex is defeated by a MONO opposite (same atom, other polarity) where
 *    some context sees both;
 *  - IN = MONO plus undefeated default premises plus undefeated conclusions of firings
 *    over IN;
 *  - stored = premises plus conclusions of firings over IN (a defeated one stays, OUT).
 */
import { parseTerm, printTerm, type Term } from "../../../src/kb/term.js";

export type Strength = "default" | "monotonic";

export interface OraclePremise {
  sentence: string;
  context: string;
  strength: Strength;
}

const CORE = "CxCore";
const UNIVERSE = "CxUniverse";

interface Literal {
  neg: boolean;
  atom: Term;
}

interface Fact extends Literal {
  ctx: string;
  /** The stored sentence's canonical text: the atom, or `(not atom)`. */
  text: string;
}

interface Rule {
  ctx: string;
  text: string;
  antecedents: Literal[];
  consequent: Literal;
}

/** One firing: a rule instance whose antecedents are stored sentexes, concluding in `ctx`. */
export interface Firing {
  rule: string; // key of the rule
  ants: string[]; // keys of the antecedents, in the rule's order
  concl: string; // key of the conclusion
}

export interface OracleEntry {
  ctx: string;
  text: string;
  premise: boolean;
  rule: boolean;
  believed: boolean;
  strength: Strength;
  /** Firings over IN that conclude this entry (its valid justifications). */
  firings: Firing[];
}

export const keyOf = (ctx: string, text: string): string => `${ctx}|${text}`;

function literal(t: Term): Literal {
  if (typeof t !== "string" && t[0] === "not") return { neg: true, atom: t[1]! };
  return { neg: false, atom: t };
}

const textOf = (l: Literal): string => (l.neg ? `(not ${printTerm(l.atom)})` : printTerm(l.atom));

const isVar = (t: Term): t is string => typeof t === "string" && t.startsWith("?");

/** Match a pattern against a ground term, extending `env` (a fresh copy); undefined on failure. */
function unify(pattern: Term, ground: Term, env: Map<string, Term>): Map<string, Term> | undefined {
  if (isVar(pattern)) {
    const bound = env.get(pattern);
    if (bound === undefined) return new Map(env).set(pattern, ground);
    return printTerm(bound) === printTerm(ground) ? env : undefined;
  }
  if (typeof pattern === "string" || typeof ground === "string") return pattern === ground ? env : undefined;
  if (pattern.length !== ground.length) return undefined;
  let e: Map<string, Term> | undefined = env;
  for (let i = 0; i < pattern.length && e; i++) e = unify(pattern[i]!, ground[i]!, e);
  return e;
}

function substitute(t: Term, env: Map<string, Term>): Term {
  if (isVar(t)) return env.get(t) ?? t;
  if (typeof t === "string") return t;
  return t.map((x) => substitute(x, env));
}

/** Contexts as plain sets: edges, cones, "some context sees both", placement. */
export class Contexts {
  readonly edges: [string, string][];
  readonly all: Set<string>;

  constructor(edges: [string, string][], mentioned: Iterable<string>) {
    this.edges = edges;
    this.all = new Set([CORE, ...mentioned]);
    for (const [a, b] of edges) this.all.add(a).add(b);
  }

  private reach(from: string): Set<string> {
    const out = new Set([from]);
    let grew = true;
    while (grew) {
      grew = false;
      for (const [a, b] of this.edges) if (out.has(a) && !out.has(b)) out.add(b), (grew = true);
    }
    return out;
  }

  cone(ctx: string): Set<string> {
    return new Set([...this.reach(ctx), ...this.reach(CORE)]);
  }

  sees(viewer: string, seen: string): boolean {
    return this.cone(viewer).has(seen);
  }

  /** Some context sees both a and b. */
  meet(a: string, b: string): boolean {
    for (const c of new Set([...this.all, a, b])) if (this.sees(c, a) && this.sees(c, b)) return true;
    return false;
  }

  /** Where a conclusion of a firing with these source contexts lands. */
  placement(sources: string[]): string[] {
    const distinct = [...new Set(sources)];
    if (distinct.length === 1) return distinct;
    const common = [...this.all].filter((c) => distinct.every((s) => this.sees(c, s)));
    const moreGeneral = (d: string, c: string) => this.sees(c, d) && !this.sees(d, c);
    const maximal = common.filter((c) => !common.some((d) => moreGeneral(d, c)));
    // A cycle (contexts that see each other) is represented by its least-named member.
    return maximal.filter((c) => !maximal.some((d) => d < c && this.sees(c, d) && this.sees(d, c))).sort();
  }

  /** Shortest number of edges from `from` up to `to` (0 when equal), undefined when unreachable. */
  distance(from: string, to: string, edges: [string, string][] = this.edges): number | undefined {
    let frontier = new Set([from]);
    const seen = new Set([from]);
    for (let d = 0; frontier.size; d++) {
      if (frontier.has(to)) return d;
      const next = new Set<string>();
      for (const [a, b] of edges) if (frontier.has(a) && !seen.has(b)) seen.add(b), next.add(b);
      frontier = next;
    }
    return undefined;
  }
}

export interface Fixpoint {
  contexts: Contexts;
  rules: Map<string, Rule>;
  /** Every stored sentex (premises, rules, stored conclusions) by `context|sentence`. */
  stored: Map<string, OracleEntry>;
  /** Does this rule instance (rule key, antecedent keys in order) conclude `concl` with all antecedents IN? */
  validFiring(rule: string, ants: string[], concl: string): string | undefined;
  /** Solutions of a query goal from `ctx`, each printed as sorted `?v=value` pairs. */
  query(goal: string, ctx: string): string[];
  /** Believed clashes seen from `ctx`, in the helpers' clashText form. */
  clashes(ctx: string): { contradictions: string[]; conflicts: string[] };
}

/** Evaluate a program (the premises currently asserted) to the fixpoint docs/rules.md describes. */
export function evaluate(premises: readonly OraclePremise[]): Fixpoint {
  const facts = new Map<string, Fact & { strength: Strength }>();
  const rules = new Map<string, Rule>();
  const edges: [string, string][] = [];
  for (const p of premises) {
    const t = parseTerm(p.sentence);
    if (typeof t !== "string" && t[0] === "implies") {
      const ante = t[1]!;
      const parts = typeof ante !== "string" && ante[0] === "and" ? ante.slice(1) : [ante];
      const text = printTerm(t);
      rules.set(keyOf(p.context, text), { ctx: p.context, text, antecedents: parts.map(literal), consequent: literal(t[2]!) });
      continue;
    }
    const lit = literal(t);
    const isEdge = !lit.neg && typeof lit.atom !== "string" && lit.atom[0] === "genlCx";
    const ctx = isEdge ? UNIVERSE : p.context; // topology is global, monotonic
    const strength: Strength = isEdge ? "monotonic" : p.strength;
    if (isEdge) edges.push([lit.atom[1] as string, lit.atom[2] as string]);
    const text = textOf(lit);
    const k = keyOf(ctx, text);
    const prev = facts.get(k);
    facts.set(k, { ...lit, ctx, text, strength: prev?.strength === "monotonic" ? "monotonic" : strength });
  }
  const contexts = new Contexts(edges, [...[...facts.values()].map((f) => f.ctx), ...[...rules.values()].map((r) => r.ctx)]);

  /** Every firing whose antecedents are all in `over`, with its conclusion as a fact. */
  const firings = (over: Map<string, Fact>): { firing: Firing; fact: Fact }[] => {
    const out: { firing: Firing; fact: Fact }[] = [];
    for (const [rk, r] of rules) {
      const walk = (i: number, env: Map<string, Term>, ants: Fact[], keys: string[]) => {
        if (i === r.antecedents.length) {
          const atom = substitute(r.consequent.atom, env);
          const lit = { neg: r.consequent.neg, atom };
          for (const ctx of contexts.placement([r.ctx, ...ants.map((a) => a.ctx)])) {
            const fact = { ...lit, ctx, text: textOf(lit) };
            out.push({ firing: { rule: rk, ants: keys, concl: keyOf(ctx, fact.text) }, fact });
          }
          return;
        }
        const want = r.antecedents[i]!;
        for (const [fk, f] of over) {
          if (f.neg !== want.neg) continue;
          const e = unify(want.atom, f.atom, env);
          if (e) walk(i + 1, e, [...ants, f], [...keys, fk]);
        }
      };
      walk(0, new Map(), [], []);
    }
    return out;
  };

  /** Least fixpoint: start from `seed`, add every conclusion `admit` lets in, until nothing changes. */
  const close = (seed: Map<string, Fact>, admit: (f: Fact, key: string) => boolean): Map<string, Fact> => {
    const set = new Map(seed);
    for (let grew = true; grew; ) {
      grew = false;
      for (const { firing, fact } of firings(set)) {
        if (!set.has(firing.concl) && admit(fact, firing.concl)) set.set(firing.concl, fact), (grew = true);
      }
    }
    return set;
  };

  const mono = close(new Map([...facts].filter(([, f]) => f.strength === "monotonic")), () => true);
  const defeated = (f: Fact, k: string) =>
    !mono.has(k) && [...mono.values()].some((m) => m.neg !== f.neg && printTerm(m.atom) === printTerm(f.atom) && contexts.meet(f.ctx, m.ctx));
  const inSet = close(new Map([...mono, ...[...facts].filter(([k, f]) => f.strength === "default" && !defeated(f, k))]), (f, k) => !defeated(f, k));

  const stored = new Map<string, OracleEntry>();
  const entry = (f: Fact, k: string, premise: boolean): OracleEntry => ({
    ctx: f.ctx, text: f.text, premise, rule: false, believed: inSet.has(k), strength: mono.has(k) ? "monotonic" : "default", firings: [],
  });
  for (const [k, f] of facts) stored.set(k, entry(f, k, true));
  for (const p of premises) {
    const k = keyOf(p.context, printTerm(parseTerm(p.sentence)));
    const r = rules.get(k);
    if (!r) continue;
    const prev = stored.get(k);
    const strength: Strength = prev?.strength === "monotonic" || p.strength === "monotonic" ? "monotonic" : "default";
    stored.set(k, { ctx: r.ctx, text: r.text, premise: true, rule: true, believed: true, strength, firings: [] });
  }
  const inFirings = firings(inSet);
  for (const { firing, fact } of inFirings) {
    if (!stored.has(firing.concl)) stored.set(firing.concl, entry(fact, firing.concl, false));
    stored.get(firing.concl)!.firings.push(firing);
  }

  const validFiring = (rule: string, ants: string[], concl: string): string | undefined => {
    const r = rules.get(rule);
    if (!r) return `the rule ${rule} is not a stored rule`;
    if (ants.length !== r.antecedents.length) return `${ants.length} antecedents for a rule with ${r.antecedents.length}`;
    let env: Map<string, Term> | undefined = new Map();
    const ctxs = [r.ctx];
    for (let i = 0; i < ants.length; i++) {
      const a = stored.get(ants[i]!);
      if (!a || !inSet.has(ants[i]!)) return `antecedent ${ants[i]} does not hold`;
      const lit = literal(parseTerm(a.text));
      if (lit.neg !== r.antecedents[i]!.neg) return `antecedent ${ants[i]} has the wrong polarity`;
      env = unify(r.antecedents[i]!.atom, lit.atom, env!);
      if (!env) return `antecedent ${ants[i]} does not match ${textOf(r.antecedents[i]!)} under the instance`;
      ctxs.push(a.ctx);
    }
    const text = textOf({ neg: r.consequent.neg, atom: substitute(r.consequent.atom, env!) });
    const places = contexts.placement(ctxs).map((c) => keyOf(c, text));
    return places.includes(concl) ? undefined : `the instance concludes ${places.join(", ") || "nowhere"}, not ${concl}`;
  };

  const believedFacts = [...stored.values()].filter((e) => e.believed && !e.rule);
  const query = (goal: string, ctx: string): string[] => {
    const cone = contexts.cone(ctx);
    const visible = believedFacts.filter((e) => cone.has(e.ctx)).map((e) => literal(parseTerm(e.text)));
    const solve = (g: Term, env: Map<string, Term>): Map<string, Term>[] => {
      if (typeof g !== "string" && g[0] === "and") {
        let envs = [env];
        // Literals first, then (unknown ...): negation as failure under the bindings made.
        const parts = g.slice(1);
        const ordered = [...parts.filter((p) => !(typeof p !== "string" && p[0] === "unknown")), ...parts.filter((p) => typeof p !== "string" && p[0] === "unknown")];
        for (const p of ordered) envs = envs.flatMap((e) => solve(p, e));
        return envs;
      }
      if (typeof g !== "string" && g[0] === "unknown") return solve(g[1]!, env).length ? [] : [env];
      const want = literal(g);
      return visible.flatMap((f) => {
        if (f.neg !== want.neg) return [];
        const e = unify(want.atom, f.atom, env);
        return e ? [e] : [];
      });
    };
    const printed = solve(parseTerm(goal), new Map()).map((e) =>
      [...e.keys()].sort().map((k) => `${k}=${printTerm(e.get(k)!)}`).join(" "),
    );
    return [...new Set(printed)].sort();
  };

  const clashes = (ctx: string) => {
    const cone = contexts.cone(ctx);
    const seen = believedFacts.filter((e) => cone.has(e.ctx));
    const contradictions: string[] = [];
    const conflicts: string[] = [];
    for (const p of seen) {
      if (p.text.startsWith("(not ")) continue;
      for (const q of seen) {
        if (q.text !== `(not ${p.text})`) continue;
        const kind = p.strength === "monotonic" && q.strength === "monotonic" ? "conflict" : "contradiction";
        const line = `${ctx} sees ${kind}: ${p.ctx}|${p.text}|${p.strength} vs ${q.ctx}|${q.text}|${q.strength}`;
        (kind === "conflict" ? conflicts : contradictions).push(line);
      }
    }
    return { contradictions: [...new Set(contradictions)].sort(), conflicts: [...new Set(conflicts)].sort() };
  };

  return { contexts, rules, stored, validFiring, query, clashes };
}
