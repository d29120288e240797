/**
 * The wire's shapes as zod schemas: the single source of each route's validation, its
 * TypeScript types and its OpenAPI entry (style.md). Request bodies are strict objects: an
 * unknown key (a typo such as `strenth`) is `bad-request`, never silently ignored.
 */
import { z } from "zod";

const handle = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).describe("a sentex handle");
const seq = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).describe("a change-feed sequence number");
const sentence = z.string().describe("a sentence in s-expression text, e.g. (usesDatabase ProdCluster Postgres)");
const context = z.string().describe("a context symbol, Cx + CapitalCamelCase");
const strength = z.enum(["default", "monotonic"]);
const ok = z.literal(true);

export const sentexSchema = z.object({
  handle,
  sentence,
  context,
  truth: z.enum(["true", "false"]),
  strength,
  creator: z.string().nullable(),
  createdAt: z.number().int(),
  seq,
  derived: z.boolean(),
  believed: z.boolean(),
  locator: z.string(),
});

const bindings = z.record(z.string(), z.string()).describe("each goal variable bound to canonical text (standing queries only)");
const bounded = z.object({ limit: z.enum(["maxDerivations", "maxDepth"]), value: z.number() }).describe("present when a write stopped chaining at an engine limit");

export const eventSchema = z.object({
  seq,
  added: z.array(sentexSchema.extend({ bindings: bindings.optional() })),
  removed: z.array(
    z.object({ handle, sentence, context, reason: z.enum(["retracted", "cascade", "unsupported", "defeated"]), bindings: bindings.optional() }),
  ),
  bounded: bounded.optional(),
});

const problem = z.object({ type: z.string(), error: z.string(), in: z.enum(["add", "remove"]), index: z.number().int() });

export const errorSchema = z
  .object({ ok: z.literal(false), type: z.string(), error: z.string(), problems: z.array(problem).optional() })
  .describe("every refusal: switch on `type` (docs/daemon.md lists each with its status)");

// ------------------------------------------------------------ requests and answers

export const healthAnswer = z.object({ ok, seq, version: z.string() });

export const assertBody = z.strictObject({ sentence, context, strength: strength.optional(), creator: z.string().optional() });
export const assertAnswer = z.object({ ok, handle, seq, created: z.boolean(), bounded: bounded.optional() });

const addEntry = z.strictObject({ sentence, context, strength: strength.optional(), creator: z.string().optional() });
export const editBody = z.strictObject({ add: z.array(addEntry).default([]), remove: z.array(handle).default([]) });
export const editAnswer = z.object({ ok, seq, added: z.array(handle), removed: z.array(handle), bounded: bounded.optional() });
export const checkEditAnswer = z.object({ ok, problems: z.array(problem) });

export const retractBody = z.strictObject({ handle });
export const retractAnswer = z.object({ ok, seq, removed: z.array(handle) });

export const queryBody = z.strictObject({ goal: sentence, context, limit: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional() });
export const queryAnswer = z.object({ ok, solutions: z.array(z.record(z.string(), z.string())), truncated: z.boolean() });

export const matchBody = z.strictObject({ sentence, context: context.describe("a context, or ?ctx for any context") });
export const matchAnswer = z.object({ ok, sentexes: z.array(sentexSchema) });

export const sentexParams = z.strictObject({ handle: z.string().regex(/^[1-9][0-9]{0,15}$/, "a handle is a positive whole number") });
export const sentexAnswer = z.object({ ok, sentex: sentexSchema });

export const whyBody = z.strictObject({ handle });
export const whyAnswer = z.object({
  ok,
  believed: z.boolean(),
  premise: z.boolean(),
  strength: strength.optional(),
  support: z.array(z.object({ rule: handle.optional(), antecedents: z.array(handle), edges: z.array(handle).optional() })),
  reason: z.enum(["defeated", "unsupported", "retracted", "cascade"]).optional(),
});

export const contradictionsBody = z.strictObject({ context });
const clashSide = z.object({ handle, sentence, context, strength, derived: z.boolean() });
const clash = z.object({ id: z.string(), kind: z.enum(["contradiction", "conflict"]), sides: z.tuple([clashSide, clashSide]) });
export const contradictionsAnswer = z.object({ ok, contradictions: z.array(clash), conflicts: z.array(clash) });

export const watchBody = z.strictObject({ goal: sentence.optional(), context: context.optional(), from: z.unknown().optional().describe("a seq: replay the durable log after it") });
export const watchAnswer = z.object({ ok, token: z.string(), cursor: seq, maxEvents: z.number().int(), lagged: z.number().int() });

export const pollBody = z.strictObject({
  token: z.string(),
  cursor: z.unknown().describe("a seq: the cursor the previous answer returned"),
  waitMs: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe("park up to this long (capped at maxWaitMs, 30 000)"),
  limit: z.number().int().optional().describe("most events to answer (default 1000)"),
});
export const pollAnswer = z.object({ ok, events: z.array(eventSchema), cursor: seq, lagged: z.number().int() });

export const streamQuery = z.strictObject({ token: z.string(), cursor: z.string().optional().describe("a seq; Last-Event-ID overrides it on a reconnect") });

export const unwatchBody = z.strictObject({ token: z.string() });
export const unwatchAnswer = z.object({ ok, dropped: z.boolean() });

export const watchersAnswer = z.object({
  ok,
  watchers: z.array(
    z.object({ token: z.string(), owner: z.string(), goal: z.string().optional(), context: z.string().optional(), cursor: seq, pending: z.number().int(), lagged: z.number().int() }),
  ),
});

export const agentsBody = z.strictObject({
  id: z.string().describe("Agent + CapitalCamelCase, e.g. AgentAtlas"),
  displayName: z.string().max(256).optional(),
  trust: z.number().finite().optional(),
});
export const agentsAnswer = z.object({ ok, agent: z.string(), context, token: z.string().describe("shown once; stored hashed") });
export const agentsListAnswer = z.object({
  ok,
  agents: z.array(z.object({ id: z.string(), context, displayName: z.string().nullable(), trust: z.number().nullable() })),
});

export type AssertBody = z.infer<typeof assertBody>;
export type EditBody = z.infer<typeof editBody>;
