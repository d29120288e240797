/**
 * The three access postures of docs/wire.md against real daemon processes: open loopback (with a
 * warning), the admin token, and per-agent tokens with the write boundary.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawn } from "node:child_process";
import Database from "better-sqlite3";
import { join } from "node:path";
import { spawnDaemon, call, MAIN, tempDir, type Daemon } from "./helpers.js";

const ADMIN = "admin-secret-token-0123456789";

describe("open posture", () => {
  it("with no token on loopback every caller is the admin, creator comes from the body, and a warning is logged", async () => {
    const d = await spawnDaemon();
    try {
      const a = await call(d.url, "POST", "/v1/assert", { sentence: "(dog Rex)", context: "CxRegistry", creator: "AgentSomeone" });
      expect(a.body.ok).toBe(true);
      const s = await call(d.url, "GET", `/v1/sentex/${a.body.handle}`);
      expect(s.body.sentex.creator).toBe("AgentSomeone");
      expect(d.stderr()).toContain("open mode");
    } finally {
      await d.stop();
    }
  });

  it("binding a non-loopback address without an admin token refuses to start: exit 2", async () => {
    const proc = spawn(process.execPath, [MAIN, "serve", "--port", "0", "--data", tempDir(), "--listen", "0.0.0.0"], { env: { ...process.env, KOINII_ADMIN_TOKEN: "" }, stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    proc.stderr.on("data", (b: Buffer) => (err += b.toString()));
    const code = await new Promise((r) => proc.once("exit", r));
    expect(code).toBe(2);
    expect(err).toContain("KOINII_ADMIN_TOKEN");
  });

  it("bad flags exit 1 and --help lists every limit", async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const p = spawn(process.execPath, [MAIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        p.stdout.on("data", (b: Buffer) => (out += b.toString()));
        p.stderr.on("data", (b: Buffer) => (out += b.toString()));
        p.once("exit", (code) => resolve({ code, out }));
      });
    expect((await run(["serve", "--max-events", "zero"])).code).toBe(1);
    const help = await run(["serve", "--help"]);
    for (const flag of ["--port", "--data", "--listen", "--durability", "--max-subscriptions", "--max-parked", "--max-events", "--max-body-bytes", "--idle-reap-ms", "--max-wait-ms", "--feed-retention-events", "--shutdown-grace-ms"]) {
      expect(help.out).toContain(flag);
    }
  });
});

describe("admin-token and agent-token postures", () => {
  let d: Daemon;
  let atlas: string;
  let boreas: string;

  beforeAll(async () => {
    d = await spawnDaemon({ env: { KOINII_ADMIN_TOKEN: ADMIN } });
    atlas = (await call(d.url, "POST", "/v1/agents", { id: "AgentAtlas", displayName: "Atlas", trust: 1 }, { token: ADMIN })).body.token;
    boreas = (await call(d.url, "POST", "/v1/agents", { id: "AgentBoreas" }, { token: ADMIN })).body.token;
  });
  afterAll(async () => {
    await d.stop();
  });

  it("/health needs no token; every other route, unknown ones included, is 401 without one", async () => {
    expect((await call(d.url, "GET", "/health")).status).toBe(200);
    for (const [m, p] of [["GET", "/v1/watchers"], ["POST", "/v1/query"], ["GET", "/openapi.json"], ["GET", "/metrics"], ["GET", "/v1/nope"]] as const) {
      const a = await call(d.url, m, p, m === "POST" ? { goal: "(dog ?x)", context: "CxPets" } : undefined);
      expect(a.status).toBe(401);
      expect(a.body.type).toBe("unauthorized");
    }
  });

  it("every 401 is byte-identical whatever was wrong with the token", async () => {
    const variants: Record<string, string>[] = [
      {},
      { authorization: "Bearer wrong" },
      { authorization: `Bearer ${ADMIN.slice(0, -1)}` },
      { authorization: `Bearer ${ADMIN}x` },
      { authorization: `Basic ${ADMIN}` },
      { authorization: "Bearer " },
      { authorization: ADMIN },
      { authorization: `Bearer ${atlas}junk` },
    ];
    const answers = await Promise.all(variants.map((headers) => call(d.url, "GET", "/v1/watchers", undefined, { headers })));
    for (const a of answers) expect(a.status).toBe(401);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
  });

  it("the admin token reads and writes anywhere; the bearer scheme is case-insensitive", async () => {
    const a = await call(d.url, "POST", "/v1/assert", { sentence: "(note Hello)", context: "CxAnywhere" }, { headers: { authorization: `bearer ${ADMIN}` } });
    expect(a.body.ok).toBe(true);
  });

  it("an agent writes its own context and its writes are stamped creator = its id whatever the body says", async () => {
    const a = await call(d.url, "POST", "/v1/assert", { sentence: "(likes Atlas Tea)", context: "CxAtlas", creator: "AgentBoreas" }, { token: atlas });
    expect(a.body.ok).toBe(true);
    const s = await call(d.url, "GET", `/v1/sentex/${a.body.handle}`, undefined, { token: boreas });
    expect(s.body.sentex.creator).toBe("AgentAtlas");
    const e = await call(d.url, "POST", "/v1/edit", { add: [{ sentence: "(likes Atlas Coffee)", context: "CxAtlas", creator: "AgentBoreas" }] }, { token: atlas });
    const s2 = await call(d.url, "GET", `/v1/sentex/${e.body.added[0]}`, undefined, { token: atlas });
    expect(s2.body.sentex.creator).toBe("AgentAtlas");
  });

  it("an agent reads everything", async () => {
    const q = await call(d.url, "POST", "/v1/query", { goal: "(likes Atlas ?x)", context: "CxAtlas" }, { token: boreas });
    expect(q.body.solutions.length).toBeGreaterThan(0);
  });

  it("a write outside its own context is 403 foreign-context; into CxRegistry, 403 registry-forbidden; checked before admissibility", async () => {
    const before = (await call(d.url, "GET", "/health")).body.seq;
    const f = await call(d.url, "POST", "/v1/assert", { sentence: "(likes Boreas Tea)", context: "CxBoreas" }, { token: atlas });
    expect([f.status, f.body.type]).toEqual([403, "foreign-context"]);
    // not admissible either (not ground), yet access answers first
    const f2 = await call(d.url, "POST", "/v1/assert", { sentence: "(likes ?x Tea)", context: "CxBoreas" }, { token: atlas });
    expect([f2.status, f2.body.type]).toEqual([403, "foreign-context"]);
    const r = await call(d.url, "POST", "/v1/assert", { sentence: "(trustLevel AgentAtlas 99)", context: "CxRegistry" }, { token: atlas });
    expect([r.status, r.body.type]).toEqual([403, "registry-forbidden"]);
    const e = await call(d.url, "POST", "/v1/edit", { add: [{ sentence: "(ok One)", context: "CxAtlas" }, { sentence: "(bad ?x)", context: "CxBoreas" }] }, { token: atlas });
    expect([e.status, e.body.type]).toEqual([403, "foreign-context"]);
    const c = await call(d.url, "POST", "/v1/check-edit", { add: [{ sentence: "(ok One)", context: "CxBoreas" }] }, { token: atlas });
    expect([c.status, c.body.type]).toEqual([403, "foreign-context"]);
    expect((await call(d.url, "GET", "/health")).body.seq).toBe(before);
  });

  it("an agent retracts only its own sentexes: another's is 403 foreign-context", async () => {
    const b = await call(d.url, "POST", "/v1/assert", { sentence: "(likes Boreas Wind)", context: "CxBoreas" }, { token: boreas });
    const r = await call(d.url, "POST", "/v1/retract", { handle: b.body.handle }, { token: atlas });
    expect([r.status, r.body.type]).toEqual([403, "foreign-context"]);
    const e = await call(d.url, "POST", "/v1/edit", { remove: [b.body.handle] }, { token: atlas });
    expect([e.status, e.body.type]).toEqual([403, "foreign-context"]);
    expect((await call(d.url, "POST", "/v1/retract", { handle: b.body.handle }, { token: boreas })).body.ok).toBe(true);
  });

  it("an agent may add (and retract) a genlCx edge naming its own context, and no other", async () => {
    const up = await call(d.url, "POST", "/v1/assert", { sentence: "(genlCx CxDeploy CxAtlas)", context: "CxAtlas" }, { token: atlas });
    expect(up.body.ok).toBe(true);
    const other = await call(d.url, "POST", "/v1/assert", { sentence: "(genlCx CxDeploy CxBoreas)", context: "CxAtlas" }, { token: atlas });
    expect([other.status, other.body.type]).toEqual([403, "foreign-context"]);
    const reg = await call(d.url, "POST", "/v1/assert", { sentence: "(genlCx CxRegistry CxAtlas)", context: "CxAtlas" }, { token: atlas });
    expect([reg.status, reg.body.type]).toEqual([403, "registry-forbidden"]);
    expect((await call(d.url, "POST", "/v1/retract", { handle: up.body.handle }, { token: boreas })).status).toBe(403);
    expect((await call(d.url, "POST", "/v1/retract", { handle: up.body.handle }, { token: atlas })).body.ok).toBe(true);
  });

  it("POST /v1/agents is the admin's: an agent is 403 forbidden", async () => {
    const a = await call(d.url, "POST", "/v1/agents", { id: "AgentEvil" }, { token: atlas });
    expect([a.status, a.body.type]).toEqual([403, "forbidden"]);
  });

  it("registration writes the registry facts; GET /v1/agents lists them", async () => {
    const l = await call(d.url, "GET", "/v1/agents", undefined, { token: boreas });
    expect(l.body.agents).toEqual([
      { id: "AgentAtlas", context: "CxAtlas", displayName: "Atlas", trust: 1 },
      { id: "AgentBoreas", context: "CxBoreas", displayName: "AgentBoreas", trust: 0 },
    ]);
    const m = await call(d.url, "POST", "/v1/match", { sentence: "(agent ?a)", context: "CxRegistry" }, { token: ADMIN });
    expect(m.body.sentexes.map((s: { sentence: string }) => s.sentence).sort()).toEqual(["(agent AgentAtlas)", "(agent AgentBoreas)"]);
  });

  it("a subscription belongs to its principal: another agent's token is unknown-subscription; watchers lists own only, all for the admin", async () => {
    const w = await call(d.url, "POST", "/v1/watch", {}, { token: atlas });
    const p = await call(d.url, "POST", "/v1/poll", { token: w.body.token, cursor: w.body.cursor }, { token: boreas });
    expect([p.status, p.body.type]).toEqual([400, "unknown-subscription"]);
    expect((await call(d.url, "POST", "/v1/unwatch", { token: w.body.token }, { token: boreas })).body.dropped).toBe(false);
    const wb = await call(d.url, "POST", "/v1/watch", {}, { token: boreas });
    const mine = await call(d.url, "GET", "/v1/watchers", undefined, { token: boreas });
    expect(mine.body.watchers.map((x: { token: string }) => x.token)).toEqual([wb.body.token]);
    const all = await call(d.url, "GET", "/v1/watchers", undefined, { token: ADMIN });
    expect(all.body.watchers.map((x: { token: string }) => x.token).sort()).toEqual([w.body.token, wb.body.token].sort());
  });

  it("a rotated agent token stops working at once, and tokens survive a restart (stored hashed, never in clear)", async () => {
    const fresh = (await call(d.url, "POST", "/v1/agents", { id: "AgentCirrus" }, { token: ADMIN })).body.token as string;
    const rotated = (await call(d.url, "POST", "/v1/agents", { id: "AgentCirrus" }, { token: ADMIN })).body.token as string;
    expect((await call(d.url, "GET", "/v1/watchers", undefined, { token: fresh })).status).toBe(401);
    expect((await call(d.url, "GET", "/v1/watchers", undefined, { token: rotated })).status).toBe(200);
    await d.stop();
    const db = new Database(join(d.dataDir, "koinii.db"), { readonly: true });
    const rows = db.prepare("select id, token_sha256 from principal").all() as { id: string; token_sha256: string }[];
    db.close();
    expect(rows.map((r) => r.id).sort()).toEqual(["AgentAtlas", "AgentBoreas", "AgentCirrus"]);
    for (const r of rows) {
      expect(r.token_sha256).toMatch(/^[0-9a-f]{64}$/);
      expect([atlas, boreas, rotated]).not.toContain(r.token_sha256);
    }
    d = await spawnDaemon({ dataDir: d.dataDir, env: { KOINII_ADMIN_TOKEN: ADMIN } });
    expect((await call(d.url, "GET", "/v1/watchers", undefined, { token: rotated })).status).toBe(200);
    expect((await call(d.url, "GET", "/v1/watchers", undefined, { token: fresh })).status).toBe(401);
  });
});
