/**
 * The channel's one error class. A refusal from the daemon (or, over the local medium, from
 * the engine) keeps its stable `type`, its HTTP `status` (wire only) and its `problems`;
 * the channel's own refusals use the types listed in CHANNEL_ERROR_TYPES.
 *
 *   try { await answer(h, str("Postgres 16"), q); }
 *   catch (e) { if (isChannelError(e) && e.type === "dangling-target") ... }
 */
import { isKbError, type Problem } from "../kb/errors.js";

/** Types the channel itself answers (every other type is the daemon's or the engine's, see docs/wire.md "Errors"). */
export const CHANNEL_ERROR_TYPES = [
  /** replyMany: the dry run found problems; nothing was stored (`problems` says which). */
  "reply-inadmissible",
  /** vote: a stance other than "for" or "against". */
  "bad-stance",
  /** The daemon could not be reached, or the connection failed mid-request. */
  "network",
  /** No answer within the request's timeout (timeoutMs, plus the long-poll wait). */
  "timeout",
  /** The daemon answered something that is not the wire contract (not JSON, no `ok`). */
  "protocol",
  /** The call needs a feature the medium does not have (e.g. tokens over the local medium). */
  "not-supported",
  /** The request was aborted by its signal (a stopped subscription). */
  "aborted",
  /** A cursor file that exists but cannot be read as one. */
  "bad-cursor-file",
  /** wire(): no daemon URL, a URL that is not an http(s) origin, or a bound that is not a positive whole number of ms. */
  "bad-connection",
  /**
   * A write found no daemon that accepts it within `failoverMs` (every node unreachable,
   * or the cluster without an elected writer). The daemon's own 503 of a follower during
   * an election has the same type.
   */
  "no-writer",
] as const;

export type ChannelErrorType = (typeof CHANNEL_ERROR_TYPES)[number];

export class ChannelError extends Error {
  /** The daemon's / engine's `type` (e.g. `foreign-context`, `claimed`) or a ChannelErrorType. */
  readonly type: string;
  /** The HTTP status the daemon answered; undefined for local and transport errors. */
  readonly status: number | undefined;
  /** Per-entry problems of a refused batch (`inadmissible`, `reply-inadmissible`). */
  readonly problems: Problem[] | undefined;
  /** Every other field of the daemon's error body (e.g. `own` for foreign-context). */
  readonly details: Record<string, unknown>;

  constructor(type: string, message: string, extra: { status?: number; problems?: Problem[]; details?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = "ChannelError";
    this.type = type;
    this.status = extra.status;
    this.problems = extra.problems;
    this.details = extra.details ?? {};
  }
}

export const isChannelError = (e: unknown): e is ChannelError => e instanceof ChannelError;

/** Any error of the local medium as a ChannelError (KbError keeps its type, problems and details). */
export function fromLocal(e: unknown): ChannelError {
  if (e instanceof ChannelError) return e;
  if (isKbError(e)) return new ChannelError(e.type, e.message, { problems: e.problems, details: e.details, cause: e });
  if (e instanceof Error && "type" in e && typeof e.type === "string") return new ChannelError(e.type, e.message, { cause: e });
  throw e; // a programming error is not a refusal: let it surface as itself
}
