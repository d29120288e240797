/**
 * What the code outside the engine reads of a stored sentex: a view (`Node`, made by the row
 * engine when a reader asks, see rowengine.ts `RowNode`), and a firing that supports one.
 */
import type { RowNode } from "./rowengine.js";
export type { RowNode as Node } from "./rowengine.js";

/** A firing over believed sentexes that concludes `concl` (found when asked: none is stored). */
export interface Justification {
  readonly rule: RowNode;
  readonly ants: readonly RowNode[];
  readonly concl: RowNode;
}
