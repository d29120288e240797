/**
 * The daemon: fastify on an in-process KB (docs/wire.md). Constructible in-process, so tests and
 * benchmarks can run it without a child process:
 *
 *   const kb = await openKb({ path: "./data/koinii.db", contextsDir: "./contexts" });
 *   const server = await createServer({ kb, adminToken: process.env.KOINII_ADMIN_TOKEN });
 *   const url = await server.listen(4200, "127.0.0.1");
 *   // ... later: await server.close(); await kb.close();
 *
 * Guards run in onRequest, in this order, all from the headers: misdirected (421, open mode:
 * a Host that is not a bound loopback name), shutting-down (503), cross-origin (403),
 * unauthorized (401), forbidden (403, admin routes), body-too-large (413, from
 * Content-Length, before the body is read), not-json (415). The body is then decoded as
 * strict UTF-8 (400 bad-encoding) and parsed; a writing route's Idempotency-Key is checked
 * (400 bad-idempotency-key; idempotency.ts); the body is checked against the route's schema
 * (400 bad-request), its entries counted (413 edit-too-large) and its names and atoms
 * measured (400 too-long). Refusals made before a route runs (a malformed URL or request line,
 * headers over Node's limit, a request not complete within requestTimeoutMs) are answered
 * in the same `{ok: false, type, error}` shape.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { pino, type Logger } from "pino";
import type { Kb } from "../kb/index.js";
import { FeedHub, type FeedLimits } from "../feed/index.js";
import { terms } from "../kb/index.js";
import { boundHostNames, hostAllowed, isLoopbackAuthority } from "../net/loopback.js";
import { rawWireResponse, toWire, WireError, type WireErrorType } from "./errors.js";
import { Access, type Principal } from "./access.js";
import { Metrics } from "./metrics.js";
import { routes, writerOnly, type RouteDef } from "./routes.js";
import { editBody } from "./schemas.js";
import { NotWriterError } from "../kb/store-of-record.js";
import { openApiDocument } from "./openapi.js";
import { packageVersion } from "./package.js";
import { consoleRoutes } from "../console/serve.js";
import { mountMcp, type McpHttpLimits } from "../mcp/http.js";
import { LingeringCloses } from "./linger.js";
import { IdempotencyKeys, IDEMPOTENCY_HEADER, idempotencyKey, requestSha256 } from "./idempotency.js";
import { RecentWriters } from "./writers.js";

/** Every bound of the daemon besides the feed's, each with its unit in its name. */
export interface DaemonLimits {
  /** Largest request body; a larger one is 413 `body-too-large`. */
  maxBodyBytes: number;
  /** Interval of the `: heartbeat` comment on SSE streams. */
  heartbeatMs: number;
  /** How long a graceful close may take before open connections are cut. */
  shutdownGraceMs: number;
  /** Longest a request (headers and body) may take to arrive; past it, 408 `request-timeout` and the connection closes. */
  requestTimeoutMs: number;
  /** Most entries (adds + removes) in one edit or check-edit; more is 413 `edit-too-large`. */
  maxEditEntries: number;
  /** Longest atom in a sentence, and longest name (context, agent id, token...) in a request, in UTF-8 bytes; longer is 400 `too-long`. */
  maxAtomBytes: number;
  /** How long an `Idempotency-Key`'s answer is honoured (and kept) after it was first given. */
  idempotencyTtlMs: number;
  /** At `full` on SQLite: a writer counts as alone (its WAL fsync may run inline) while no other client sent a write within this (writers.ts). */
  loneWriterWindowMs: number;
}

export const DEFAULT_DAEMON_LIMITS: DaemonLimits = {
  maxBodyBytes: 16 * 1024 * 1024,
  heartbeatMs: 15_000,
  shutdownGraceMs: 10_000,
  requestTimeoutMs: 30_000,
  maxEditEntries: 10_000,
  maxAtomBytes: 65_536,
  idempotencyTtlMs: 24 * 60 * 60 * 1000,
  loneWriterWindowMs: 10,
};

/** Body fields that hold a sentence (measured atom by atom); every other string field is a name, measured whole. */
const SENTENCE_FIELDS = new Set(["sentence", "goal", "upheld"]);

export interface ServerOptions {
  kb: Kb;
  /** Unset or blank = open mode (loopback only; the CLI refuses a public bind). */
  adminToken?: string | undefined;
  feed?: Partial<FeedLimits>;
  limits?: Partial<DaemonLimits>;
  /** Extra exact origins allowed besides the daemon's own loopback origin. */
  allowedOrigins?: string[];
  logger?: Logger;
  version?: string;
  now?: () => number;
  /** Bounds of the /mcp mount (docs/mcp.md). */
  mcp?: Partial<McpHttpLimits>;
}

