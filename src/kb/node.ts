/**
 * What the code outside the engine reads of a stored sentex: a view (`Node`, made by the row
 * engine when a reader asks, see rowengine.ts `RowNode`), and a firing that supports one.
 */
export type { RowNode as Node } from "./rowengine.js";
export type { CompiledRule } from "./compiled.js";
import type { RowNode } from "./rowengine.js";

/** Belief label: OUT, IN at default strength, IN at monotonic strength. */
export const OUT = 0;
export const IN_DEFAULT = 1;
export const IN_MONO = 2;
export type Label = 0 | 1 | 2;

/** Premise mark: not a premise (derived only), a default premise, a monotonic premise. */
export type PremiseMark = 0 | 1 | 2;

/** A firing over believed sentexes that concludes `concl` (found when asked: none is stored). */
export interface Justification {
  readonly rule: RowNode;
  readonly ants: readonly RowNode[];
  readonly concl: RowNode;
}

/** Index key of a literal's predicate and polarity: `p` or `~p`. */
export const predKey = (neg: boolean, pred: string): string => (neg ? "~" + pred : pred);
