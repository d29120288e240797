/**
 * Resources: the session's channel (its open queries), a sentex by handle, the believed
 * sentences matching a goal in a context, and the same view as a subscribable watch. Every
 * read goes over the session's wire connection; a refusal is an MCP error whose `data` is
 * the wire's error body.
 *
 *   koinii://channel                       the channel, the agent, the unanswered queries
 *   koinii://sentex/{handle}               one sentex (sentence, context, creator, ...)
 *   koinii://believed/{context}/{goal}     believed sentexes matching goal in context's cone
 *   koinii://watch/{context}/{goal}        the same, subscribable: notifications/resources/updated
 *
 * `goal` is a sentence, percent-encoded (encodeURIComponent) in the URI.
 */
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ErrorCode, McpError, SubscribeRequestSchema, UnsubscribeRequestSchema, type ReadResourceResult } from "@modelcontextprotocol/sdk/types.js";
import { isChannelError, openQueries, snapshot } from "../channel/index.js";
import type { AgentSession } from "./session.js";
import type { Watches } from "./watch.js";

const JSON_TYPE = "application/json";

const json = (uri: URL | string, value: unknown): ReadResourceResult => ({ contents: [{ uri: String(uri), mimeType: JSON_TYPE, text: JSON.stringify(value) }] });

/** A channel refusal as an MCP error carrying the wire's body; anything else is rethrown. */
export function asMcpError(e: unknown): unknown {
  if (!isChannelError(e)) return e;
  return new McpError(ErrorCode.InvalidParams, `${e.type}: ${e.message}`, { ok: false, type: e.type, error: e.message, status: e.status, problems: e.problems, ...e.details });
}

async function guarded<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw asMcpError(e);
  }
}

/** The {context, goal} a watch or believed URI names (the goal percent-decoded). */
export function parseViewUri(uri: string, kind: "watch" | "believed"): { context: string; goal: string } {
  const m = new RegExp(`^koinii://${kind}/([^/]+)/([^/]+)$`).exec(uri);
  if (!m) throw new McpError(ErrorCode.InvalidParams, `not a ${kind} URI: ${uri} (koinii://${kind}/{context}/{goal}, goal percent-encoded)`);
  try {
    return { context: decodeURIComponent(m[1]!), goal: decodeURIComponent(m[2]!) };
  } catch {
    throw new McpError(ErrorCode.InvalidParams, `the goal in ${uri} is not valid percent-encoding`);
  }
}

/** `koinii://watch/{context}/{goal}` for a goal in plain text. */
export const watchUri = (context: string, goal: string): string => `koinii://watch/${encodeURIComponent(context)}/${encodeURIComponent(goal)}`;

const entries = (view: Map<number, string>) => [...view].map(([handle, sentence]) => ({ handle, sentence })).sort((a, b) => a.handle - b.handle);

export function registerResources(server: McpServer, session: AgentSession, watches: Watches): void {
  server.registerResource(
    "channel",
    "koinii://channel",
    { title: "The channel", description: "The channel this session speaks on, the agent it speaks as, and the questions still unanswered.", mimeType: JSON_TYPE },
    async (uri) =>
      guarded(async () => {
        const queries = (await openQueries(session.handle, { unanswered: true })).map(({ sentex: _sx, ...q }) => q);
        return json(uri, { channel: session.channel, agent: session.agent, context: session.handle.context, unanswered: queries });
      }),
  );

  server.registerResource(
    "sentex",
    new ResourceTemplate("koinii://sentex/{handle}", { list: undefined }),
    { title: "A sentex by handle", description: "One stored sentence with its handle, context, creator (who said it) and strength. Cite claims by this handle.", mimeType: JSON_TYPE },
    async (uri, vars) =>
      guarded(async () => {
        const h = String(vars.handle);
        if (!/^[1-9][0-9]{0,15}$/.test(h)) throw new McpError(ErrorCode.InvalidParams, `a handle is a positive whole number, got ${JSON.stringify(h)}`);
        return json(uri, await session.medium.sentex(Number(h)));
      }),
  );

  server.registerResource(
    "believed",
    new ResourceTemplate("koinii://believed/{context}/{goal}", { list: undefined }),
    { title: "Believed sentences", description: "The believed sentexes matching goal (percent-encoded) that context sees, each with its handle.", mimeType: JSON_TYPE },
    async (uri) =>
      guarded(async () => {
        const { context, goal } = parseViewUri(uri.href, "believed");
        return json(uri, { context, goal, sentences: entries(await snapshot(session.handle, goal, context)) });
      }),
  );

  server.registerResource(
    "watch",
    new ResourceTemplate("koinii://watch/{context}/{goal}", { list: undefined }),
    {
      title: "A watch",
      description:
        "Like believed, but subscribable: subscribe and the server sends notifications/resources/updated whenever the view changes; a read answers the whole view plus the changes since your previous read.",
      mimeType: JSON_TYPE,
    },
    async (uri) =>
      guarded(async () => {
        const state = watches.read(uri.href);
        if (state) return json(uri, state);
        const { context, goal } = parseViewUri(uri.href, "watch");
        return json(uri, { context, goal, subscribed: false, sentences: entries(await snapshot(session.handle, goal, context)) });
      }),
  );

  server.server.registerCapabilities({ resources: { subscribe: true, listChanged: true } });
  server.server.setRequestHandler(SubscribeRequestSchema, async (req) =>
    guarded(async () => {
      const { context, goal } = parseViewUri(req.params.uri, "watch");
      await watches.subscribe(req.params.uri, context, goal);
      return {};
    }),
  );
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
    await watches.unsubscribe(req.params.uri);
    return {};
  });
}
