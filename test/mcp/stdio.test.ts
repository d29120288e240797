/** `koinii mcp` as a separate process (the SDK's StdioClientTransport) against a real daemon. */
import { describe, it, expect } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { MAIN } from "../daemon/helpers.js";
import { describeFrontEnd, startWorld, stopWorld, CHANNEL, type World } from "./helpers.js";

async function connectStdio(w: World, token: string, agent = "AgentAtlas"): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, "mcp", "--agent", agent, "--channel", CHANNEL],
    env: { ...(process.env as Record<string, string>), KOINII_URL: w.d.url, KOINII_TOKEN: token },
    stderr: "pipe",
  });
  const client = new Client({ name: "koinii-test", version: "0.0.0" });
  await client.connect(transport);
  return client;
}

describeFrontEnd("stdio (koinii mcp)", (w, token) => connectStdio(w, token));

describe("koinii mcp: start-up", () => {
  it("a token that cannot speak as the agent is refused at start with the wire's type, and nothing is written", async () => {
    const w = await startWorld();
    try {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [MAIN, "mcp", "--url", w.d.url, "--agent", "AgentBoreas", "--channel", CHANNEL],
        env: { ...(process.env as Record<string, string>), KOINII_TOKEN: w.atlasToken },
        stderr: "pipe",
      });
      let err = "";
      transport.stderr!.on("data", (b: Buffer) => (err += b.toString()));
      const client = new Client({ name: "koinii-test", version: "0.0.0" });
      await expect(client.connect(transport)).rejects.toThrow();
      await new Promise((r) => setTimeout(r, 50)); // let the child's last stderr bytes arrive
      expect(err).toContain("foreign-context");
    } finally {
      await stopWorld(w);
    }
  });
});
