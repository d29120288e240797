/**
 * The ONE place that maps every wire error `type` to its HTTP status (docs/wire.md "Errors"):
 * the engine's refusals, the feed's, and the daemon's own. A type has exactly one status;
 * nothing elsewhere invents a type string or picks a status.
 *
 *   throw new WireError("foreign-context", "AgentAtlas writes only CxAtlas");
 *   // -> 403 {"ok": false, "type": "foreign-context", "error": "AgentAtlas writes only CxAtlas"}
 */
import { STATUS_CODES } from "node:http";
import { isKbError, type KbErrorType, type Problem } from "../kb/index.js";
import { FeedError, type FeedErrorType } from "../feed/index.js";
import { NotWriterError } from "../kb/store-of-record.js";

/** Types only the daemon answers (access, guards, routing, lifecycle). */
type DaemonErrorType =
  | "not-found"
  | "unauthorized"
  | "forbidden"
  | "foreign-context"
  | "foreign-agent"
  | "registry-forbidden"
  | "cross-origin"
  | "body-too-large"
  | "not-json"
  | "misdirected"
  | "bad-encoding"
  | "request-timeout"
  | "headers-too-large"
  | "too-long"
  | "edit-too-large"
  | "shutting-down"
  | "too-many-sessions"
  | "not-writer"
  | "no-writer"
  | "bad-idempotency-key"
  | "idempotency-key-reused"
  | "internal-error";

export type WireErrorType = KbErrorType | FeedErrorType | DaemonErrorType;

/**
 * The koinii layer's refusals (disputes, adjudication) are request refusals. Spread into the
 * table rather than listed in it, so this file compiles both before and after the engine
 * declares them.
 */
const KOINII_REFUSALS = { "arbiter-is-party": 400, "not-own-statement": 400 } as const;

/** Every type with its status. Typed as a total record: a new engine or feed type fails to compile until it is mapped here. */
export const WIRE_ERROR_STATUS: Readonly<Record<WireErrorType, number>> = {
  ...KOINII_REFUSALS,
  // request refusals (docs/wire.md): the caller's fault, 400
  "parse-error": 400,
  "not-ground": 400,
  naming: 400,
  arity: 400,
  functional: 400,
  "not-range-restricted": 400,
  "dangling-target": 400,
  shape: 400,
  inadmissible: 400,
  "not-watchable": 400,
  "unknown-subscription": 400,
  "bad-cursor": 400,
  "bad-request": 400,
  // An Idempotency-Key that is not 1..255 printable ASCII characters, or one sent to POST /v1/agents (its answer is a secret never stored).
  "bad-idempotency-key": 400,
  // A body that is not valid UTF-8 (refused, never stored with U+FFFD in place of the bad bytes).
  "bad-encoding": 400,
  // An atom or a context (or other) name over --max-atom-bytes.
  "too-long": 400,
  // Not in docs/wire.md; the engine refuses a sentence over a parse or derivation limit (docs/daemon.md).
  "limit-reached": 400,
  "unknown-handle": 404,
  // A read over a named work bound (maxQuerySteps, maxResults, maxReadMs): narrow it.
  "too-costly": 422,
  // An Idempotency-Key this caller already used for another request (method, path or body differ).
  "idempotency-key-reused": 422,
  // Not in docs/wire.md: a lease held by another agent (the engine's `claimed`); a conflict, retry after it frees.
  claimed: 409,
  // A write sent to a follower: the answer's Location is the same path on the writer (docs/cluster.md).
  "not-writer": 307,
  "not-found": 404,
  unauthorized: 401,
  forbidden: 403,
  "foreign-context": 403,
  // Not in docs/wire.md: an agent token naming another agent as the arbiter of a ruling or the owner of a disregard (docs/disputes.md).
  "foreign-agent": 403,
  "registry-forbidden": 403,
  "cross-origin": 403,
  "body-too-large": 413,
  // An edit (or check-edit) with more entries than --max-edit-entries.
  "edit-too-large": 413,
  // A request (headers and body) not complete within --request-timeout-ms.
  "request-timeout": 408,
  // Open mode: the Host header names no bound loopback name (a DNS-rebinding page, say).
  misdirected: 421,
  // Not in docs/wire.md: request headers over Node's limit (16 KiB), refused before any route runs.
  "headers-too-large": 431,
  "not-json": 415,
  "too-many-subscriptions": 429,
  "too-many-waiters": 429,
  // Not in docs/wire.md: the /mcp mount's open sessions reached maxSessions (docs/mcp.md).
  "too-many-sessions": 429,
  "internal-error": 500,
  // Not in docs/wire.md: the daemon is stopping (SIGTERM) or the store closed (docs/daemon.md).
  "shutting-down": 503,
  closed: 503,
  // K12: the store failed; the daemon stopped accepting work and is exiting (docs/daemon.md).
  unavailable: 503,
  // A write sent to a follower while no writer is known (an election): retry after Retry-After (docs/cluster.md).
  "no-writer": 503,
};

