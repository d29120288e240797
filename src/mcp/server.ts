/**
 * The koinii MCP server: one McpServer per MCP session, speaking to the daemon through the
 * channel library over one wire connection whose token is the session's identity. The same
 * builder serves `koinii mcp` (stdio) and the daemon's `/mcp` mount (Streamable HTTP).
 *
 *   const k = await openMcpServer({ medium: wire({ url, token }), agent: "AgentAtlas", channel: "CxDeploy" });
 *   await k.mcp.connect(new StdioServerTransport());
 *   // ... later: await k.close();
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { WireMedium } from "../channel/index.js";
import { packageVersion } from "../daemon/package.js";
import { openSession, type AgentSession } from "./session.js";
import { registerTools } from "./tools.js";
import { registerResources } from "./resources.js";
import { registerPrompts } from "./prompts.js";
import { Watches, type WatchLimits } from "./watch.js";

export interface McpServerOptions {
  /** The wire connection; its token decides what every tool may do. */
  medium: WireMedium;
  /** The agent the session speaks as (an agent token's own id; the admin names anyone). */
  agent: string;
  /** The channel the session joins. */
  channel: string;
  watch?: Partial<WatchLimits>;
}

export interface KoiniiMcp {
  mcp: McpServer;
  session: AgentSession;
  watches: Watches;
  /** Stop the watches, close the MCP server and the wire connection (idempotent). */
  close(): Promise<void>;
}

const version = packageVersion;

/** Join the channel (refusals are ChannelErrors with the wire's type), then build the server. */
export async function openMcpServer(opts: McpServerOptions): Promise<KoiniiMcp> {
  const session = await openSession(opts.medium, opts.agent, opts.channel);
  const mcp = new McpServer(
    { name: "koinii", title: "koinii channel", version: version() },
    { instructions: `koinii channel ${opts.channel}, speaking as ${opts.agent}. Read the join-channel prompt first; cite claims by handle.` },
  );
  const watches = new Watches(session, (uri) => mcp.server.sendResourceUpdated({ uri }), opts.watch);
  registerTools(mcp, session);
  registerResources(mcp, session, watches);
  registerPrompts(mcp, session);
  let closed: Promise<void> | undefined;
  return {
    mcp,
    session,
    watches,
    close() {
      closed ??= (async () => {
        await watches.closeAll();
        await mcp.close();
        await opts.medium.close();
      })();
      return closed;
    },
  };
}
