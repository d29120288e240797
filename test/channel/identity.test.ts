/**
 * Identity (K4) through the channel: agents registered by the admin, tokens in
 * wire({url, token}), creator stamped from the token, the write boundary surfaced as typed
 * errors, trust functional and admin-only, display names.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import {
  wire, join, assert, poseQuery, answer, registerAgent, agents, setTrust, setDisplayName, trustOf, displayNameOf, contextFor,
  ChannelError, type WireMedium,
} from "../../src/channel/index.js";
import { spawnDaemon, rig, ADMIN_TOKEN, type Daemon } from "./helpers.js";

describe("identity over the wire (admin token posture)", () => {
  let d: Daemon;
  let admin: WireMedium;
  const opened: WireMedium[] = [];
  const connect = (token?: string) => {
    const m = wire({ url: d.url, token });
    opened.push(m);
    return m;
  };

  beforeAll(async () => {
    d = await spawnDaemon({ adminToken: ADMIN_TOKEN });
    admin = connect(ADMIN_TOKEN);
  });
  afterAll(async () => {
    for (const m of opened) await m.close();
    await d.stop();
  });

  it("registerAgent answers the agent, its context and a token; the token's writes are stamped with the agent whatever the body says", async () => {
    const reg = await registerAgent(admin, "AgentAtlas", { displayName: "Atlas", trust: 2 });
    expect(reg).toMatchObject({ agent: "AgentAtlas", context: contextFor("AgentAtlas") });
    expect(typeof reg.token).toBe("string");
    const m = connect(reg.token);
    const h = await join(m, "CxDeploy", "AgentAtlas");
    const c = await m.assert("(dog Rex)", h.context, { creator: "AgentSomeoneElse" });
    expect((await m.sentex(c.handle)).creator).toBe("AgentAtlas");
    const q = await poseQuery(h, "(whichDatabase Prod)");
    expect((await m.sentex(q)).creator).toBe("AgentAtlas");
  });

  it("the write boundary: another agent's context is foreign-context (403), CxRegistry is registry-forbidden (403)", async () => {
    const reg = await registerAgent(admin, "AgentBoreas");
    const m = connect(reg.token);
    const e1 = await m.assert("(dog Rex)", "CxAtlas").catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(ChannelError);
    expect(e1).toMatchObject({ type: "foreign-context", status: 403 });
    const e2 = await m.assert("(agent AgentBoreas)", "CxRegistry").catch((e: unknown) => e);
    expect(e2).toMatchObject({ type: "registry-forbidden", status: 403 });
    // A handle joined under someone else's id writes the other's context: refused the same way.
    const spoof = await join(m, "CxDeploy", "AgentAtlas").catch((e: unknown) => e);
    expect(spoof).toMatchObject({ type: "foreign-context" });
  });

  it("an agent may answer another agent's query: its reply lives in its own context", async () => {
    const atlas = connect((await registerAgent(admin, "AgentAtlas")).token);
    const cirrus = connect((await registerAgent(admin, "AgentCirrus")).token);
    const a = await join(atlas, "CxDeploy", "AgentAtlas");
    const c = await join(cirrus, "CxDeploy", "AgentCirrus");
    const q = await poseQuery(a, "(whoOwns Prod)");
    const x = await answer(c, "AgentAtlas", q);
    expect(await cirrus.sentex(x)).toMatchObject({ context: "CxCirrus", creator: "AgentCirrus" });
  });

  it("setTrust is admin-only and functional: the old value is replaced in one edit; an agent token is registry-forbidden", async () => {
    const reg = await registerAgent(admin, "AgentDelta", { trust: 1 });
    const head = await admin.headSeq();
    const r = await setTrust(admin, "AgentDelta", 0.75);
    expect(r.seq).toBe(head + 1);
    expect(await trustOf(admin, "AgentDelta")).toBe(0.75);
    expect(await admin.match("(trustLevel AgentDelta ?v)", "CxRegistry")).toHaveLength(1);
    const e = await setTrust(connect(reg.token), "AgentDelta", 5).catch((x: unknown) => x);
    expect(e).toMatchObject({ type: "registry-forbidden", status: 403 });
    expect(await trustOf(admin, "AgentDelta")).toBe(0.75);
  });

  it("display names are labels: set by the admin, read back, listed by agents()", async () => {
    await registerAgent(admin, "AgentEcho", { displayName: "Echo" });
    expect(await displayNameOf(admin, "AgentEcho")).toBe("Echo");
    await setDisplayName(admin, "AgentEcho", "Echo \"the second\"");
    expect(await displayNameOf(admin, "AgentEcho")).toBe("Echo \"the second\"");
    expect((await agents(admin)).find((x) => x.id === "AgentEcho")).toMatchObject({ context: "CxEcho", displayName: "Echo \"the second\"" });
  });

  it("a wrong token is unauthorized (401) on every call", async () => {
    const e = await connect("not-a-token").headSeq().then(() => connect("not-a-token").agents()).catch((x: unknown) => x);
    expect(e).toMatchObject({ type: "unauthorized", status: 401 });
  });
});

describe("identity over the local medium", () => {
  it("registerAgent writes the registry facts (no token in-process); setTrust replaces the functional value", async () => {
    const r = await rig("local");
    const reg = await registerAgent(r.medium, "AgentAtlas", { displayName: "Atlas", trust: 1 });
    expect(reg).toEqual({ agent: "AgentAtlas", context: "CxAtlas", token: undefined });
    await setTrust(r.medium, "AgentAtlas", 3);
    expect(await trustOf(r.medium, "AgentAtlas")).toBe(3);
    expect(await r.medium.match("(trustLevel AgentAtlas ?v)", "CxRegistry")).toHaveLength(1);
    expect(await agents(r.medium)).toEqual([{ id: "AgentAtlas", context: "CxAtlas", displayName: "Atlas", trust: 3 }]);
    const h = await join(r.medium, "CxDeploy", "AgentAtlas");
    expect((await r.medium.sentex(await assert(h, "(p Q)"))).creator).toBe("AgentAtlas");
  });
});
