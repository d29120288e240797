/**
 * The route table of docs/wire.md: each route's method, path, access, zod schemas (validation,
 * types and OpenAPI from one source) and handler. server.ts registers them; openapi.ts
 * documents them.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import { registry, KbError, type Kb } from "../kb/index.js";
import { pollAnswerBody, type FeedHub } from "../feed/index.js";
import { bodyFraming } from "./chunked.js";
import { WireError } from "./errors.js";
import type { Access, Principal } from "./access.js";
import type { Metrics } from "./metrics.js";
import * as s from "./schemas.js";
import { disputeRoutes } from "./disputes.js";

/** none = no token (/health, and the console's static files in src/console/serve.ts); any = any principal; admin = the admin only. */
export type RouteAccess = "none" | "any" | "admin";

export interface RouteDeps {
  kb: Kb;
  /** The daemon's clock (epoch ms): dispute marks are stamped with it. */
  now: () => number;
  hub: FeedHub;
  access: Access;
  metrics: Metrics;
  version: string;
  heartbeatMs: number;
}

export interface HandlerContext<B, P, Q> {
  body: B;
  params: P;
  query: Q;
  principal: Principal;
  request: FastifyRequest;
  reply: FastifyReply;
}

export interface RouteDef {
  method: "GET" | "POST";
  url: string;
  summary: string;
  access: RouteAccess;
  body?: z.ZodType;
  params?: z.ZodType;
  query?: z.ZodType;
  /** The `ok: true` answer; undefined for a route that answers in another media type. */
  answer?: z.ZodType;
  /** Media type of a non-JSON answer (SSE, Prometheus text). */
  produces?: string;
  /**
   * A read of the KB (K11): its handler runs synchronously on memory, the answer waits until
   * the seq it saw is durable and names it as `asOf` (see `readRoute`).
   */
  read?: boolean;
  /**
   * A POST every node of a cluster serves itself (the feed's). Every other POST that is not
   * a read may write, and a follower redirects it to the writer before it runs.
   */
  everyNode?: boolean;
  /** The answer holds a secret (a fresh token): it is never stored, so the route takes no `Idempotency-Key`. */
  secretAnswer?: boolean;
  handler(ctx: HandlerContext<any, any, any>): unknown;
}

/** Whether a follower sends this route to the writer (see `everyNode`). */
export const writerOnly = (def: RouteDef): boolean => def.method === "POST" && !def.read && !def.everyNode;

type Out<A extends z.ZodType> = Omit<z.output<A>, "ok">;

/** A route's definition as written in the table: `R` is what its handler returns. */
interface RouteSpec<B extends z.ZodType, P extends z.ZodType, Q extends z.ZodType, A extends z.ZodType, R> {
  method: "GET" | "POST";
  url: string;
  summary: string;
  access: RouteAccess;
  body?: B;
  params?: P;
  query?: Q;
  answer: A;
  everyNode?: boolean;
  secretAnswer?: boolean;
  handler(ctx: HandlerContext<z.output<B>, z.output<P>, z.output<Q>>): R;
}

/** Type a route: its handler sees parsed inputs and must return the answer's shape (without `ok`). */
export function route<B extends z.ZodType, P extends z.ZodType, Q extends z.ZodType, A extends z.ZodType>(def: RouteSpec<B, P, Q, A, Out<A> | Promise<Out<A>>>): RouteDef {
  return def;
}

/**
 * Type a read route (K11): a synchronous handler over the KB's memory; the server answers
 * it once the seq it saw is durable, with `asOf` (that seq) added to the answer and its
 * schema.
 */
export function readRoute<B extends z.ZodType, P extends z.ZodType, Q extends z.ZodType, A extends z.ZodObject>(def: RouteSpec<B, P, Q, A, Out<A>>): RouteDef {
  return { ...def, read: true, answer: def.answer.extend({ asOf: s.seq.describe("the durable seq this answer reflects") }) };
}

function sentexOr404(kb: Kb, handle: number) {
  const sx = kb.sentex(handle);
  if (!sx) throw new KbError("unknown-handle", `no sentex has handle ${handle}`);
  return sx;
}

