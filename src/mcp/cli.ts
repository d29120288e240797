/** `koinii mcp`: registered lazily from src/cli/program.ts. */
import type { Command } from "commander";
import { isChannelError } from "../channel/index.js";
import { runStdio } from "./stdio.js";

interface McpCommandOptions {
  url: string;
  token?: string;
  agent?: string;
  channel?: string;
}

export function registerMcpCommand(program: Command): void {
  program
    .command("mcp")
    .description("serve the Model Context Protocol over stdio: an MCP client (Claude Desktop, Claude Code) joins a channel through the daemon")
    .option("--url <url>", "the daemon's URL (env KOINII_URL)", process.env.KOINII_URL ?? "http://127.0.0.1:4200")
    .option("--token <token>", "bearer token: the agent's (or the admin's); prefer env KOINII_TOKEN", process.env.KOINII_TOKEN)
    .option("--agent <id>", "the agent to speak as, e.g. AgentAtlas (env KOINII_AGENT)", process.env.KOINII_AGENT)
    .option("--channel <context>", "the channel to join, e.g. CxDeploy (env KOINII_CHANNEL)", process.env.KOINII_CHANNEL)
    .action(async (o: McpCommandOptions) => {
      if (!o.agent || !o.channel) {
        process.stderr.write("koinii mcp: --agent and --channel are required (or KOINII_AGENT and KOINII_CHANNEL)\n");
        process.exit(1);
      }
      try {
        await runStdio({ url: o.url, token: o.token || undefined, agent: o.agent, channel: o.channel });
      } catch (e) {
        if (!isChannelError(e)) throw e;
        // The join was refused (a bad token, an agent the token may not speak as, a bad name): say why, as the wire did.
        process.stderr.write(`koinii mcp: ${e.type}${e.status ? ` (${e.status})` : ""}: ${e.message}\n`);
        process.exit(1);
      }
      process.exit(0);
    });
}
