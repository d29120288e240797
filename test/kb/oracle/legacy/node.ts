// The engine as it was before the row engine (main at 6f4d6a3), kept unchanged (only its
// imports now point into src/) as an independent oracle for the differential test
// test/kb/rowengine-differential.test.ts: a second implementation of the same writes,
// outcomes, reads and rebuild. Not used by src/.
/**
 * The engine's record of one stored sentex (a TMS node) and of one justification.
 * Kept deliberately small: a KB holds millions of these.
 */
import { type List, printTerm } from "../../../../src/kb/term.js";
import type { CompiledRule } from "../../../../src/kb/compiled.js";
export type { CompiledRule } from "../../../../src/kb/compiled.js";

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
  /** Justifications supporting this node (derived support); read them with justsOf. */
  just: Justs = null;
  /** Justifications in which this node is an antecedent (rules keep no back-links). */
  deps: Deps = null;
  /** True once the node has left the store. */
  gone = false;
  /** The engine's write number that last recorded `before` (per-write bookkeeping). */
  writeNo = 0;
  /** The label before that write; -1 when that write created the node. */
  before = -1;
  /** Number of the last settling region this node joined (see Region). */
  region = 0;
  /** A declaration the write checks read, or a genlCx link: a write touching it drops their memo (engine.ts DECLARING). */
  declaring = false;
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

/**
 * The nodes one settle relabels, in the order they joined. Membership is a stamp on the
 * node, not a set entry: a region can hold every derived fact of a KB. A node is in at most
 * one live region (a new region's stamp replaces the old one's, which is then discarded).
 */
export class Region implements Iterable<Node> {
  private static next = 1;
  readonly no = Region.next++;
  private readonly nodes: Node[] = [];

  get size(): number {
    return this.nodes.length;
  }
  has(n: Node): boolean {
    return n.region === this.no;
  }
  add(n: Node): void {
    if (n.region === this.no) return;
    n.region = this.no;
    this.nodes.push(n);
  }
  /** Visits nodes added while iterating too, as a Set's iterator does. */
  [Symbol.iterator](): Iterator<Node> {
    return this.nodes[Symbol.iterator]();
  }
}

/** A node's justifications: one held directly (the common case), or an array. */
export type Justs = Justification | Justification[] | null;

/**
 * A hub's dependents (a fact that is an antecedent of many firings): an array with
 * unlinked justifications left in place and skipped, compacted once they are half of it.
 * Push and removal are O(1) amortized without a hash entry per justification.
 */
export class DepList {
  items: Justification[];
  dead = 0;
  constructor(items: Justification[]) {
    this.items = items;
  }
}

/**
 * Justifications in which a node is an antecedent: one held directly, an array while few,
 * a DepList once many.
 */
export type Deps = Justification | Justification[] | DepList | null;

const DEPS_ARRAY_MAX = 32;

export function depsAdd(deps: Deps, j: Justification): Deps {
  if (!deps) return j;
  if (deps instanceof DepList) {
    deps.items.push(j);
    return deps;
  }
  if (!Array.isArray(deps)) return [deps, j];
  deps.push(j);
  return deps.length > DEPS_ARRAY_MAX ? new DepList(deps) : deps;
}

/** Remove `j`, already marked dead (see Justification.dead). */
export function depsRemove(deps: Deps, j: Justification): Deps {
  if (!deps) return null;
  if (deps instanceof DepList) {
    if (++deps.dead * 2 > deps.items.length) {
      deps.items = deps.items.filter((x) => !x.dead);
      deps.dead = 0;
    }
  } else if (!Array.isArray(deps)) return deps === j ? null : deps;
  else removeFrom(deps, j);
  return deps;
}

/** The live justifications of `deps` as a fresh array (safe to walk while `deps` changes). */
export function depsCopy(deps: Deps): Justification[] {
  if (!deps) return [];
  if (deps instanceof DepList) return deps.items.filter((x) => !x.dead);
  if (Array.isArray(deps)) return [...deps];
  return [deps];
}

/** The live justifications of `deps`, for reading only (no copy when it is an array). */
export function depsList(deps: Deps): readonly Justification[] {
  if (!deps) return [];
  if (deps instanceof DepList) return deps.dead === 0 ? deps.items : deps.items.filter((x) => !x.dead);
  return Array.isArray(deps) ? deps : [deps];
}

export function justAdd(just: Justs, j: Justification): Justs {
  if (!just) return j;
  if (!Array.isArray(just)) return [just, j];
  just.push(j);
  return just;
}

export function justRemove(just: Justs, j: Justification): Justs {
  if (!just) return null;
  if (!Array.isArray(just)) return just === j ? null : just;
  removeFrom(just, j);
  return just.length === 0 ? null : just;
}

/** Whether some justification satisfies `test`. */
export function justSome(just: Justs, test: (j: Justification) => boolean): boolean {
  if (!just) return false;
  if (!Array.isArray(just)) return test(just);
  for (const j of just) if (test(j)) return true;
  return false;
}

/** The justifications kept by `keep`, each dropped one passed to `dropped`. */
export function justFilter(just: Justs, keep: (j: Justification) => boolean): Justs {
  if (!just) return null;
  if (!Array.isArray(just)) return keep(just) ? just : null;
  const kept = just.filter(keep);
  return kept.length === 0 ? null : kept;
}

/** A node's justifications as an array (for reads: `why`, disputes, rulings). */
export function justsOf(n: Node): readonly Justification[] {
  const just = n.just;
  if (!just) return [];
  return Array.isArray(just) ? just : [just];
}

export interface Justification {
  readonly rule: Node;
  readonly ants: readonly Node[];
  readonly concl: Node;
  /** Set once the justification is unlinked from its antecedents; it never comes back. */
  dead: boolean;
}

/** Index key of a literal's predicate and polarity: `p` or `~p`. */
export const predKey = (neg: boolean, pred: string): string => (neg ? "~" + pred : pred);
export const nodePredKey = (n: Node): string => predKey(n.neg, n.atom[0] as string);

export function removeFrom<T>(list: T[] | null, item: T): void {
  if (!list) return;
  const i = list.indexOf(item);
  if (i >= 0) {
    list[i] = list[list.length - 1]!;
    list.pop();
  }
}