export function routes(d: RouteDeps): RouteDef[] {
  const { kb, hub, access, metrics } = d;
  return [
    route({
      method: "GET",
      url: "/health",
      summary: "Liveness and the head seq; the only route that needs no token",
      access: "none",
      answer: s.healthAnswer,
      handler: ({ reply }) => {
        const c = kb.store.cluster;
        const answer = { seq: hub.headSeq, version: d.version, role: kb.role, epoch: c?.epoch ?? 0, appliedSeq: hub.headSeq, lagMs: c?.lagMs() ?? 0 };
        // K12: a stopped daemon is not healthy; a supervisor reads the reason here.
        if (kb.failure) reply.code(503).send({ ok: false, type: "unavailable", error: `the daemon stopped: ${kb.failure.reason}`, reason: kb.failure.reason });
        return answer;
      },
    }),
    route({
      method: "POST",
      url: "/v1/assert",
      summary: "Assert one sentence into a context (idempotent on identity)",
      access: "any",
      body: s.assertBody,
      answer: s.assertAnswer,
      async handler({ body, principal }) {
        access.checkWrite(principal, body.context, body.sentence);
        const creator = principal.admin ? (body.creator ?? null) : principal.id;
        const r = await kb.assert(body.sentence, body.context, { strength: body.strength, creator });
        metrics.writes.inc({ route: "assert" });
        return r;
      },
    }),
    route({
      method: "POST",
      url: "/v1/edit",
      summary: "Apply a batch atomically: adds then removes, one seq, one event",
      access: "any",
      body: s.editBody,
      answer: s.editAnswer,
      async handler({ body, principal }) {
        const batch = stampBatch(access, principal, body);
        const r = await kb.edit(batch);
        metrics.writes.inc({ route: "edit" });
        return r;
      },
    }),
    readRoute({
      method: "POST",
      url: "/v1/check-edit",
      summary: "Every problem a batch would meet; stores nothing",
      access: "any",
      body: s.editBody,
      answer: s.checkEditAnswer,
      handler: ({ body, principal }) => ({ problems: kb.checkEdit(stampBatch(access, principal, body)) }),
    }),
    route({
      method: "POST",
      url: "/v1/retract",
      summary: "Retract a stored sentex, with its target-following replies (cascade)",
      access: "any",
      body: s.retractBody,
      answer: s.retractAnswer,
      async handler({ body, principal }) {
        sentexOr404(kb, body.handle);
        access.checkRemove(principal, body.handle);
        const r = await kb.retract(body.handle);
        metrics.writes.inc({ route: "retract" });
        return r;
      },
    }),
    readRoute({
      method: "POST",
      url: "/v1/query",
      summary: "Cone-aware query: solutions as variable bindings in canonical text",
      access: "any",
      body: s.queryBody,
      answer: s.queryAnswer,
      handler: ({ body }) => kb.query(body.goal, body.context, { limit: body.limit }),
    }),
    readRoute({
      method: "POST",
      url: "/v1/match",
      summary: "Believed sentexes stored exactly in a context (?ctx = any) matching a literal",
      access: "any",
      body: s.matchBody,
      answer: s.matchAnswer,
      handler: ({ body }) => ({ sentexes: kb.match(body.sentence, body.context) }),
    }),
    readRoute({
      method: "GET",
      url: "/v1/sentex/:handle",
      summary: "One stored sentex by handle",
      access: "any",
      params: s.sentexParams,
      answer: s.sentexAnswer,
      handler: ({ params }) => ({ sentex: sentexOr404(kb, Number(params.handle)) }),
    }),
    readRoute({
      method: "POST",
      url: "/v1/why",
      summary: "Why a sentex is (not) believed: premise, justifications, reason",
      access: "any",
      body: s.whyBody,
      answer: s.whyAnswer,
      handler: ({ body }) => kb.why(body.handle),
    }),
    readRoute({
      method: "POST",
      url: "/v1/contradictions",
      summary: "Default/default contradictions and monotonic/monotonic conflicts visible from a context",
      access: "any",
      body: s.contradictionsBody,
      answer: s.contradictionsAnswer,
      handler: ({ body }) => kb.contradictions(body.context),
    }),
    route({
      method: "POST",
      url: "/v1/watch",
      everyNode: true,
      summary: "Register a subscription: every event, a context's cone, or a standing query; `from` replays the durable log",
      access: "any",
      body: s.watchBody,
      answer: s.watchAnswer,
      // A `from` another node gave waits (up to maxWaitMs) for this node to apply it.
      handler: async ({ body, principal }) => (await hub.awaitCursor(body.from, hub.limits.maxWaitMs), hub.watch(principal, body)),
    }),
    route({
      method: "POST",
      url: "/v1/poll",
      everyNode: true,
      summary: "Matching events after a cursor; waitMs parks (capped) until one arrives",
      access: "any",
      body: s.pollBody,
      answer: s.pollAnswer,
      // The body is assembled from each event's shared JSON: 64 subscribers woken by one
      // event serialize it once, not 64 times, and share one encoded body. Same shape as pollAnswer.
      async handler({ body, principal, reply }) {
        const answer = await hub.poll(principal, body);
        reply.type("application/json; charset=utf-8").send(pollAnswerBody(answer));
        return { ok: true as const, ...answer }; // typed as the answer; already sent above
      },
    }),
    {
      method: "GET",
      url: "/v1/stream",
      summary: "The subscription as Server-Sent Events (id = seq; Last-Event-ID resumes; heartbeat comments; event: lagged)",
      access: "any",
      query: s.streamQuery,
      produces: "text/event-stream",
      async handler({ query, principal, request, reply }: HandlerContext<unknown, unknown, z.output<typeof s.streamQuery>>) {
        const lastId = request.headers["last-event-id"];
        const raw = typeof lastId === "string" ? lastId : query.cursor;
        const cursor = raw === undefined ? undefined : /^[0-9]{1,16}$/.test(raw.trim()) ? Number(raw.trim()) : raw;
        await hub.awaitCursor(cursor, Infinity); // a Last-Event-ID from another node: wait until applied here
        const prepared = hub.prepareStream(principal, query.token, cursor);
        reply.hijack();
        const res = reply.raw;
        res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive", "x-accel-buffering": "no" });
        res.flushHeaders();
        const gone = new Promise<void>((r) => res.once("close", () => r()));
        // Frames go straight to the socket, each event's frame framed once for every stream
        // (chunked.ts); res.end() still ends the body the way Node began it.
        const socket = res.socket;
        const framed = bodyFraming(res);
        await hub.runStream(
          prepared,
          {
            write: (frame) => (!socket || res.destroyed || res.writableEnded || socket.destroyed ? true : socket.write(framed(frame))),
            // A drain may already have fired (Node emits it on the next tick after a
            // write the kernel took whole): wait only while one is still owed.
            drained: () => (socket?.writableNeedDrain ? new Promise((r) => socket.once("drain", () => r())) : Promise.resolve()),
            get closed() {
              return res.destroyed || res.writableEnded;
            },
            gone,
            end: () => {
              if (!res.writableEnded) res.end();
            },
          },
          d.heartbeatMs,
        );
      },
    },
    route({
      method: "POST",
      url: "/v1/unwatch",
      everyNode: true,
      summary: "Drop a subscription (idempotent)",
      access: "any",
      body: s.unwatchBody,
      answer: s.unwatchAnswer,
      handler: ({ body, principal }) => ({ dropped: hub.unwatch(principal, body.token) }),
    }),
    route({
      method: "GET",
      url: "/v1/watchers",
      summary: "Your subscriptions (every subscription for the admin)",
      access: "any",
      answer: s.watchersAnswer,
      handler: ({ principal }) => ({ watchers: hub.watchers(principal) }),
    }),
    route({
      method: "POST",
      url: "/v1/agents",
      summary: "Register an agent (admin): registry facts and a fresh token (re-registering rotates it)",
      access: "admin",
      secretAnswer: true,
      body: s.agentsBody,
      answer: s.agentsAnswer,
      async handler({ body }) {
        const { id, context } = await registry.register(kb, body.id, { displayName: body.displayName, trust: body.trust });
        const token = await access.issueToken(id);
        metrics.writes.inc({ route: "agents" });
        return { agent: id, context, token };
      },
    }),
    readRoute({
      method: "GET",
      url: "/v1/agents",
      summary: "Registered agents with their context, display name and trust",
      access: "any",
      answer: s.agentsListAnswer,
      handler: () => ({ agents: registry.agents(kb) }),
    }),
    readRoute({
      method: "GET",
      url: "/v1/cluster",
      summary: "Every daemon of the cluster: role, epoch, applied seq, apply lag, when last seen, reachable or not (on SQLite: this daemon alone)",
      access: "any",
      answer: s.clusterAnswer,
      handler: ({ request }) => ({
        members: kb.store.cluster?.members() ?? [{ url: `${request.protocol}://${request.host}`, role: kb.role, epoch: 0, appliedSeq: hub.headSeq, lagMs: 0, seenAgoMs: 0, state: "live" as const }],
      }),
    }),
    ...disputeRoutes(d),
  ];
}

/** Access first (K4: a foreign entry is 403 before any admissibility check), then stamp creator. */
function stampBatch(access: Access, p: Principal, body: s.EditBody) {
  body.add.forEach((a) => access.checkWrite(p, a.context, a.sentence));
  body.remove.forEach((h) => access.checkRemove(p, h));
  return {
    add: body.add.map((a) => ({ sentence: a.sentence, context: a.context, strength: a.strength, creator: p.admin ? (a.creator ?? null) : p.id })),
    remove: body.remove,
  };
}

export { WireError };
