/**
 * The wire's shapes as zod schemas: the single source of each route's validation, its
 * TypeScript types and its OpenAPI entry (style.md). Request bodies are strict objects: an
 * unknown key (a typo such as `strenth`) is `bad-request`, never silently ignored.
 */
import { z } from "zod";

const handle = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).describe("a sentex handle");
export const seq = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).describe("a change-feed sequence number");
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

export const healthAnswer = z.object({
  ok,
  seq,
  version: z.string(),
  role: z.enum(["writer", "follower"]).describe("writer: commits writes; follower: replays the writer's log and redirects writes (an SQLite daemon is always the writer)"),
  epoch: z.number().int().nonnegative().describe("the writer lease epoch this daemon writes under; 0 while it follows, and always 0 on SQLite"),
  appliedSeq: seq.describe("the newest seq this daemon has applied and serves reads at"),
  lagMs: z.number().int().nonnegative().describe("how long this daemon has known of a committed seq it has not applied; 0 when caught up"),
});

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
    z.object({ token: z.string(), owner: z.string(), goal: z.string().optional(), context: z.string().optional(), cursor: seq, pending: z.number().int(), lagged: z.number().int(),
      parked: z.number().int().describe("polls parked on it now"), streaming: z.boolean().describe("a stream is reading it now") }),
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

export const clusterAnswer = z.object({
  ok,
  members: z.array(
    z.object({
      url: z.string().nullable().describe("its advertised URL (null until it listens); on SQLite the URL this request reached"),
      role: z.enum(["writer", "follower"]),
      epoch: z.number().int().nonnegative().describe("the lease epoch it writes under; 0 while it follows, always 0 on SQLite"),
      appliedSeq: seq.describe("the newest seq it had applied when last seen"),
      lagMs: z.number().int().nonnegative().describe("its apply lag when last seen"),
      seenAgoMs: z.number().int().nonnegative().describe("how long ago it last recorded itself, by the database's clock"),
      state: z.enum(["live", "unreachable"]).describe("unreachable: not seen for 3 lease periods"),
    }),
  ),
});

export type AssertBody = z.infer<typeof assertBody>;
export type EditBody = z.infer<typeof editBody>;

// ------------------------------------------------------------ disputes, adjudication, belief (docs/disputes.md)

const agentId = z.string().describe("an agent id, Agent + CapitalCamelCase, e.g. AgentAva");
const disputeId = z.string().describe('a dispute id: its two side handles joined by "-", either order ("12-15" = "15-12")');
const disputeState = z.enum(["open", "notified", "stale", "resolved"]);
const dispute = z.object({
  id: z.string().describe("canonical: the lower handle first"),
  class: z.enum(["contradiction", "conflict"]),
  sides: z.tuple([clashSide, clashSide]),
  state: disputeState,
  openedAt: z.number().int().describe("epoch ms the later side came to stand"),
});
const handles = z.array(handle);

export const disputesBody = z.strictObject({ context });
export const disputesAnswer = z.object({ ok, disputes: z.array(dispute) });

export const disputedBody = z.strictObject({ sentence, context });
export const disputedAnswer = z.object({ ok, disputed: z.boolean() });

export const disputeStateBody = z.strictObject({ id: disputeId });
export const disputeStateAnswer = z.object({ ok, id: z.string(), state: disputeState });

export const notifyBody = z.strictObject({ context: context.describe("the channel whose open disputes are notified") });
export const notifyAnswer = z.object({ ok, notified: z.array(dispute) });

export const sweepBody = z.strictObject({
  context: context.describe("the channel whose un-ruled disputes are swept"),
  staleTimeoutMs: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe("how long a dispute may stay un-ruled (default 86 400 000, 24 h)"),
});
export const sweepAnswer = z.object({ ok, stale: z.array(dispute) });

export const reopenBody = z.strictObject({ id: disputeId });
export const reopenAnswer = z.object({ ok, id: z.string(), removed: z.number().int().describe("how many marks were retracted") });

export const ruleBody = z.strictObject({
  arbiter: agentId.optional().describe("required for the admin; an agent token rules only as itself (default)"),
  id: disputeId,
  upheld: sentence.describe("the side upheld: the dispute's atom or its (not ...)"),
  channel: context.describe("the channel that sees the ruling (the arbiter's context is lifted under it)"),
});
export const ruleAnswer = z.object({ ok, ruling: handle.describe("the upheld sentence, monotonic, in the arbiter's context"), withdrawn: handles });

export const withdrawBody = z.strictObject({ arbiter: agentId.optional().describe("required for the admin; an agent token withdraws only its own"), id: disputeId });
export const withdrawAnswer = z.object({ ok, withdrawn: handles });

export const rulingsBody = z.strictObject({ arbiter: agentId, id: disputeId });
export const rulingsAnswer = z.object({ ok, rulings: handles });

export const whoRuledBody = z.strictObject({ handle });
export const whoRuledAnswer = z.object({
  ok,
  ruling: z.object({ arbiter: z.string(), disputeIds: z.array(z.string()), at: z.number().int() }).nullable().describe("null when the sentex is no ruling"),
});

export const tallyBody = z.strictObject({ handle: handle.describe("the claim the ballots name") });
export const tallyAnswer = z.object({
  ok,
  for: z.number().int(),
  against: z.number().int(),
  spoiled: z.number().int(),
  voters: z.object({ for: z.array(z.string()), against: z.array(z.string()), spoiled: z.array(z.string()) }),
});

export const majorityBody = z.strictObject({ id: disputeId, claim: handle.describe("the claim the ballots name; more for upholds it, more against its negation"), channel: context });
export const majorityAnswer = z.object({
  ok,
  for: z.number().int(),
  against: z.number().int(),
  outcome: z.enum(["for", "against", "tie"]),
  ruling: handle.nullable(),
  withdrawn: handles,
});

export const contestedBody = z.strictObject({ sentence, context });
export const contestedAnswer = z.object({ ok, contested: z.boolean(), premises: handles.describe("handles in the sentence's support that are a side of a dispute the context sees") });

export const quarantineBody = z.strictObject({ context: context.describe("the channel the sentex is hidden from"), handle });
export const quarantineAnswer = z.object({ ok, mask: handle.describe("the (except (sentexHandle H)) mask") });
export const unquarantineAnswer = z.object({ ok, removed: z.boolean() });
export const quarantinedBody = z.strictObject({ context });
export const quarantinedAnswer = z.object({ ok, handles });

export const believesBody = z.strictObject({ agent: agentId, goal: sentence });
export const believesAnswer = z.object({ ok, believed: z.boolean(), solutions: z.array(z.record(z.string(), z.string())) });

export const conveneBody = z.strictObject({ context, agents: z.array(agentId).max(1024) });
export const conveneAnswer = z.object({ ok, context, agents: z.array(z.string()).describe("every agent the context now sees") });

export const disagreementsBody = z.strictObject({ context });
export const disagreementsAnswer = z.object({
  ok,
  agents: z.array(z.string()).describe("the convened agents"),
  disagreements: z.array(
    z.object({ id: z.string(), between: z.array(z.string()), sides: z.array(z.object({ agent: z.string(), sentence, handle })) }),
  ),
});

export const disregardBody = z.strictObject({ agent: agentId.optional().describe("required for the admin; an agent token acts only for itself"), handle });
export const disregardAnswer = z.object({ ok, mask: handle });
export const restoreAnswer = z.object({ ok, restored: z.boolean() });
export const disregardsBody = z.strictObject({ agent: agentId.optional().describe("default: the caller (an agent token)") });
export const disregardsAnswer = z.object({ ok, agent: z.string(), handles });