export const WIRE_ERROR_TYPES = Object.keys(WIRE_ERROR_STATUS) as WireErrorType[];

export class WireError extends Error {
  constructor(
    readonly type: WireErrorType,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "WireError";
  }
}

export interface WireErrorBody {
  ok: false;
  type: WireErrorType;
  error: string;
  problems?: Problem[];
  [k: string]: unknown;
}

/** Fastify's own 4xx codes, each mapped onto a wire type. */
const FASTIFY_CODES: Record<string, WireErrorType> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "body-too-large",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "not-json",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "bad-request",
  FST_ERR_CTP_EMPTY_JSON_BODY: "bad-request",
  FST_ERR_CTP_INVALID_JSON_BODY: "bad-request",
  FST_ERR_BAD_URL: "bad-request",
  FST_ERR_MAX_PARAM_LENGTH: "bad-request",
};

/**
 * Any thrown value as a wire answer: its status and body. Unknown errors (and fastify 5xx)
 * are `internal-error`; their message is not echoed to the caller.
 */
export function toWire(err: unknown): { status: number; body: WireErrorBody; internal: boolean; writer?: string; retryAfterS?: number } {
  let type: WireErrorType = "internal-error";
  let message = "the daemon failed; the error is in its log";
  let extra: Record<string, unknown> = {};
  if (err instanceof NotWriterError) {
    // The caller resends to the writer (307 keeps the method and body) or waits out the election.
    const body: WireErrorBody = { ok: false, type: err.writerUrl ? "not-writer" : "no-writer", error: err.message };
    if (err.writerUrl) return { status: WIRE_ERROR_STATUS["not-writer"], body: { ...body, writer: err.writerUrl }, internal: false, writer: err.writerUrl };
    return { status: WIRE_ERROR_STATUS["no-writer"], body, internal: false, retryAfterS: Math.max(1, Math.ceil(err.retryAfterMs / 1000)) };
  }
  if (err instanceof WireError) {
    type = err.type;
    message = err.message;
    extra = err.extra;
  } else if (isKbError(err)) {
    type = err.type;
    message = err.message;
    // Details (a lease's holder and expiry, say) travel with the refusal; they never hold secrets.
    extra = { ...(err.details ?? {}), ...(err.problems ? { problems: err.problems } : {}) };
  } else if (err instanceof FeedError) {
    type = err.type;
    message = err.message;
  } else if (err && typeof err === "object" && "code" in err && typeof err.code === "string") {
    const statusCode = "statusCode" in err && typeof err.statusCode === "number" ? err.statusCode : 500;
    const mapped = FASTIFY_CODES[err.code];
    if (mapped) type = mapped;
    else if (statusCode >= 400 && statusCode < 500) type = "bad-request";
    if (type !== "internal-error") message = err instanceof Error ? err.message : String(err);
  }
  const status = WIRE_ERROR_STATUS[type];
  return { status, body: { ok: false, type, error: message, ...extra }, internal: status >= 500 && type === "internal-error" };
}

/**
 * A refusal written straight onto a socket, for errors Node raises before any request
 * object exists (a malformed request line, headers over the limit, a request not complete
 * within the request timeout): a whole HTTP/1.1 response in the wire's shape; the caller
 * closes the socket after it.
 */
export function rawWireResponse(type: WireErrorType, message: string): string {
  const status = WIRE_ERROR_STATUS[type];
  const body = JSON.stringify({ ok: false, type, error: message });
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
