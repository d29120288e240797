/**
 * Nothing is lost on stop, and every decision is audited (R19-R21), every part a real process:
 * the koinii daemon, the responder (`node dist/src/cli/main.js responder ...`) and the local DM
 * platform. The tests stop the responder the way the world does (SIGTERM mid-burst, SIGKILL
 * mid-send), restart it, and read what the KB and the audit hold afterwards.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join as pathJoin } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentHandle, type Medium, join, poseQuery, registerAgent, wire } from "../../../src/channel/index.js";
import { dmQuestion, switchedOffFile, verifyAudit } from "../../../src/agents/responder/index.js";
import { ADMIN_TOKEN, type Daemon, MAIN, spawnDaemon } from "../../channel/helpers.js";
import { type Platform, type ResponderProc, auditLines, responderFiles, spawnResponder, teardown, startPlatform, until } from "./procs.js";

const CHANNEL = "CxDirectMessages";
const AGENT = "AgentResponder";
const FRIEND = "00000000-0000-4000-8000-0000000000aa";
const SELF = "00000000-0000-4000-8000-00000000self";

describe("the responder loses nothing on stop and audits every decision (real processes)", () => {
  let daemon: Daemon;
  let admin: Medium;
  let presenceMedium: Medium;
  let presence: AgentHandle;
  let platform: Platform;
  let token: string;
  let dir: string;
  let auditPath: string;
  let charterPath: string;
  let responder: ResponderProc | null = null;
  let n = 0;

  const start = async (): Promise<ResponderProc> =>
    (responder = await spawnResponder([
      "--charter", charterPath,
      "--url", daemon.url,
      "--token", token,
      "--agent", AGENT,
      "--channel", CHANNEL,
      "--ingest-agents", "AgentPresence",
      "--platform-url", platform.url,
      "--platform-token-file", pathJoin(dir, "obc.env"),
      "--port", "0",
      "--data", pathJoin(dir, "responder"),
      "--audit", auditPath,
      "--own-sender-id", SELF,
      "--catchup-max-age-s", "3600",
      "--catchup-max-count", "200",
    ]));
  const status = async (): Promise<any> => (await (await request(`${responder!.url}/status`, { headers: responder!.auth() })).body.json());
  /** Connected, caught up, and nothing queued, in flight or waiting for its KB record. */
  const idle = () =>
    until(status, (s) => s.kb.connected && s.kb.catchups >= 1 && s.stats.queued === 0 && s.kb.inflight === 0 && s.kb.pendingRecords === 0, "the responder is idle", 60_000);
  const post = async (body: unknown, contentType = "application/json") => {
    const r = await request(`${responder!.url}/dm`, { method: "POST", headers: { "content-type": contentType, ...responder!.auth() }, body: typeof body === "string" ? body : JSON.stringify(body) });
    return { status: r.statusCode, body: (await r.body.json()) as any };
  };
  const friendDm = (senderId = FRIEND) => {
    const i = n++;
    return { conversationId: `conv-${i}`, messageId: `msg-${i}`, senderId, senderName: "Rex", text: `hello number ${i}, how is the music?` };
  };
  /** Every DM node the responder posed and did not drop (drops write nothing to the KB), with its KB outcome. */
  const nodeOutcomes = async () => {
    const dropped = new Set(auditLines(auditPath).filter((l) => l.action === "dropped").map((l) => l.detail.query as number));
    const nodes = (await admin.match(`(queries ${AGENT} (dm ?c ?m ?s ?n ?t))`, "?ctx")).filter((q) => !dropped.has(q.handle));
    const answers = new Set((await admin.match(`(answers ${AGENT} ?c ?t)`, "CxResponder")).map((a) => /\(sentexHandle (\d+)\)\)$/.exec(a.sentence)![1]));
    const refused = new Set((await admin.match(`(refuse ${AGENT} ?t)`, "CxResponder")).map((a) => /\(sentexHandle (\d+)\)\)$/.exec(a.sentence)![1]));
    return nodes.map((q) => ({ q: q.handle, outcome: answers.has(String(q.handle)) ? "answered" : refused.has(String(q.handle)) ? "refused" : "none" }));
  };

  beforeAll(async () => {
    daemon = await spawnDaemon({ adminToken: ADMIN_TOKEN });
    admin = wire({ url: daemon.url, token: ADMIN_TOKEN });
    token = (await registerAgent(admin, AGENT)).token!;
    presenceMedium = wire({ url: daemon.url, token: (await registerAgent(admin, "AgentPresence")).token! });
    presence = await join(presenceMedium, CHANNEL, "AgentPresence");
    platform = await startPlatform();
    ({ dir, charterPath, auditPath } = responderFiles("koinii-responder-stop-", "test-platform-jwt-0123456789", {
      allowlist: { [FRIEND]: "Rex", [SELF]: "me" },
      limits: { max_replies_per_day: 1000, max_replies_per_conversation_per_day: 10, min_gap_seconds_per_conversation: 0, max_reply_chars: 600 },
      escalate_keywords: ["deal", "money"],
      voice: "",
    }));
    await start();
    await idle();
  }, 120_000);

  afterAll(async () => {
    await teardown({ responder, mediums: [presenceMedium, admin], daemon, platform, dir });
  });

  it("R20: a malformed POST /dm is refused and audited; a re-posted processed id is audited as a duplicate", async () => {
    expect((await post("{")).status).toBe(400);
    expect((await post({ text: "no ids" })).status).toBe(400);
    expect((await post("{}", "text/plain")).status).toBe(415);
    const refused = auditLines(auditPath).filter((l) => l.action === "ingest_refused");
    expect(refused.map((l) => [l.detail.via, l.detail.status])).toEqual([["http", 400], ["http", 400], ["http", 415]]);
    expect(refused[1]!.detail.error).toContain("conversationId");

    const d = friendDm();
    expect((await post(d)).status).toBe(202);
    await idle();
    // The presence agent writes the same DM again (its own node): taken live, audited as a duplicate.
    const again = await poseQuery(presence, dmQuestion({ ...d, messageId: d.messageId }));
    const dup = await until(() => auditLines(auditPath).filter((l) => l.action === "dropped" && l.detail.query === again), (x) => x.length === 1, "the re-post audited");
    expect(dup[0]!.detail).toMatchObject({ reason: "duplicate", message_id: d.messageId });
    expect(platform.sent.filter((s) => s.conversationId === d.conversationId)).toHaveLength(1);
  });

  it("R21: our own echo is audited once, marked processed, and never takes a catch-up slot again", async () => {
    const echo = friendDm(SELF);
    const r = await post(echo);
    expect(r.status).toBe(202);
    await idle();
    const drops = () => auditLines(auditPath).filter((l) => l.action === "dropped" && l.detail.message_id === echo.messageId);
    expect(drops().map((l) => l.detail.reason)).toEqual(["own_echo"]);
    responder!.proc.kill("SIGTERM");
    expect(await responder!.exited).toBe(0);
    await start();
    await idle();
    const catchup = auditLines(auditPath).filter((l) => l.action === "catchup").at(-1)!;
    expect(catchup.detail.queued_ids).not.toContain(echo.messageId);
    expect(drops()).toHaveLength(1);
    expect(platform.sent.filter((s) => s.conversationId === echo.conversationId)).toHaveLength(0);
  });

  it("R19: SIGTERM mid-burst: every DM it took is answered or refused in the KB, now or after the restart", { timeout: 120_000 }, async () => {
    const burst = Array.from({ length: 60 }, () => friendDm());
    let accepted = 0;
    let next = 0;
    let stopped = false;
    const sender = async () => {
      while (next < burst.length) {
        const d = burst[next++]!;
        try {
          if ((await post(d)).status === 202) accepted++;
        } catch {
          return; // the responder stopped listening
        }
        if (accepted >= 12 && !stopped) {
          stopped = true;
          responder!.proc.kill("SIGTERM");
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, sender));
    expect(await responder!.exited).toBe(0);
    expect(accepted).toBeGreaterThanOrEqual(12);
    // Drained before it disconnected: every DM it decided on is in the KB already, none waits on a record.
    const lines = auditLines(auditPath);
    expect(lines.filter((l) => l.action === "kb_record_failed")).toEqual([]);
    const decided = new Set(lines.filter((l) => l.action === "escalated" || l.action === "reply_sent").map((l) => l.detail.query as number));
    expect((await nodeOutcomes()).filter((o) => decided.has(o.q) && o.outcome === "none")).toEqual([]);
    await start();
    await idle();
    const outcomes = await nodeOutcomes();
    expect(outcomes.filter((o) => o.outcome === "none")).toEqual([]);
    // Every send the platform saw is the text of an answer in the KB.
    const answered = new Set((await admin.match(`(answers ${AGENT} ?c ?t)`, "CxResponder")).map((a) => a.sentence));
    for (const s of platform.sent) expect([...answered].some((a) => a.includes(JSON.stringify(s.message)))).toBe(true);
    expect(verifyAudit(auditPath).ok).toBe(true);
  });

  it("R19: SIGKILL mid-send: after the restart every audited acceptance has its outcome in the KB", { timeout: 120_000 }, async () => {
    const before = platform.sent.length;
    let hold!: () => void;
    const held = new Promise<void>((r) => (hold = r));
    platform.beforeAnswer = async () => {
      if (platform.sent.length === before + 5) {
        hold();
        await new Promise(() => undefined); // never answered: the responder dies waiting
      }
    };
    const burst = Array.from({ length: 20 }, () => friendDm());
    const posts = Promise.allSettled(burst.map((d) => post(d)));
    await held;
    responder!.proc.kill("SIGKILL");
    expect(await responder!.exited).toBe("SIGKILL");
    await posts;
    platform.beforeAnswer = async () => undefined;
    await start();
    await idle();
    const dropped = new Set(auditLines(auditPath).filter((l) => l.action === "dropped").map((l) => l.detail.query as number));
    const accepted = auditLines(auditPath).filter((l) => l.action === "dm_received" && !dropped.has(l.detail.query)).map((l) => l.detail.query as number);
    expect(accepted.length).toBeGreaterThanOrEqual(20);
    const outcomes = new Map((await nodeOutcomes()).map((o) => [o.q, o.outcome]));
    expect(accepted.filter((q) => outcomes.get(q) !== "answered" && outcomes.get(q) !== "refused")).toEqual([]);
    // The DM whose send was cut off is flagged for a human, not silently closed.
    const unconfirmed = auditLines(auditPath).filter((l) => l.action === "escalated" && l.detail.reason === "send_unconfirmed");
    expect(unconfirmed).toHaveLength(1);
    expect(outcomes.get(unconfirmed[0]!.detail.query)).toBe("refused");
    expect(verifyAudit(auditPath).ok).toBe(true);
  });

  it("R22: a DM that arrives while the kill switch is on is left for a human, never answered once it is switched back on", { timeout: 120_000 }, async () => {
    responder!.proc.kill("SIGTERM");
    expect(await responder!.exited).toBe(0);
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.RESPONDER_ENABLED;
    const data = pathJoin(dir, "responder");
    const off = spawnSync(process.execPath, [MAIN, "responder", "--charter", charterPath, "--data", data, "--port", "0"], { env, encoding: "utf8" });
    expect(off.status).toBe(0);
    expect(existsSync(pathJoin(data, switchedOffFile))).toBe(true);
    const d = friendDm();
    const q = await poseQuery(presence, dmQuestion(d));
    await start();
    await idle();
    const lines = auditLines(auditPath);
    expect(lines.filter((l) => l.action === "kill_switch_window")).toEqual([expect.objectContaining({ detail: expect.objectContaining({ switch: "env" }) })]);
    expect(lines.filter((l) => l.action === "catchup").at(-1)!.detail).toMatchObject({ switched_off: 1, switched_off_ids: [d.messageId] });
    expect(existsSync(pathJoin(data, switchedOffFile))).toBe(false);
    // Left for a human: no send, no answer, no refusal; and a restart still leaves it.
    expect(platform.sent.filter((s) => s.conversationId === d.conversationId)).toHaveLength(0);
    expect(await admin.match(`(answers ${AGENT} ?c (sentexHandle ${q}))`, "CxResponder")).toHaveLength(0);
    responder!.proc.kill("SIGTERM");
    expect(await responder!.exited).toBe(0);
    await start();
    await idle();
    expect(auditLines(auditPath).filter((l) => l.action === "catchup").at(-1)!.detail).toMatchObject({ switched_off: 1, queued: 0 });
    expect(platform.sent.filter((s) => s.conversationId === d.conversationId)).toHaveLength(0);
  });
});
