/**
 * The channel's moves and reads as MCP tools, each with a zod input schema and a description
 * written for a model. Every tool calls the channel library over the session's wire
 * connection, so what a tool may do is exactly what the token may do over the wire; a
 * refusal comes back as a tool error (`isError: true`) carrying the wire's `type`, message,
 * status and problems (see `refusal`).
 */
import { z } from "zod";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import * as ch from "../channel/index.js";
import type { AgentSession } from "./session.js";

/** A tool's answer: the value as JSON text (what a model reads) and as structured content. */
export function ok(value: object): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value as Record<string, unknown> };
}

/**
 * A refusal as a tool error: `structuredContent` is the wire's error body (`ok: false`,
 * `type`, `error`, plus `status`, `problems` and the body's other fields); the text starts
 * with the type. Anything that is not a ChannelError is a fault of ours, not a refusal: it
 * is rethrown and the SDK reports it as a plain tool error.
 */
export function refusal(e: unknown): CallToolResult {
  if (!ch.isChannelError(e)) throw e;
  const body: Record<string, unknown> = { ok: false, type: e.type, error: e.message, ...e.details };
  if (e.status !== undefined) body.status = e.status;
  if (e.problems) body.problems = e.problems;
  const problems = e.problems?.length ? ` (${e.problems.map((p) => `${p.type}: ${p.error}`).join("; ")})` : "";
  return { isError: true, content: [{ type: "text", text: `${e.type}: ${e.message}${problems}` }], structuredContent: body };
}

const handle = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const sentence = z.string().min(1);
const strength = z.enum(["default", "monotonic"]).optional().describe("default (may be defeated by a conflicting claim; the usual choice) or monotonic (never defeated)");

const SYNTAX =
  "Sentences are Lisp-like lists: a lowerCamelCase predicate then its arguments, e.g. (usesDatabase ProdCluster Postgres). " +
  'Constants are CapitalCamelCase, numbers are plain, strings are double-quoted ("Postgres 16"), variables start with ? (?db).';

const READ: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
const WRITE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false };

interface ToolDef<S extends z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  input: S;
  annotations: ToolAnnotations;
  run(args: z.infer<z.ZodObject<S>>, s: AgentSession): Promise<object>;
}

const tool = <S extends z.ZodRawShape>(def: ToolDef<S>): ToolDef<z.ZodRawShape> => def as unknown as ToolDef<z.ZodRawShape>;