export interface KoiniiServer {
  app: FastifyInstance;
  hub: FeedHub;
  access: Access;
  metrics: Metrics;
  log: Logger;
  /** The KB served now (a cluster daemon that rejoins swaps it). */
  readonly kb: Kb;
  /**
   * A cluster daemon's KB stopped and a new one is being built (docs/cluster.md, "A deposed
   * writer rejoins"): until `swap`, writes answer 503 `no-writer` with Retry-After, every
   * other route 503 `unavailable`, /health 503 with reason `rejoining: <why>`.
   */
  rejoining(why: string, retryAfterMs: number): void;
  /**
   * Serve `kb` from now on, with a new feed hub and token table. The old hub's streams have
   * ended and its watch tokens are gone: subscribers watch again (or reconnect their stream)
   * with their cursor, on this node or another.
   */
  swap(kb: Kb): Promise<void>;
  /** Listen and return the base URL (port 0 picks a free port). */
  listen(port: number, host: string): Promise<string>;
  /**
   * Graceful close within `shutdownGraceMs`: refuse new requests, answer parked polls,
   * close streams, let in-flight writes commit and answer. The KB stays open (the caller
   * owns it and closes it after).
   */
  close(): Promise<void>;
}

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal;
  }
  interface FastifyContextConfig {
    access?: RouteDef["access"];
    writerOnly?: boolean;
  }
}

