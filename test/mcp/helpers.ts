/**
 * The MCP front end's behaviours, written once and run against both mounts by
 * stdio.test.ts (`koinii mcp` as a separate process) and http.test.ts (`/mcp` on the
 * daemon), with the SDK's own Client. A real daemon (spawned from dist/ with an admin token)
 * and two agents: AgentAtlas speaks through MCP, AgentBoreas over the wire with the channel
 * library.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ResourceUpdatedNotificationSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { spawnDaemon, call, type Daemon } from "../daemon/helpers.js";
import * as ch from "../../src/channel/index.js";

export const ADMIN = "admin-secret-token-mcp-0123456789";
export const CHANNEL = "CxDeploy";

export const TOOL_NAMES = ["answer", "assert", "claim", "dispute", "edit", "endorse", "match", "openQueries", "poseQuery", "query", "release", "retract", "vote", "why"];

export interface World {
  d: Daemon;
  atlasToken: string;
  boreasToken: string;
  /** AgentBoreas on the channel over the wire. */
  boreas: ch.AgentHandle;
}

export async function startWorld(daemon: { args?: string[]; dataDir?: string } = {}): Promise<World> {
  const d = await spawnDaemon({ env: { KOINII_ADMIN_TOKEN: ADMIN }, ...daemon });
  const reg = async (id: string) => (await call(d.url, "POST", "/v1/agents", { id }, { token: ADMIN })).body.token as string;
  const atlasToken = await reg("AgentAtlas");
  const boreasToken = await reg("AgentBoreas");
  const boreas = await ch.join(ch.wire({ url: d.url, token: boreasToken }), CHANNEL, "AgentBoreas");
  return { d, atlasToken, boreasToken, boreas };
}

export async function stopWorld(w: World): Promise<void> {
  await w.boreas.medium.close();
  await w.d.stop();
}

export const headSeq = async (url: string): Promise<number> => (await call(url, "GET", "/health")).body.seq as number;

/** Call a tool; answers its structured content and whether it is a tool error. */
export async function tool(c: Client, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; body: Record<string, unknown>; text: string }> {
  const r = (await c.callTool({ name, arguments: args })) as CallToolResult;
  const text = r.content.map((p) => (p.type === "text" ? p.text : "")).join("");
  return { isError: r.isError === true, body: (r.structuredContent ?? {}) as Record<string, unknown>, text };
}

export const watchUri = (context: string, goal: string): string => `koinii://watch/${encodeURIComponent(context)}/${encodeURIComponent(goal)}`;

/** Resolves with the next resources/updated notification for `uri`. */
export function nextUpdate(c: Client, uri: string): Promise<void> {
  return new Promise((resolve) => {
    c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      if (n.params.uri === uri) resolve();
    });
  });
}

export async function readJson(c: Client, uri: string): Promise<Record<string, any>> {
  const r = await c.readResource({ uri });
  const first = r.contents[0] as { text: string };
  return JSON.parse(first.text) as Record<string, any>;
}

/** Connect an MCP client as AgentAtlas (token given) on the world's daemon. */
export type Connect = (w: World, token: string) => Promise<Client>;

