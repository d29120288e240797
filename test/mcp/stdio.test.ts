/** `koinii mcp` as a separate process (the SDK's StdioClientTransport) against a real daemon. */
import { describe, it, expect } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { MAIN, spawnDaemon } from "../daemon/helpers.js";
import * as ch from "../../src/channel/index.js";
import { describeFrontEnd, startWorld, stopWorld, headSeq, nextUpdate, readJson, watchUri, CHANNEL, ADMIN, type World } from "./helpers.js";

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
      const seq = await headSeq(w.d.url);
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
      expect(err).toContain("foreign-context (403)");
      expect(await headSeq(w.d.url)).toBe(seq);
    } finally {
      await stopWorld(w);
    }
  });
});

describe("koinii mcp: a watch across a daemon restart", () => {
  it("resumes from its server-side cursor after the daemon restarts: every change made since is reported, nothing lost", async () => {
    const w = await startWorld();
    const c = await connectStdio(w, w.atlasToken);
    let d2: Awaited<ReturnType<typeof spawnDaemon>> | undefined;
    try {
      const uri = watchUri(CHANNEL, "(queries ?agent ?question)");
      await c.subscribeResource({ uri });
      let updated = nextUpdate(c, uri);
      const q1 = await ch.poseQuery(w.boreas, "(whichDatabase ProdCluster)");
      await updated;
      expect((await readJson(c, uri)).changes.added.map((e: { handle: number }) => e.handle)).toEqual([q1]);

      // The daemon goes away (its parked polls answered shutting-down, then connections refused) and comes back on the same port and store.
      await w.d.stop();
      d2 = await spawnDaemon({ env: { KOINII_ADMIN_TOKEN: ADMIN }, dataDir: w.d.dataDir, args: ["--port", String(w.d.port)] });
      const boreas = await ch.join(ch.wire({ url: d2.url, token: w.boreasToken }), CHANNEL, "AgentBoreas");
      updated = nextUpdate(c, uri);
      const q2 = await ch.poseQuery(boreas, "(whoOwns ProdCluster)");
      const q3 = await ch.poseQuery(boreas, "(whichRegion ProdCluster)");
      await updated;
      // One update may fold q2 alone; read until both have been reported, with nothing lost between reads.
      const seen: number[] = [];
      let state = await readJson(c, uri);
      seen.push(...state.changes.added.map((e: { handle: number }) => e.handle));
      while (!seen.includes(q3)) {
        const again = nextUpdate(c, uri);
        state = await readJson(c, uri);
        seen.push(...state.changes.added.map((e: { handle: number }) => e.handle));
        if (!seen.includes(q3)) await again;
      }
      expect(seen.sort((a, b) => a - b)).toEqual([q2, q3]);
      expect(state.sentences.map((e: { handle: number }) => e.handle)).toEqual([q1, q2, q3]);
      expect(state.error).toBeUndefined();
      await boreas.medium.close();
    } finally {
      await c.close();
      await w.boreas.medium.close();
      await d2?.stop();
    }
  });
});
