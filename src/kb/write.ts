/**
 * What a write takes and what it leaves behind, shared by the checks (engine.ts), the row
 * engine that settles a write (rowengine.ts) and the stores that keep its rows: premise
 * marks, belief labels, strengths, removal reasons, the bound a write may hit, an add that
 * passed its checks, and a stored sentex's row. Types and constants only: this module
 * imports nothing it would have to run.
 */
import type { List } from "./term.js";
import type { CompiledRule } from "./compiled.js";

/** Belief label: OUT, IN at default strength, IN at monotonic strength. */
export const OUT = 0;
export const IN_DEFAULT = 1;
export const IN_MONO = 2;
export type Label = 0 | 1 | 2;

/** Premise mark: not a premise (derived only), a default premise, a monotonic premise. */
export type PremiseMark = 0 | 1 | 2;

export type Strength = "default" | "monotonic";
export type RemovalReason = "retracted" | "cascade" | "unsupported" | "defeated";

/** The limit a write reached, where chaining stopped. */
export interface Bounded {
  limit: "maxDerivations" | "maxDepth";
  value: number;
}

/** An add that passed its checks, ready to apply. */
export interface PreparedAdd {
  ctx: string;
  neg: boolean;
  atom: List;
  akey: string;
  text: string;
  rule: CompiledRule | null;
  mark: PremiseMark;
  creator: string | null;
}

/** A stored sentex as a store keeps it. */
export interface StoredRow {
  handle: number;
  context: string;
  sentence: string;
  premise: PremiseMark;
  creator: string | null;
  createdAt: number;
  seq: number;
}

/** A stored sentex as a store reads it back to rebuild the engine. */
export type RawRow = [handle: number, context: string, sentence: string, premise: PremiseMark, creator: string | null, createdAt: number, seq: number];
