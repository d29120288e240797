/**
 * `koinii mcp`: the MCP server over stdio (stdout carries the protocol only; diagnostics go
 * to stderr). It ends when the client closes stdin, or on SIGTERM/SIGINT.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { wire } from "../channel/index.js";
import { openMcpServer } from "./server.js";

export interface StdioOptions {
  url: string;
  token?: string;
  agent: string;
  channel: string;
}

/** Serve MCP on this process's stdin/stdout; resolves once the session has ended. */
export async function runStdio(opts: StdioOptions): Promise<void> {
  const medium = wire({ url: opts.url, token: opts.token });
  const k = await openMcpServer({ medium, agent: opts.agent, channel: opts.channel }).catch(async (e: unknown) => {
    await medium.close();
    throw e;
  });
  const transport = new StdioServerTransport();
  const ended = new Promise<void>((resolve) => {
    const end = () => void k.close().then(resolve, (e: unknown) => (process.stderr.write(`koinii mcp: ${String(e)}\n`), resolve()));
    transport.onclose = end;
    process.stdin.once("end", end);
    process.once("SIGTERM", end);
    process.once("SIGINT", end);
  });
  await k.mcp.connect(transport);
  await ended;
}