/** The front end's behaviours, against one mount. */
export function describeFrontEnd(mount: string, connect: Connect): void {
  describe(`MCP front end over ${mount}`, () => {
    let w: World;
    let c: Client;
    beforeAll(async () => {
      w = await startWorld();
      c = await connect(w, w.atlasToken);
    });
    afterAll(async () => {
      await c?.close();
      await stopWorld(w);
    });

    it("lists the tools, the resources and templates, and the join-channel prompt naming every tool", async () => {
      const tools = (await c.listTools()).tools;
      expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES);
      for (const t of tools) {
        expect(t.description!.length).toBeGreaterThan(40);
        expect(t.inputSchema.type).toBe("object");
      }
      expect((await c.listResources()).resources.map((r) => r.uri)).toEqual(["koinii://channel"]);
      expect((await c.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate).sort()).toEqual([
        "koinii://believed/{context}/{goal}",
        "koinii://sentex/{handle}",
        "koinii://watch/{context}/{goal}",
      ]);
      const prompt = await c.getPrompt({ name: "join-channel" });
      const text = (prompt.messages[0]!.content as { text: string }).text;
      expect(text).toContain("AgentAtlas");
      expect(text).toContain(CHANNEL);
      expect(text).toContain("(sentexHandle 42)");
      for (const name of TOOL_NAMES) expect(text).toContain(`- ${name}: `);
    });

    it("a move made through MCP is seen by a channel agent over the wire, and the reverse", async () => {
      const q = await tool(c, "poseQuery", { question: "(whichDatabase ProdCluster)" });
      expect(q.isError).toBe(false);
      const qh = q.body.handle as number;
      // Boreas, over the wire, sees Atlas's query on the channel, signed by Atlas.
      const seen = (await ch.openQueries(w.boreas, { unanswered: true })).find((x) => x.handle === qh);
      expect(seen).toMatchObject({ agent: "AgentAtlas", question: "(whichDatabase ProdCluster)", answers: 0 });
      expect((await w.boreas.medium.sentex(qh)).creator).toBe("AgentAtlas");
      // Boreas answers over the wire; Atlas sees the answer through MCP (tool and resource).
      const ah = await ch.answer(w.boreas, ch.str("Postgres 16"), qh);
      const open = await tool(c, "openQueries", { unanswered: false });
      expect((open.body.queries as { handle: number; answers: number }[]).find((x) => x.handle === qh)?.answers).toBe(1);
      const answers = await tool(c, "match", { sentence: `(answers ?a ?c (sentexHandle ${qh}))` });
      expect(answers.body.sentexes).toEqual([expect.objectContaining({ handle: ah, creator: "AgentBoreas", context: "CxBoreas" })]);
      expect(await readJson(c, `koinii://sentex/${ah}`)).toMatchObject({ handle: ah, creator: "AgentBoreas" });
      // Atlas endorses Boreas's answer through MCP; Boreas sees it over the wire.
      const e = await tool(c, "endorse", { target: ah });
      expect((await ch.endorsementsOf(w.boreas, ah)).map((s) => [s.handle, s.creator])).toEqual([[e.body.handle, "AgentAtlas"]]);
      // The query tool sees through the channel's cone.
      const sol = await tool(c, "query", { goal: `(answers ?who ?what (sentexHandle ${qh}))` });
      expect(sol.body.solutions).toEqual([{ "?who": "AgentBoreas", "?what": '"Postgres 16"' }]);
    });

    it("dispute, vote and why through MCP write and read the channel's shapes; the channel and believed resources answer", async () => {
      const t = await ch.assert(w.boreas, "(regionOf ProdCluster EuWest)");
      const d = await tool(c, "dispute", { target: t });
      const v = await tool(c, "vote", { target: t, stance: "against" });
      expect([d.isError, v.isError]).toEqual([false, false]);
      expect((await w.boreas.medium.match(`(disputes AgentAtlas (sentexHandle ${t}))`, "CxAtlas")).map((s) => s.handle)).toEqual([d.body.handle]);
      expect((await w.boreas.medium.match("(not (regionOf ProdCluster EuWest))", "CxAtlas")).map((s) => s.creator)).toEqual(["AgentAtlas"]);
      expect((await w.boreas.medium.match(`(votesAgainst AgentAtlas (sentexHandle ${t}))`, "CxAtlas")).map((s) => s.handle)).toEqual([v.body.handle]);
      expect((await tool(c, "why", { handle: t })).body).toMatchObject({ premise: true });
      const chan = await readJson(c, "koinii://channel");
      expect(chan).toMatchObject({ channel: CHANNEL, agent: "AgentAtlas", context: "CxAtlas" });
      const believed = await readJson(c, `koinii://believed/${CHANNEL}/${encodeURIComponent("(regionOf ProdCluster ?r)")}`);
      expect(believed.sentences.map((e: { handle: number }) => e.handle)).toContain(t);
    });

    it("a subscribed watch is updated when another agent writes, and a read answers the change", async () => {
      const uri = watchUri(CHANNEL, "(queries ?agent ?question)");
      await c.subscribeResource({ uri });
      const before = await readJson(c, uri);
      expect(before).toMatchObject({ subscribed: true, changes: { added: [], removed: [] } });
      const updated = nextUpdate(c, uri);
      const qh = await ch.poseQuery(w.boreas, "(whoOwns ProdCluster)");
      await updated;
      const after = await readJson(c, uri);
      expect(after.changes.added).toEqual([{ handle: qh, sentence: "(queries AgentBoreas (whoOwns ProdCluster))" }]);
      expect(after.sentences).toContainEqual({ handle: qh, sentence: "(queries AgentBoreas (whoOwns ProdCluster))" });
      expect(after.cursor).toBeGreaterThan(before.cursor);
      // A retraction leaves the view, reported as removed.
      const gone = nextUpdate(c, uri);
      await ch.retract(w.boreas, qh);
      await gone;
      const last = await readJson(c, uri);
      expect(last.changes.removed).toEqual([{ handle: qh, sentence: "(queries AgentBoreas (whoOwns ProdCluster))" }]);
      await c.unsubscribeResource({ uri });
      expect((await readJson(c, uri)).subscribed).toBe(false);
    });

    it("an agent's token cannot write another agent's context: the same 403 type as the wire, and nothing changes", async () => {
      const theirs = await ch.assert(w.boreas, "(ownerOf ProdCluster TeamBoreas)");
      const wireAnswer = await call(w.d.url, "POST", "/v1/assert", { sentence: "(ownerOf ProdCluster TeamAtlas)", context: "CxBoreas" }, { token: w.atlasToken });
      expect(wireAnswer.status).toBe(403);
      const seq = await headSeq(w.d.url);
      const edit = await tool(c, "edit", { add: [{ sentence: "(ownerOf ProdCluster TeamAtlas)", context: "CxBoreas" }] });
      expect(edit.isError).toBe(true);
      expect(edit.body).toMatchObject({ ok: false, type: wireAnswer.body.type, status: 403, own: "CxAtlas" });
      expect(edit.text.startsWith("foreign-context: ")).toBe(true);
      const retract = await tool(c, "retract", { handle: theirs });
      expect(retract).toMatchObject({ isError: true, body: { type: "foreign-context", status: 403 } });
      expect(await headSeq(w.d.url)).toBe(seq);
      expect((await w.boreas.medium.sentex(theirs)).sentence).toBe("(ownerOf ProdCluster TeamBoreas)");
    });

    it("a malformed tool call gets a tool error and changes nothing (head seq unchanged)", async () => {
      const seq = await headSeq(w.d.url);
      const calls: [string, Record<string, unknown>, string | undefined][] = [
        ["assert", { sentence: 42 }, undefined], // fails the tool's input schema
        ["vote", { target: 1, stance: "maybe" }, undefined],
        ["edit", { add: [{ sentence: "(dog Rex)" }], remove: [-3] }, undefined],
        ["assert", { sentence: "(usesDatabase ProdCluster" }, "parse-error"], // refused by the daemon
        ["assert", { sentence: "(usesDatabase ProdCluster ?db)" }, "not-ground"],
        ["edit", { add: [{ sentence: "(dog Rex)" }, { sentence: "(dog" }] }, "inadmissible"], // atomic: the good half does not land
        ["answer", { query: 999_999, content: "Yes" }, "dangling-target"],
      ];
      for (const [name, args, type] of calls) {
        const r = await tool(c, name, args);
        expect(r.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
        if (type) expect(r.body.type, `${name} ${JSON.stringify(args)}`).toBe(type);
      }
      expect(await headSeq(w.d.url)).toBe(seq);
      expect((await tool(c, "match", { sentence: "(dog ?x)" })).body.sentexes).toEqual([]);
    });

    it("claim takes a query for a lease; another agent's live lease refuses it with type claimed", async () => {
      const qh = await ch.poseQuery(w.boreas, "(whichRegion ProdCluster)");
      const mine = await tool(c, "claim", { query: qh, leaseMs: 60_000 });
      expect(mine).toMatchObject({ isError: false, body: { holder: "AgentAtlas" } });
      await expect(ch.claim(w.boreas, qh, { leaseMs: 60_000 })).rejects.toMatchObject({ type: "claimed" });
      expect((await tool(c, "release", { query: qh })).body.released).toBe(1);
      await ch.claim(w.boreas, qh, { leaseMs: 60_000 });
      expect(await tool(c, "claim", { query: qh, leaseMs: 60_000 })).toMatchObject({ isError: true, body: { type: "claimed", status: 409 } });
    });
  });
}