/** Every tool, in the order a model meets them; the join prompt lists them from here. */
export const TOOLS: readonly ToolDef<z.ZodRawShape>[] = [
  tool({
    name: "assert",
    title: "State a claim",
    description: `State a claim on the channel, in your own context, signed by you. ${SYNTAX} The sentence must be ground (no ?variables). Asserting the same sentence again returns the same handle. Answers {handle}: cite the claim by that number.`,
    input: { sentence: sentence.describe("one ground sentence, e.g. (usesDatabase ProdCluster Postgres)"), strength },
    annotations: WRITE,
    run: async (a, s) => ({ handle: await ch.assert(s.handle, a.sentence, a.strength ? { strength: a.strength } : {}) }),
  }),
  tool({
    name: "retract",
    title: "Withdraw a sentex",
    description:
      "Withdraw a sentex you stated, by handle. Replies that follow their target (answers, endorsements, votes, claims on it) go with it in the same step. Only your own context: anything else is refused (foreign-context). Answers {seq, removed: handles}.",
    input: { handle: handle.describe("the handle of the sentex to withdraw") },
    annotations: { ...WRITE, destructiveHint: true },
    run: async (a, s) => ch.retract(s.handle, a.handle),
  }),
  tool({
    name: "edit",
    title: "Change several things atomically",
    description: `Several additions and removals as ONE atomic step: all of them land together (one seq, one event) or, if any is refused, none does. ${SYNTAX} Each addition goes to your own context unless it names another (which only the admin may write; an agent is refused foreign-context). Answers {seq, added: handles in order, removed: handles}.`,
    input: {
      add: z
        .array(z.strictObject({ sentence: sentence.describe("a ground sentence"), context: z.string().optional().describe("default: your own context"), strength }))
        .default([])
        .describe("sentences to add"),
      remove: z.array(handle).default([]).describe("handles to remove"),
    },
    annotations: { ...WRITE, destructiveHint: true, idempotentHint: false },
    async run(a, s) {
      const h = s.handle;
      return s.medium.edit({
        add: a.add.map((e) => ({ sentence: e.sentence, context: e.context ?? h.context, creator: h.agent, ...(e.strength ? { strength: e.strength } : {}) })),
        remove: a.remove,
      });
    },
  }),
  tool({
    name: "query",
    title: "Ask what is believed",
    description: `Ask what a context believes, seeing everything it sees (its cone: the channel sees every joined agent's claims). ${SYNTAX} The goal usually has ?variables, e.g. (usesDatabase ProdCluster ?db). Answers {solutions: [{"?db": "Postgres"}], truncated}.`,
    input: { goal: sentence.describe("a sentence with ?variables"), context: z.string().optional().describe("default: the channel"), limit: z.number().int().min(0).optional().describe("most solutions") },
    annotations: READ,
    run: async (a, s) => s.medium.query(a.goal, a.context ?? s.channel, a.limit === undefined ? {} : { limit: a.limit }),
  }),
  tool({
    name: "match",
    title: "Find stored sentexes",
    description: `Find believed sentexes matching a pattern, with their handles, contexts and creators (who said it). ${SYNTAX} Without a context it searches every context. Answers {sentexes: [{handle, sentence, context, creator, ...}]}.`,
    input: { sentence: sentence.describe("a pattern, e.g. (answers ?agent ?content (sentexHandle 12))"), context: z.string().optional().describe("one context; default: every context") },
    annotations: READ,
    run: async (a, s) => ({ sentexes: await s.medium.match(a.sentence, a.context ?? "?ctx") }),
  }),
  tool({
    name: "why",
    title: "Explain a belief",
    description:
      "Why a sentex is (or is not) believed: whether it is a premise (someone stated it), the rules and antecedents that derive it, and when it is out, the reason (defeated, unsupported, retracted, cascade). Answers {believed, premise, strength, support, reason}.",
    input: { handle: handle.describe("the sentex to explain") },
    annotations: READ,
    run: async (a, s) => {
      const { ok: _ok, ...why } = await s.medium.call<Record<string, unknown>>("POST", "/v1/why", { handle: a.handle });
      return why;
    },
  }),
  tool({
    name: "poseQuery",
    title: "Ask the channel a question",
    description: `Ask the other agents a question: writes (queries You Question). The question is a ground term naming what you want to know, e.g. (whichDatabase ProdCluster) or (ownerOf ProdCluster); it is stored, so it has no ?variables. Answers {handle}: others answer it by that handle; watch for answers with the watch resource.`,
    input: { question: sentence.describe("the question, a ground term, e.g. (whichDatabase ProdCluster)") },
    annotations: WRITE,
    run: async (a, s) => ({ handle: await ch.poseQuery(s.handle, a.question) }),
  }),
  tool({
    name: "answer",
    title: "Answer a question",
    description:
      'Answer the query at handle `query`: writes (answers You Content (sentexHandle Q)). Content is a term: a constant (Postgres), a number, a double-quoted string ("Postgres 16") or a sentence. The answer follows its query: it goes if the query is retracted. Answers {handle}.',
    input: { query: handle.describe("the query's handle (from openQueries or a watch)"), content: sentence.describe('the answer term, e.g. "Postgres 16"') },
    annotations: WRITE,
    run: async (a, s) => ({ handle: await ch.answer(s.handle, a.content, a.query) }),
  }),
  tool({
    name: "endorse",
    title: "Stand behind a claim",
    description: "Stand behind the claim at handle `target`: writes (endorses You (sentexHandle T)). Two endorsers are two sentexes with two creators. Answers {handle}.",
    input: { target: handle.describe("the claim's handle") },
    annotations: WRITE,
    run: async (a, s) => ({ handle: await ch.endorse(s.handle, a.target) }),
  }),
  tool({
    name: "dispute",
    title: "Challenge a claim",
    description:
      "Challenge the claim at handle `target`: writes its negation (S becomes (not S)) and (disputes You (sentexHandle T)) in one step, both signed by you, so the clash shows up for the dispute readers. Answers {handle} of the disputes sentex.",
    input: { target: handle.describe("the claim to challenge") },
    annotations: WRITE,
    run: async (a, s) => ({ handle: await ch.dispute(s.handle, a.target) }),
  }),
  tool({
    name: "vote",
    title: "Cast a ballot",
    description:
      "Vote on the claim at handle `target`: stance for writes (votesFor You (sentexHandle T)), against writes (votesAgainst ...). A majority resolution counts these ballots. One ballot per stance; to change your vote, retract the old ballot. Answers {handle}.",
    input: { target: handle.describe("the claim voted on"), stance: z.enum(["for", "against"]) },
    annotations: WRITE,
    run: async (a, s) => ({ handle: await ch.vote(s.handle, a.stance, a.target) }),
  }),
  tool({
    name: "openQueries",
    title: "List the channel's questions",
    description:
      "The questions the channel sees, oldest first, each with its handle, who asked, the question, how many answers it has and the live claim on it (who is working on it, until when, epoch ms). By default only the unanswered ones. Answers {queries: [...]}.",
    input: { unanswered: z.boolean().default(true).describe("true (default): only queries with no answer yet") },
    annotations: READ,
    run: async (a, s) => ({ queries: (await ch.openQueries(s.handle, { unanswered: a.unanswered })).map(({ sentex: _sx, ...q }) => q) }),
  }),
  tool({
    name: "claim",
    title: "Take a question",
    description:
      "Tell the others you are working on the query at handle `query`: a lease (claims You (sentexHandle Q) UntilMs) that runs for leaseMs. Claim again to renew (your older lease is replaced in the same step). While another agent's lease is live, yours is refused with type claimed: pick another query. Answers {holder, until (epoch ms), handle}.",
    input: { query: handle.describe("the query's handle"), leaseMs: z.number().int().min(1).max(86_400_000).describe("how long the lease runs, in ms (at most a day)") },
    annotations: { ...WRITE, idempotentHint: false },
    run: async (a, s) => ({ ...(await ch.claim(s.handle, a.query, { leaseMs: a.leaseMs })) }),
  }),
  tool({
    name: "release",
    title: "Give a question back",
    description: "Drop your claims on the query at handle `query` (one step), so another agent can take it. Answers {released: how many leases went}.",
    input: { query: handle.describe("the query's handle") },
    annotations: { ...WRITE, destructiveHint: true },
    run: async (a, s) => ({ released: await ch.release(s.handle, a.query) }),
  }),
];

/** Register every tool on `server`, each running against `session`. */
export function registerTools(server: McpServer, session: AgentSession): void {
  for (const t of TOOLS) {
    server.registerTool(t.name, { title: t.title, description: t.description, inputSchema: t.input, annotations: t.annotations }, async (args: Record<string, unknown>) => {
      try {
        return ok(await t.run(args as never, session));
      } catch (e) {
        return refusal(e);
      }
    });
  }
}
