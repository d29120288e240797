/** `/mcp` on a real daemon (the SDK's StreamableHTTPClientTransport), behind the wire's access rules. */
import { describe, it, expect } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { call } from "../daemon/helpers.js";
import { describeFrontEnd, startWorld, stopWorld, CHANNEL, ADMIN, tool, type World } from "./helpers.js";

function transportFor(w: World, token: string | undefined, query = `channel=${CHANNEL}`): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(`${w.d.url}/mcp?${query}`), { requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} } });
}

async function connectHttp(w: World, token: string, query?: string): Promise<Client> {
  const client = new Client({ name: "koinii-test", version: "0.0.0" });
  await client.connect(transportFor(w, token, query));
  return client;
}

describeFrontEnd("Streamable HTTP (/mcp on the daemon)", (w, token) => connectHttp(w, token));

const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } } };
const mcpHeaders = { accept: "application/json, text/event-stream" };

describe("/mcp behind the wire's access rules", () => {
  it("no token or a wrong one is 401 unauthorized, a foreign Origin is 403 cross-origin, exactly as on the wire", async () => {
    const w = await startWorld();
    try {
      const none = await call(w.d.url, "POST", `/mcp?channel=${CHANNEL}`, initialize, { headers: mcpHeaders });
      expect([none.status, none.body.type]).toEqual([401, "unauthorized"]);
      const wrong = await call(w.d.url, "POST", `/mcp?channel=${CHANNEL}`, initialize, { token: "nope", headers: mcpHeaders });
      expect(wrong.text).toBe(none.text);
      const origin = await call(w.d.url, "POST", `/mcp?channel=${CHANNEL}`, initialize, { token: w.atlasToken, headers: { ...mcpHeaders, origin: "http://evil.example" } });
      expect([origin.status, origin.body.type]).toEqual([403, "cross-origin"]);
    } finally {
      await stopWorld(w);
    }
  });

  it("an agent token naming another agent is refused at initialize with the wire's 403 foreign-context", async () => {
    const w = await startWorld();
    try {
      const seq = (await call(w.d.url, "GET", "/health")).body.seq;
      const r = await call(w.d.url, "POST", `/mcp?channel=${CHANNEL}&agent=AgentBoreas`, initialize, { token: w.atlasToken, headers: mcpHeaders });
      expect([r.status, r.body.type]).toEqual([403, "foreign-context"]);
      expect((await call(w.d.url, "GET", "/health")).body.seq).toBe(seq);
    } finally {
      await stopWorld(w);
    }
  });

  it("a session belongs to the principal that opened it: another token naming it is 403 forbidden", async () => {
    const w = await startWorld();
    try {
      const t = transportFor(w, w.atlasToken);
      const c = new Client({ name: "koinii-test", version: "0.0.0" });
      await c.connect(t);
      const list = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };
      const r = await call(w.d.url, "POST", "/mcp", list, { token: w.boreasToken, headers: { ...mcpHeaders, "mcp-session-id": t.sessionId!, "mcp-protocol-version": "2025-06-18" } });
      expect([r.status, r.body.type]).toEqual([403, "forbidden"]);
      await c.close();
    } finally {
      await stopWorld(w);
    }
  });

  it("past --max-mcp-sessions an initialize is refused 429 too-many-sessions; closing a session frees its place", async () => {
    const w = await startWorld({ args: ["--max-mcp-sessions", "1"] });
    try {
      const first = transportFor(w, w.atlasToken);
      const c = new Client({ name: "koinii-test", version: "0.0.0" });
      await c.connect(first);
      const r = await call(w.d.url, "POST", `/mcp?channel=${CHANNEL}`, initialize, { token: w.boreasToken, headers: mcpHeaders });
      expect([r.status, r.body.type]).toEqual([429, "too-many-sessions"]);
      await first.terminateSession(); // DELETE /mcp
      await c.close();
      const again = await connectHttp(w, w.boreasToken);
      expect((await again.listTools()).tools.length).toBeGreaterThan(0);
      await again.close();
    } finally {
      await stopWorld(w);
    }
  });

  it("a session whose client went away without DELETE is closed after --mcp-idle-session-ms; its id is then 404 not-found", async () => {
    const w = await startWorld({ args: ["--mcp-idle-session-ms", "200"] });
    try {
      const t = transportFor(w, w.atlasToken);
      const c = new Client({ name: "koinii-test", version: "0.0.0" });
      await c.connect(t);
      const id = t.sessionId!;
      await c.close(); // closes the streams, sends no DELETE
      // Probe with another agent's token: refused 403 before it touches the session (so it does not keep it alive), 404 once it is gone.
      const probe = () => call(w.d.url, "POST", "/mcp", { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, { token: w.boreasToken, headers: { ...mcpHeaders, "mcp-session-id": id } });
      let r = await probe();
      for (let i = 0; i < 400 && r.status === 403; i++) {
        await new Promise((ok) => setTimeout(ok, 50));
        r = await probe();
      }
      expect([r.status, r.body.type]).toEqual([404, "not-found"]);
    } finally {
      await stopWorld(w);
    }
  });

  it("the admin names the agent it speaks as; its moves are stamped with that agent", async () => {
    const w = await startWorld();
    try {
      const c = await connectHttp(w, ADMIN, `channel=${CHANNEL}&agent=AgentCarme`);
      const r = await tool(c, "assert", { sentence: "(ownerOf ProdCluster TeamCarme)" });
      expect((await w.boreas.medium.sentex(r.body.handle as number)).creator).toBe("AgentCarme");
      await c.close();
    } finally {
      await stopWorld(w);
    }
  });
});
