/**
 * Every refusal the floor agent can raise, as a value with a stable `type` (style.md: one
 * place defines every type). Nothing in this folder invents an error string inline.
 */
export const FLOOR_ERROR_TYPES = [
  /** FloorMachine options out of range (decay <= 0, negative interval, fractional cap). */
  "floor-options",
  /** A persona config that does not parse against `personaSchema`. */
  "floor-persona",
  /** Session options out of range (grace, heartbeat, bounds). */
  "floor-session-options",
  /** The injected clock went backwards; the machine judges events in time order. */
  "floor-time",
  /** An internal invariant broke (holder without engagement, taken + suppressed > offered). */
  "floor-invariant",
] as const;

export type FloorErrorType = (typeof FLOOR_ERROR_TYPES)[number];

export class FloorError extends Error {
  readonly type: FloorErrorType;
  readonly details?: Record<string, unknown>;

  constructor(type: FloorErrorType, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = "FloorError";
    this.type = type;
    if (details) this.details = details;
  }
}

export function isFloorError(e: unknown): e is FloorError {
  return e instanceof FloorError;
}