/** Build the daemon over `opts.kb`; nothing listens until `listen`. */
export async function createServer(opts: ServerOptions): Promise<KoiniiServer> {
  const limits: DaemonLimits = { ...DEFAULT_DAEMON_LIMITS, ...opts.limits };
  for (const [k, v] of Object.entries(limits)) if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`daemon limit ${k} must be a positive integer, got ${v}`);
  const log = opts.logger ?? pino({ name: "koinii" }, pino.destination(2));
  const version = opts.version ?? packageVersion();
  /** What is built over one KB: a rejoining cluster daemon swaps all of it at once. */
  let cur: { kb: Kb; hub: FeedHub; access: Access; table: RouteDef[]; keys: IdempotencyKeys } | undefined;
  let rejoin: { why: string; retryAfterMs: number } | undefined;
  const metrics = new Metrics(() => cur?.hub, () => cur!.hub.headSeq, () => cur?.kb.store);
  /** The clients that wrote lately: while there are several, no WAL fsync blocks the loop (writers.ts). */
  const writers = new RecentWriters(limits.loneWriterWindowMs);
  const serve = async (kb: Kb) => {
    kb.store.gateInlineFsync?.(() => writers.several());
    const access = await Access.open(kb, { adminToken: opts.adminToken });
    // A follower learns of tokens the writer stores; a failed re-read keeps the tokens it had.
    kb.store.cluster?.onPrincipals(() => void access.reload().catch((err: unknown) => log.warn({ err }, "re-reading the agent tokens failed")));
    const hub = await FeedHub.open(
      kb,
      opts.feed,
      {
        onEvent: () => metrics.events.inc(),
        onLost: (n) => metrics.lost.inc(n),
      },
      { now: opts.now, parseLimits: kb.engine.limits, cursorsMayLead: () => kb.role === "follower" },
    );
    // K12: the KB stopped. Say so once and answer what is parked; the process owner (koinii
    // serve) exits non-zero after in-flight answers, or rebuilds and swaps (a cluster daemon).
    kb.onFailure((f) => {
      log.fatal({ reason: f.reason, err: f.error }, "the store failed: refusing work");
      hub.shutdown();
    });
    const keys = new IdempotencyKeys(kb, limits.idempotencyTtlMs, opts.now ?? Date.now);
    if (kb.role === "writer") await keys.load(); // a follower loads them once promoted (docs/daemon.md D18)
    const table = routes({ kb, hub, access, metrics, version, heartbeatMs: limits.heartbeatMs, now: opts.now ?? Date.now });
    return { kb, hub, access, table, keys };
  };
  cur = await serve(opts.kb);
  const { table, access } = cur; // the first build's routes are registered; handlers call the current build's
  const allowedOrigins = new Set(opts.allowedOrigins ?? []);

  const app = Fastify({
    logger: false, // K: one log line per 5xx, written by the error handler; none per request
    bodyLimit: limits.maxBodyBytes,
    return503OnClosing: false, // answered by our own guard, in the wire's shape
    forceCloseConnections: "idle",
    exposeHeadRoutes: false,
    // A request (headers and body) must arrive within requestTimeoutMs; Node checks open
    // requests every connectionsCheckingInterval, so that interval is a fraction of the bound.
    requestTimeout: limits.requestTimeoutMs,
    http: { headersTimeout: limits.requestTimeoutMs, connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(limits.requestTimeoutMs / 4))) },
    // Refusals made before a route runs, in the wire's shape.
    frameworkErrors: (err, _req, reply) => {
      const w = toWire(new WireError("bad-request", `the URL could not be decoded: ${err.message}`));
      metrics.refusals.inc({ type: w.body.type });
      void (reply as unknown as FastifyReply).code(w.status).send(w.body);
    },
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      if (err.code === "ECONNRESET" || socket.destroyed) return;
      const [type, message]: [WireErrorType, string] =
        err.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? ["request-timeout", `the request was not complete within ${limits.requestTimeoutMs} ms (requestTimeoutMs)`]
          : err.code === "HPE_HEADER_OVERFLOW"
            ? ["headers-too-large", "the request headers are over the limit (16 KiB)"]
            : ["bad-request", "the request could not be parsed as HTTP/1.1"];
      metrics.refusals.inc({ type });
      if (socket.writable) socket.write(rawWireResponse(type, message));
      socket.destroy();
    },
  });
  app.decorateRequest("principal", null as unknown as Principal);
  const lingering = new LingeringCloses(limits.requestTimeoutMs);
  // Strict UTF-8: a body with bytes that are not UTF-8 is refused, never stored with U+FFFD
  // in their place (two different inputs would collapse into one sentex).
  const jsonParser = app.getDefaultJsonParser("error", "error");
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (req, body, done) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      done(new WireError("bad-encoding", "the body is not valid UTF-8"), undefined);
      return;
    }
    jsonParser(req, text, done);
  });
  /** Open mode serves loopback only: a Host that is not a bound name is a rebinding page or a misdirected client. */
  // Read from the socket once it is bound: `server.address()` is a getsockname per call,
  // and this runs on every request (a long poll per subscriber per event).
  let hostNames: ReadonlySet<string> | undefined;
  const hostOk = (host: string | undefined): boolean => {
    if (access.posture !== "open") return true;
    if (hostNames === undefined) {
      const addr = app.server.address();
      if (addr === null || typeof addr === "string") return true; // not listening: app.inject, no socket
      hostNames = boundHostNames(addr.port, addr.address);
    }
    return hostAllowed(host, hostNames);
  };

  let closing = false;

  /**
   * The guards, from the headers alone (order in the header comment). Synchronous: a refusal
   * is thrown, an early answer (/health while rejoining) is sent here; run per request as a
   * callback hook, so a request that passes costs no promise.
   */
  const guard = (req: FastifyRequest, reply: FastifyReply): void => {
    if (!hostOk(req.headers.host)) throw new WireError("misdirected", "this daemon answers only its bound loopback names (127.0.0.1, localhost, [::1] with its port) in the Host header");
    const { kb, access } = cur!;
    if (rejoin && req.routeOptions.url !== "/metrics") {
      const why = `rejoining: ${rejoin.why}`;
      if (req.routeOptions.url === "/health") {
        reply.code(503).send({ ok: false, type: "unavailable", error: `the daemon is ${why}`, reason: why, role: "follower", epoch: 0 });
        return;
      }
      if (req.routeOptions.config.writerOnly) throw new NotWriterError(undefined, rejoin.retryAfterMs);
      throw new WireError("unavailable", `the daemon is ${why}`);
    }
    if (kb.failure && req.routeOptions.url !== "/health" && req.routeOptions.url !== "/metrics") {
      throw new WireError("unavailable", `the daemon stopped: ${kb.failure.reason}`);
    }
    if (closing) throw new WireError("shutting-down", "the daemon is shutting down");
    const origin = req.headers.origin;
    if (origin !== undefined && !originAllowed(origin, req, allowedOrigins)) {
      throw new WireError("cross-origin", "requests from a foreign Origin are refused");
    }
    const need = req.is404 ? "any" : (req.routeOptions.config.access ?? "any");
    if (need !== "none") req.principal = access.authenticate(req.headers.authorization);
    if (need === "admin" && !req.principal.admin) throw new WireError("forbidden", "this route is the admin's");
    // A follower checks nothing more of a write: the writer it is sent to does (docs/cluster.md).
    const cluster = kb.store.cluster;
    if (cluster && cluster.role !== "writer" && req.routeOptions.config.writerOnly) throw new NotWriterError(cluster.writerUrl, cluster.retryAfterMs);
    if (req.method === "POST" && !req.is404) {
      const len = req.headers["content-length"];
      if (len !== undefined && Number(len) > limits.maxBodyBytes) {
        throw new WireError("body-too-large", `the body is ${len} bytes; the limit (maxBodyBytes) is ${limits.maxBodyBytes}`);
      }
      const type = req.headers["content-type"];
      if (type !== "application/json" && (type ?? "").split(";")[0]!.trim().toLowerCase() !== "application/json") throw new WireError("not-json", "send the body as Content-Type: application/json");
    }
  };
  app.addHook("onRequest", (req, reply, done) => {
    if (lingering.closing(req.raw.socket)) {
      // Pipelined behind a refused body on a connection that is closing: never served.
      reply.hijack();
      req.raw.socket.destroy();
      return;
    }
    try {
      guard(req, reply);
    } catch (e) {
      done(e as Error);
      return;
    }
    if (req.routeOptions.config.writerOnly) writers.saw(req.raw.socket);
    if (!reply.sent) done(); // an answer sent by the guard ends the request here
  });

  app.addHook("onResponse", async (req, reply) => {
    metrics.latency.observe({ method: req.method, route: req.routeOptions.url ?? "unmatched", status: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });

  app.setErrorHandler((err, req, reply) => {
    const w = toWire(err);
    if (w.internal) log.error({ err, method: req.method, url: req.url }, "internal error");
    metrics.refusals.inc({ type: w.body.type });
    if (w.body.type === "body-too-large") {
      // The body was refused unread: close, but lingering, so the answer is not lost to a reset.
      reply.header("connection", "close");
      lingering.add(req.raw.socket);
    }
    if (w.writer !== undefined) reply.header("location", w.writer + req.url);
    if (w.retryAfterS !== undefined) reply.header("retry-after", String(w.retryAfterS));
    return reply.code(w.status).send(w.body);
  });

  app.setNotFoundHandler(async (req) => {
    throw new WireError("not-found", `no route ${req.method} ${req.url.split("?")[0]}`);
  });

  for (const [i, def] of table.entries()) {
    app.route({
      method: def.method,
      url: def.url,
      config: { access: def.access, writerOnly: writerOnly(def) },
      handler: async (request, reply) => {
        const key = writerOnly(def) ? idempotencyKey(request.headers[IDEMPOTENCY_HEADER], def.secretAnswer === true) : undefined;
        const body = def.body ? parseOr400(def.body, request.body, "body") : undefined;
        const params = def.params ? parseOr400(def.params, request.params, "path") : undefined;
        const query = def.query ? parseOr400(def.query, request.query, "query") : undefined;
        if (def.body === editBody) checkEntries(body as { add: unknown[]; remove: unknown[] }, limits.maxEditEntries);
        const { kb, table: now, keys: answered } = cur!; // one build: a swap mid-request does not mix two
        checkLengths(body, limits.maxAtomBytes, kb.engine.limits);
        checkLengths(query, limits.maxAtomBytes, kb.engine.limits);
        const ctx = { body, params, query, principal: request.principal, request, reply };
        const handler = now[i]!.handler;
        if (key !== undefined) return answered.answer(reply, request.principal.id, key, requestSha256(request.method, request.url, request.body), async () => handler(ctx));
        const out = def.read ? await readAt(kb, () => handler(ctx)) : await handler(ctx);
        if (reply.sent) return reply;
        return reply.send({ ok: true, ...(out as object) });
      },
    });
  }
  mountMcp(app, opts.mcp); // the MCP front end, a wire client of this daemon (docs/mcp.md)
  app.get("/openapi.json", { config: { access: "any" } }, async () => openApiDocument(table, version));
  app.get("/metrics", { config: { access: "any" } }, async (_req, reply) => {
    reply.header("content-type", metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  void app.register(consoleRoutes); // GET /console: static files only (src/console/serve.ts)

  if (access.posture === "open") log.warn("open mode: no KOINII_ADMIN_TOKEN, every caller is the admin (loopback only)");

  let closed: Promise<void> | undefined;
  return {
    app,
    get hub() {
      return cur!.hub;
    },
    get access() {
      return cur!.access;
    },
    get kb() {
      return cur!.kb;
    },
    rejoining(why, retryAfterMs) {
      rejoin = { why, retryAfterMs };
      cur!.hub.shutdown(); // ends streams, answers parked polls: their owners resume by cursor
    },
    async swap(kb) {
      cur = await serve(kb);
      rejoin = undefined;
    },
    metrics,
    log,
    async listen(port, host) {
      await app.listen({ port, host });
      const addr = app.server.address();
      const real = typeof addr === "object" && addr ? addr.port : port;
      return `http://${host.includes(":") ? `[${host}]` : host}:${real}`;
    },
    close() {
      closed ??= (async () => {
        closing = true;
        lingering.stop(); // a refused body's connection has nothing more to hear
        cur!.hub.shutdown(); // answers parked polls, ends streams
        const cut = setTimeout(() => {
          log.warn({ shutdownGraceMs: limits.shutdownGraceMs }, "graceful close ran out of time: cutting open connections");
          app.server.closeAllConnections();
        }, limits.shutdownGraceMs);
        // Connections busy when close starts (answered polls, ended streams, in-flight writes)
        // turn idle after their answer: close them as they do.
        const idle = setInterval(() => app.server.closeIdleConnections(), 20);
        try {
          await app.close(); // stop accepting; in-flight writes commit and answer
        } finally {
          clearTimeout(cut);
          clearInterval(idle);
        }
      })();
      return closed;
    },
  };
}

/** A read route's answer with the durable seq it reflects (K11). */
async function readAt(kb: Kb, fn: () => unknown): Promise<object> {
  const { value, asOf } = await kb.read(() => {
    const v = fn();
    if (v instanceof Promise) throw new Error("invariant: a read route's handler must be synchronous (it runs at one seq)");
    return v as object;
  });
  return { ...value, asOf };
}

function parseOr400<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } } }, value: unknown, where: string): T {
  const r = schema.safeParse(value ?? (where === "body" ? undefined : {}));
  if (r.success) return r.data;
  const detail = r.error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.map(String).join(".") : where}: ${i.message}`)
    .join("; ");
  throw new WireError("bad-request", `the ${where} does not fit the route's schema: ${detail}`);
}

