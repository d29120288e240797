/**
 * Every refusal the engine can answer, as a value with a stable `type` (style.md: one place
 * defines every type). The daemon maps a type to its HTTP status in daemon/errors.ts; the
 * engine only knows the names.
 */
export const KB_ERROR_TYPES = [
  "parse-error",
  "not-ground",
  "naming",
  "arity",
  "functional",
  "not-range-restricted",
  "dangling-target",
  "shape",
  "inadmissible",
  "unknown-handle",
  "bad-request",
  "limit-reached",
  "not-watchable",
  "closed",
  "claimed",
  "arbiter-is-party",
  "not-own-statement",
  // K12: the store failed (I/O error, full disk, broken invariant); the KB stopped.
  "unavailable",
  // K11: a read over its work bound (steps, results or time).
  "too-costly",
] as const;

export type KbErrorType = (typeof KB_ERROR_TYPES)[number];

export interface Problem {
  type: KbErrorType;
  error: string;
  in: "add" | "remove";
  index: number;
}

export class KbError extends Error {
  readonly type: KbErrorType;
  readonly problems?: Problem[];
  readonly details?: Record<string, unknown>;

  constructor(type: KbErrorType, message: string, extra: { problems?: Problem[]; details?: Record<string, unknown> } = {}) {
    super(message);
    this.name = "KbError";
    this.type = type;
    if (extra.problems) this.problems = extra.problems;
    if (extra.details) this.details = extra.details;
  }
}

export function isKbError(e: unknown): e is KbError {
  return e instanceof KbError;
}
