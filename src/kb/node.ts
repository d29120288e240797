/**
 * The engine's record of one stored sentex (a TMS node) and of one justification.
 * Kept deliberately small: a KB holds millions of these.
 */
import { type List, printTerm } from "./term.js";
import type { CompiledRule } from "./compiled.js";
export type { CompiledRule } from "./compiled.js";

/** Belief label: OUT, IN at default strength, IN at monotonic strength. */
export const OUT = 0;
export const IN_DEFAULT = 1;
export const IN_MONO = 2;
export type Label = 0 | 1 | 2;

/** Premise mark: not a premise (derived only), a default premise, a monotonic premise. */
export type PremiseMark = 0 | 1 | 2;

/**
 * A stored sentex. A class so that its canonical text is printed only when something reads
 * it (a derived fact's identity is its structure, see MemIndex; most derived facts are never
 * printed by the engine itself, only when persisted or read).
 */
export class Node {
  premise: PremiseMark;
  creator: string | null;
  createdAt: number;
  seq: number;
  label: Label = OUT;
  /** Derivation depth: 0 for premises, 1 + deepest antecedent for a derived sentex. */
  depth = 0;
  /** Justifications supporting this node (derived support). */
  just: Justification[] | null = null;
  /**
   * Justifications in which this node is an antecedent or the rule: an array while small,
   * a Set once it grows (a hub fact or a rule can be in millions; removal must stay O(1)).
   */
  deps: Deps = null;
  /** True once the node has left the store. */
  gone = false;
  /** The engine's write number that last recorded `before` (per-write bookkeeping). */
  writeNo = 0;
  /** The label before that write; -1 when that write created the node. */
  before = -1;
  /** Canonical text of `atom`, once printed. */
  private printed: string | undefined;

  constructor(
    readonly h: number,
    readonly ctx: string,
    readonly neg: boolean,
    /** The positive atom (for a rule, the whole implies term). */
    readonly atom: List,
    /** Canonical text of `atom` when the caller already has it; printed on first read otherwise. */
    akey: string | undefined,
    readonly rule: CompiledRule | null,
    premise: PremiseMark,
    creator: string | null,
    createdAt: number,
    seq: number,
  ) {
    this.printed = akey;
    this.premise = premise;
    this.creator = creator;
    this.createdAt = createdAt;
    this.seq = seq;
  }

  /** Canonical text of `atom`; with ctx and neg it is the sentex's identity. */
  get akey(): string {
    return (this.printed ??= printTerm(this.atom));
  }

  /** Canonical text of the stored sentence (`(not ...)` for a negation). */
  get text(): string {
    return this.neg ? `(not ${this.akey})` : this.akey;
  }
}

export type Deps = Justification[] | Set<Justification> | null;

const DEPS_ARRAY_MAX = 32;

export function depsAdd(deps: Deps, j: Justification): Deps {
  if (!deps) return [j];
  if (deps instanceof Set) return deps.add(j);
  deps.push(j);
  return deps.length > DEPS_ARRAY_MAX ? new Set(deps) : deps;
}

export function depsRemove(deps: Deps, j: Justification): void {
  if (!deps) return;
  if (deps instanceof Set) deps.delete(j);
  else removeFrom(deps, j);
}

export interface Justification {
  readonly rule: Node;
  readonly ants: readonly Node[];
  readonly concl: Node;
}

/** Index key of a literal's predicate and polarity: `p` or `~p`. */
export const predKey = (neg: boolean, pred: string): string => (neg ? "~" + pred : pred);
export const nodePredKey = (n: Node): string => predKey(n.neg, n.atom[0] as string);

export function pushTo<T>(list: T[] | null, item: T): T[] {
  if (list) {
    list.push(item);
    return list;
  }
  return [item];
}

export function removeFrom<T>(list: T[] | null, item: T): void {
  if (!list) return;
  const i = list.indexOf(item);
  if (i >= 0) {
    list[i] = list[list.length - 1]!;
    list.pop();
  }
}