/** An edit's adds and removes, counted before the engine sees them. */
function checkEntries(body: { add: unknown[]; remove: unknown[] }, max: number): void {
  const n = body.add.length + body.remove.length;
  if (n > max) throw new WireError("edit-too-large", `the edit has ${n} entries; the limit (maxEditEntries) is ${max}`);
}

/**
 * Every name in a parsed request (a string field) is at most `maxBytes` UTF-8 bytes, and so
 * is every atom of a sentence field. A sentence that does not parse is left to the engine,
 * which refuses it with its own type. Iterative: a field the schema leaves open (`from`,
 * `cursor`) may nest as deep as the body limit allows.
 */
function checkLengths(root: unknown, maxBytes: number, parseLimits: terms.ParseLimits): void {
  // Strings are checked where they are met; only objects and arrays wait on the stack, so a
  // flat body (an assert's) pushes no pair per field.
  const stack: [object, string][] = [];
  const check = (value: unknown, key: string): void => {
    if (typeof value === "string") {
      if (value.length <= maxBytes / 3) return; // cannot be over: 3 UTF-8 bytes per UTF-16 unit at most
      if (SENTENCE_FIELDS.has(key)) checkAtoms(value, key, maxBytes, parseLimits);
      else if (Buffer.byteLength(value) > maxBytes) throw new WireError("too-long", `${key || "a value"} is ${Buffer.byteLength(value)} bytes; the limit (maxAtomBytes) is ${maxBytes}`);
    } else if (value !== null && typeof value === "object") stack.push([value, key]);
  };
  check(root, "");
  while (stack.length) {
    const [value, key] = stack.pop()!;
    if (Array.isArray(value)) for (const v of value) check(v, key);
    else for (const k in value) if (Object.hasOwn(value, k)) check((value as Record<string, unknown>)[k], k);
  }
}

function checkAtoms(sentence: string, key: string, maxBytes: number, parseLimits: terms.ParseLimits): void {
  let term: terms.Term;
  try {
    term = terms.parseTerm(sentence, parseLimits);
  } catch {
    return;
  }
  const stack: terms.Term[] = [term];
  while (stack.length) {
    const t = stack.pop()!;
    if (terms.isList(t)) stack.push(...t);
    else if (Buffer.byteLength(t) > maxBytes) throw new WireError("too-long", `${key} has an atom of ${Buffer.byteLength(t)} bytes; the limit (maxAtomBytes) is ${maxBytes}`);
  }
}

/**
 * An Origin is allowed when listed, or when it is the daemon's own origin on a loopback
 * name: its host equals the Host header and that host is loopback. A rebinding page
 * (Host evil.example resolving to 127.0.0.1) has a non-loopback Host, so it is refused.
 */
function originAllowed(origin: string, req: FastifyRequest, allowed: ReadonlySet<string>): boolean {
  if (allowed.has(origin)) return true;
  const host = req.headers.host ?? "";
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return (url.protocol === "http:" || url.protocol === "https:") && url.host === host.toLowerCase() && isLoopbackAuthority(host);
}
