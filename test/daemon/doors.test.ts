/**
 * Closed doors: in open mode every request must name the daemon by one of its bound
 * loopback names in `Host` (a DNS-rebinding page names its own host and is refused 421
 * `misdirected`, whatever its method and Origin); an agent's token is answered only once
 * its row is durable, and of concurrent re-registrations exactly one token is left working.
 * Raw sockets (node:net) write the Host headers fetch would not let us forge.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnDaemon, call, rawExchange, type Daemon } from "./helpers.js";
import { openKb } from "../../src/kb/index.js";
import { Access } from "../../src/daemon/access.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const request = (method: string, path: string, host: string | undefined, extra = "", body = ""): string =>
  `${method} ${path} HTTP/1.1\r\n${host === undefined ? "" : `Host: ${host}\r\n`}${extra}Connection: close\r\n${body ? `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` : ""}\r\n${body}`;
const status = (answer: string): number => Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1]);
const json = (answer: string): { ok: boolean; type?: string } => JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as { ok: boolean; type?: string };

describe("Host guard (open mode)", () => {
  let d: Daemon;
  beforeAll(async () => {
    d = await spawnDaemon();
  });
  afterAll(async () => {
    await d.stop();
  });

  it("a foreign Host is 421 misdirected on every route, whatever the method and Origin; nothing is read or written", async () => {
    const before = (await call(d.url, "GET", "/health")).body.seq;
    const foreign = [`evil.example:${d.port}`, "evil.example", `127.0.0.1:${d.port + 1}`, `localhost.evil.example:${d.port}`, `127.0.0.1:${d.port}.evil.example`];
    for (const host of foreign) {
      for (const [method, path, body, extra] of [
        ["GET", "/v1/watchers", "", ""],
        ["GET", "/health", "", ""],
        ["GET", "/v1/sentex/1", "", `Origin: http://${host}\r\n`],
        ["POST", "/v1/watch", "{}", ""],
        ["POST", "/v1/assert", JSON.stringify({ sentence: "(rebound Page)", context: "CxRebind" }), `Origin: http://127.0.0.1:${d.port}\r\n`],
        ["GET", "/v1/stream?token=x", "", ""],
      ] as const) {
        const a = await rawExchange(d.port, request(method, path, host, extra, body));
        expect([host, method, path, status(a)]).toEqual([host, method, path, 421]);
        expect(json(a)).toMatchObject({ ok: false, type: "misdirected" });
      }
    }
    expect((await call(d.url, "GET", "/health")).body.seq).toBe(before);
  });

  it("a request without Host (HTTP/1.0) is 421 too", async () => {
    const a = await rawExchange(d.port, "GET /v1/watchers HTTP/1.0\r\n\r\n");
    expect(status(a)).toBe(421);
    expect(json(a)).toMatchObject({ ok: false, type: "misdirected" });
  });

  it("each bound name passes, in any case: 127.0.0.1:PORT, localhost:PORT, [::1]:PORT", async () => {
    for (const host of [`127.0.0.1:${d.port}`, `localhost:${d.port}`, `LOCALHOST:${d.port}`, `[::1]:${d.port}`]) {
      const a = await rawExchange(d.port, request("GET", "/v1/watchers", host));
      expect([host, status(a)]).toEqual([host, 200]);
    }
  });
});

describe("Host guard (admin-token mode)", () => {
  it("is not applied: a token daemon may sit behind a proxy with a public name", async () => {
    const d = await spawnDaemon({ env: { KOINII_ADMIN_TOKEN: "admin-token-doors-0123456789" } });
    try {
      const a = await rawExchange(d.port, request("GET", "/v1/watchers", "koinii.example.org", "Authorization: Bearer admin-token-doors-0123456789\r\n"));
      expect(status(a)).toBe(200);
    } finally {
      await d.stop();
    }
  });
});

describe("agent registry", () => {
  const ADMIN = "admin-token-registry-0123456789";

  it("of concurrent re-registrations exactly one token works, and the same one after a restart", async () => {
    const d = await spawnDaemon({ env: { KOINII_ADMIN_TOKEN: ADMIN } });
    let dataDir = d.dataDir;
    try {
      const first = await call(d.url, "POST", "/v1/agents", { id: "AgentRace" }, { token: ADMIN });
      expect(first.status).toBe(200);
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => call(d.url, "POST", "/v1/agents", { id: "AgentRace", displayName: `Race ${i}` }, { token: ADMIN })));
      const tokens = [first.body.token as string, ...answers.map((a) => a.body.token as string)];
      expect(new Set(tokens).size).toBe(9);
      const works = async (url: string) => (await Promise.all(tokens.map((t) => call(url, "GET", "/v1/watchers", undefined, { token: t })))).map((a) => a.status === 200);
      const live = await works(d.url);
      expect(live.filter(Boolean)).toHaveLength(1);
      await d.stop();
      const again = await spawnDaemon({ env: { KOINII_ADMIN_TOKEN: ADMIN }, dataDir });
      dataDir = again.dataDir;
      try {
        expect(await works(again.url)).toEqual(live);
      } finally {
        await again.stop();
      }
    } finally {
      await d.stop();
    }
  });

  it("a token is answered only after the group commit that holds its row (at full durability, after its fsync)", async () => {
    const kb = await openKb({ path: join(mkdtempSync(join(tmpdir(), "koinii-doors-")), "koinii.db"), durability: "full" });
    try {
      const access = await Access.open(kb, { adminToken: "admin-token-registry-0123456789" });
      const commits = kb.store.commits;
      const token = await access.issueToken("AgentDurable");
      expect(kb.store.commits).toBe(commits + 1);
      expect(access.authenticate(`Bearer ${token}`)).toMatchObject({ id: "AgentDurable", admin: false });
    } finally {
      await kb.close();
    }
  });
});
