/**
 * The MCP server mounted on the daemon at `/mcp` (Streamable HTTP, one MCP session per
 * `initialize`). The route sits behind the daemon's own guards (origin, bearer token, body
 * size, JSON), and each session speaks to its own daemon as a wire client on loopback with
 * the caller's bearer token: every move and read is a wire request made with the caller's
 * token, so every refusal is the wire's own (docs/mcp.md M1).
 *
 * The session belongs to the principal that opened it: a request naming the session with
 * another token is refused `forbidden`. The first request names the agent and channel in the
 * query string, `/mcp?channel=CxDeploy` (an agent token speaks as its own agent) or
 * `/mcp?channel=CxDeploy&agent=AgentAtlas` (the admin, or anyone in open mode).
 */
import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { wire, isChannelError } from "../channel/index.js";
import { WireError, WIRE_ERROR_STATUS, type WireErrorType } from "../daemon/errors.js";
import { openMcpServer, type KoiniiMcp } from "./server.js";
import type { WatchLimits } from "./watch.js";

/** Every bound of the mount, each with its unit in its name. */
export interface McpHttpLimits {
  /** Open MCP sessions at once; one more `initialize` is refused `too-many-sessions`. */
  maxSessions: number;
  /** A session with no open request or stream for this long is closed (its client went away without DELETE). */
  idleSessionMs: number;
  watch?: Partial<WatchLimits>;
}

export const DEFAULT_MCP_HTTP_LIMITS: McpHttpLimits = { maxSessions: 64, idleSessionMs: 300_000 };

interface HttpSession {
  principal: string;
  transport: StreamableHTTPServerTransport;
  koinii: KoiniiMcp;
  /** Requests and SSE streams of this session still open. */
  open: number;
  /** When the last one ended (epoch ms). */
  lastSeen: number;
}

/** The daemon's own address as seen from inside it: a wildcard bind is reached on loopback. */
function selfUrl(app: FastifyInstance): string {
  const a = app.server.address();
  if (!a || typeof a !== "object") throw new WireError("internal-error", "the daemon is not listening on TCP");
  const host = a.address === "0.0.0.0" ? "127.0.0.1" : a.address === "::" ? "::1" : a.address;
  return `http://${host.includes(":") ? `[${host}]` : host}:${a.port}`;
}

const bearerOf = (header: string | undefined): string | undefined => (typeof header === "string" ? /^Bearer ([^\s]+)$/i.exec(header.trim())?.[1] : undefined);

const one = (v: unknown): string | undefined => (typeof v === "string" && v.length > 0 ? v : undefined);

/** The join's refusal (naming, foreign-context, ...) answered as the wire answered it. */
function asWireError(e: unknown): unknown {
  if (!isChannelError(e)) return e;
  const type = (e.type in WIRE_ERROR_STATUS ? e.type : "internal-error") as WireErrorType;
  return new WireError(type, e.message, { ...e.details, ...(e.problems ? { problems: e.problems } : {}) });
}

export function mountMcp(app: FastifyInstance, limits: Partial<McpHttpLimits> = {}): void {
  const { maxSessions, idleSessionMs, watch } = { ...DEFAULT_MCP_HTTP_LIMITS, ...limits };
  for (const [k, v] of Object.entries({ maxSessions, idleSessionMs })) if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`mcp limit ${k} must be a positive integer, got ${v}`);
  const sessions = new Map<string, HttpSession>();
  const reaper = setInterval(
    () => {
      const now = Date.now();
      for (const [id, s] of sessions) {
        if (s.open > 0 || now - s.lastSeen <= idleSessionMs) continue;
        sessions.delete(id);
        void s.koinii.close();
      }
    },
    Math.max(10, Math.min(idleSessionMs / 4, 60_000)),
  );
  reaper.unref();

  const open = async (principal: string, token: string | undefined, agent: string, channel: string): Promise<HttpSession> => {
    const medium = wire({ url: selfUrl(app), token });
    let koinii: KoiniiMcp;
    try {
      koinii = await openMcpServer({ medium, agent, channel, watch });
    } catch (e) {
      await medium.close();
      throw asWireError(e);
    }
    const s: HttpSession = {
      principal,
      koinii,
      open: 0,
      lastSeen: Date.now(),
      transport: new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (id) => void sessions.set(id, s) }),
    };
    s.transport.onclose = () => {
      if (s.transport.sessionId) sessions.delete(s.transport.sessionId);
      void koinii.close();
    };
    await koinii.mcp.connect(s.transport);
    return s;
  };

  app.route({
    method: ["GET", "POST", "DELETE"],
    url: "/mcp",
    config: { access: "any" },
    async handler(req, reply) {
      const id = req.headers["mcp-session-id"];
      let s: HttpSession;
      if (typeof id === "string") {
        const found = sessions.get(id);
        if (!found) throw new WireError("not-found", `no MCP session ${id}: it ended or the daemon restarted; initialize a new one`);
        if (found.principal !== req.principal.id) throw new WireError("forbidden", "this MCP session belongs to another principal");
        s = found;
      } else {
        if (req.method !== "POST" || !isInitializeRequest(req.body)) throw new WireError("bad-request", "a request without mcp-session-id must be an initialize POST");
        if (sessions.size >= maxSessions) throw new WireError("too-many-sessions", `${sessions.size} MCP sessions are open, the ceiling (maxSessions ${maxSessions}); close one (DELETE /mcp) first`);
        const q = req.query as Record<string, unknown>;
        const agent = req.principal.admin ? one(q.agent) : (one(q.agent) ?? req.principal.id);
        const channel = one(q.channel);
        if (!agent || !channel) throw new WireError("bad-request", "name the channel (and, for the admin, the agent) in the query string: /mcp?channel=CxDeploy&agent=AgentAtlas");
        s = await open(req.principal.id, bearerOf(req.headers.authorization), agent, channel);
      }
      s.open++;
      reply.raw.once("close", () => {
        s.open--;
        s.lastSeen = Date.now();
      });
      reply.hijack();
      await s.transport.handleRequest(req.raw, reply.raw, req.body);
    },
  });

  // Before the daemon stops accepting: end every session (its SSE streams and watches).
  app.addHook("preClose", async () => {
    clearInterval(reaper);
    await Promise.all([...sessions.values()].map((s) => s.koinii.close()));
    sessions.clear();
  });
}
