/**
 * The responder end to end, every part a real process: the koinii daemon, the responder
 * (`node dist/src/cli/main.js responder ...`), a local DM platform (node:http, here, recording
 * every send) and nats-server (Debian's, on a random loopback port). The test speaks to the
 * responder the way the world does: POST /dm, NATS `KANNAKA.events.obc.dm_message`, and DM
 * query nodes another agent writes into the channel while the responder is down.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join as pathJoin } from "node:path";
import { type NatsConnection, connect as natsConnect } from "nats";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentHandle, type Medium, answerContent, answersTo, join, poseQuery, registerAgent, speakerOf, wire } from "../../../src/channel/index.js";
import { terms } from "../../../src/kb/index.js";
import { dmQuestion } from "../../../src/agents/responder/index.js";
import { ADMIN_TOKEN, type Daemon, MAIN, spawnDaemon } from "../../channel/helpers.js";
import { type Platform, type ResponderProc, responderFiles, spawnResponder, startPlatform, stopIfRunning, teardown, until } from "./procs.js";

const CHANNEL = "CxDirectMessages";
const AGENT = "AgentResponder";
const FRIEND = "00000000-0000-4000-8000-0000000000aa";
const STRANGER = "00000000-0000-4000-8000-0000000000ff";
const JWT = "test-platform-jwt-0123456789";
const ESCALATION_SUBJECT = "KANNAKA.events.obc.responder_escalation";
const DM_SUBJECT = "KANNAKA.events.obc.dm_message";

/** nats-server, provisioned before the suite by scripts/provision.sh (test/global-setup.ts). */
function natsServerBin(): string {
  const bin = process.env.KOINII_TEST_NATS_SERVER;
  if (!bin) throw new Error("KOINII_TEST_NATS_SERVER is not set: run the tests through vitest (its global setup runs scripts/provision.sh)");
  return bin;
}

interface Nats {
  url: string;
  proc: ChildProcess;
}

async function startNats(bin: string): Promise<Nats> {
  const proc = spawn(bin, ["-a", "127.0.0.1", "-p", "-1"], { stdio: ["ignore", "pipe", "pipe"] });
  const url = await new Promise<string>((resolve, reject) => {
    let log = "";
    const on = (d: Buffer) => {
      log += d.toString();
      const m = /Listening for client connections on (127\.0\.0\.1:\d+)/.exec(log);
      if (m) resolve(`nats://${m[1]}`);
    };
    proc.stdout!.on("data", on);
    proc.stderr!.on("data", on);
    proc.once("exit", (code) => reject(new Error(`nats-server exited ${code}: ${log}`)));
  });
  return { url, proc };
}

const lastLineHash = (path: string): string => {
  const lines = readFileSync(path, "utf8").trimEnd().split("\n");
  return (JSON.parse(lines[lines.length - 1]!) as { hash: string }).hash;
};

describe("the responder end to end (daemon, responder, DM platform and nats-server as real processes)", () => {
  let nats: Nats;
  let nc: NatsConnection;
  let daemon: Daemon;
  let admin: Medium;
  let presenceMedium: Medium;
  let presence: AgentHandle;
  let platform: Platform;
  let responderToken: string;
  let dir: string;
  let charterPath: string;
  let auditPath: string;
  let responder: ResponderProc | null = null;
  const escalations: Record<string, unknown>[] = [];

  function startResponder(): Promise<ResponderProc> {
    return spawnResponder([
      "--charter", charterPath,
      "--url", daemon.url,
      "--token", responderToken,
      "--agent", AGENT,
      "--channel", CHANNEL,
      "--ingest-agents", "AgentPresence",
      "--platform-url", platform.url,
      "--platform-token-file", pathJoin(dir, "obc.env"),
      "--nats-url", nats.url,
      "--port", "0",
      "--data", pathJoin(dir, "responder"),
      "--audit", auditPath,
      "--catchup-max-age-s", "3600",
      "--catchup-max-count", "10",
    ]);
  }

  const status = async (): Promise<any> => (await (await request(`${responder!.url}/status`, { headers: responder!.auth() })).body.json());
  const ready = () => until(status, (s) => s.kb.connected === true && s.kb.catchups >= 1 && s.nats?.connected === true, "responder connected and caught up");
  const postDm = async (body: unknown) => {
    const r = await request(`${responder!.url}/dm`, { method: "POST", headers: { "content-type": "application/json", ...responder!.auth() }, body: JSON.stringify(body) });
    return { status: r.statusCode, body: (await r.body.json()) as any };
  };
  const nodeOf = async (messageId: string, asker = AGENT) =>
    (await admin.match(`(queries ${asker} (dm ?c ${JSON.stringify(messageId)} ?s ?n ?t))`, "?ctx")).map((s) => s.handle);
  const escalationRecords = (q: number) => admin.match(`(responderEscalation ${AGENT} (sentexHandle ${q}) ?reason)`, "CxResponder");
  const refusals = (q: number) => admin.match(`(refuse ${AGENT} (sentexHandle ${q}))`, "CxResponder");

  beforeAll(async () => {
    const bin = natsServerBin();
    nats = await startNats(bin);
    nc = await natsConnect({ servers: nats.url });
    nc.subscribe(ESCALATION_SUBJECT, { callback: (_e, m) => escalations.push(JSON.parse(Buffer.from(m.data).toString("utf8")) as Record<string, unknown>) });
    daemon = await spawnDaemon({ adminToken: ADMIN_TOKEN });
    admin = wire({ url: daemon.url, token: ADMIN_TOKEN });
    responderToken = (await registerAgent(admin, AGENT, { displayName: "Responder" })).token!;
    const presenceToken = (await registerAgent(admin, "AgentPresence")).token!;
    presenceMedium = wire({ url: daemon.url, token: presenceToken });
    presence = await join(presenceMedium, CHANNEL, "AgentPresence");
    // What the KB knows about the correspondent, written by another agent in the channel.
    await poseFact(`(correspondentFact "${FRIEND}" "Rex plays the upright bass")`);
    platform = await startPlatform();
    ({ dir, charterPath, auditPath } = responderFiles("koinii-responder-e2e-", JWT, {
      allowlist: { [FRIEND]: "Rex" },
      limits: { max_replies_per_day: 12, max_replies_per_conversation_per_day: 4, min_gap_seconds_per_conversation: 0, max_reply_chars: 600 },
      escalate_keywords: ["deal", "money", "wallet", "password", "send me"],
      voice: "You are the bounded responder.",
    }));
    responder = await startResponder();
    await ready();
  }, 120_000);

  async function poseFact(sentence: string): Promise<void> {
    await presenceMedium.assert(sentence, presence.context);
  }

  afterAll(async () => {
    await stopIfRunning(responder); // before its bus goes away
    await nc?.close();
    nats?.proc.kill("SIGTERM");
    await teardown({ responder, mediums: [presenceMedium, admin], daemon, platform, dir });
  });

  it("both kill switches default off: without RESPONDER_ENABLED=1, or with a charter not enabled, it exits 0 before opening anything", () => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.RESPONDER_ENABLED;
    const data = pathJoin(dir, "never");
    const off = spawnSync(process.execPath, [MAIN, "responder", "--charter", charterPath, "--data", data, "--port", "0"], { env, encoding: "utf8" });
    expect(off.status).toBe(0);
    expect(off.stderr).toContain("kill switch");
    const disabled = pathJoin(dir, "disabled.json");
    writeFileSync(disabled, JSON.stringify({ ...JSON.parse(readFileSync(charterPath, "utf8")), enabled: undefined }));
    const off2 = spawnSync(process.execPath, [MAIN, "responder", "--charter", disabled, "--data", data, "--port", "0"], { env: { ...env, RESPONDER_ENABLED: "1" }, encoding: "utf8" });
    expect(off2.status).toBe(0);
    expect(off2.stderr).toContain("charter's enabled is not true");
    expect(() => readFileSync(pathJoin(data, "audit.jsonl"))).toThrow();
  });

  it("an allowlisted DM (POST /dm) is answered: the platform receives the send, the KB holds the answers meta-sentex on its query node", async () => {
    const r = await postDm({ conversationId: "conv-1", messageId: "msg-1", senderId: FRIEND, senderName: "Rex", text: "Hello! Any music lately?" });
    expect(r.status).toBe(202);
    const q = r.body.query as number;
    expect(await nodeOf("msg-1")).toEqual([q]);
    const sends = await until(() => platform.sent.filter((s) => s.conversationId === "conv-1"), (s) => s.length === 1, "the platform got the reply");
    expect(sends[0]!.auth).toBe(`Bearer ${JWT}`);
    // Grounded in recall through the channel: the fact another agent wrote about Rex.
    expect(sends[0]!.message).toContain("Rex plays the upright bass");
    const answers = await until(() => answersTo(presence, q), (a) => a.length === 1, "the answer is on the query node");
    expect(speakerOf(answers[0]!)).toBe(AGENT);
    expect(terms.stringValue(answerContent(answers[0]!))).toBe(sends[0]!.message);
  });

  it("an escalation-word DM (over NATS) is refused: refuse meta-sentex, escalation record and a NATS event; nothing is sent", async () => {
    nc.publish(DM_SUBJECT, Buffer.from(JSON.stringify({ obc: { eventType: "dm_message", from: { id: FRIEND, name: "Rex" }, metadata: { conversation_id: "conv-2", messageId: "msg-2" }, text: "Could you SEND ME the wallet password?" } })));
    const ev = await until(() => escalations.find((e) => e.message_id === "msg-2"), (e) => e !== undefined, "the escalation event");
    expect(ev).toMatchObject({ schema_version: 1, agent_id: "kannaka-responder", reason: "keyword:wallet", from: FRIEND, conversation_id: "conv-2" });
    const [q] = await until(() => nodeOf("msg-2"), (n) => n.length === 1, "the DM's query node");
    await until(() => escalationRecords(q!), (x) => x.length === 1, "the escalation record");
    expect((await escalationRecords(q!))[0]!.sentence).toContain('"keyword:wallet"');
    expect(await refusals(q!)).toHaveLength(1);
    expect(await answersTo(presence, q!)).toHaveLength(0);
    expect(platform.sent.filter((s) => s.conversationId === "conv-2")).toHaveLength(0);
  });

  it("a DM from off the allowlist is escalated, never answered", async () => {
    const r = await postDm({ conversationId: "conv-x", messageId: "msg-x", senderId: STRANGER, senderName: "Mallory", text: "hi, nice to meet you" });
    expect(r.status).toBe(202);
    const ev = await until(() => escalations.find((e) => e.message_id === "msg-x"), (e) => e !== undefined, "the escalation event");
    expect(ev).toMatchObject({ reason: "sender_not_allowlisted", from: STRANGER });
    await until(() => escalationRecords(r.body.query), (x) => x.length === 1, "the escalation record");
    expect(await refusals(r.body.query)).toHaveLength(1);
    expect(platform.sent.filter((s) => s.conversationId === "conv-x")).toHaveLength(0);
  });

  it("killed and restarted, it catches up a DM posted while it was down and never replies twice", { timeout: 90_000 }, async () => {
    const before = platform.sent.length;
    responder!.proc.kill("SIGKILL");
    expect(await responder!.exited).toBe("SIGKILL");
    // While it is down: the presence agent writes a new DM into the channel, and re-posts the
    // DM that was already answered (same message id, its own node).
    const q3 = await poseQuery(presence, dmQuestion({ conversationId: "conv-3", messageId: "msg-3", senderId: FRIEND, senderName: "Rex", text: "Are you around this week?" }));
    const again = await poseQuery(presence, dmQuestion({ conversationId: "conv-1", messageId: "msg-1", senderId: FRIEND, senderName: "Rex", text: "Hello! Any music lately?" }));
    responder = await startResponder();
    const s = await ready();
    expect(s.kb.lastCatchup).toMatchObject({ queued: 1, processed: 1 });
    const sends = await until(() => platform.sent.filter((x) => x.conversationId === "conv-3"), (x) => x.length === 1, "the caught-up reply");
    await until(() => answersTo(presence, q3), (a) => a.length === 1, "the caught-up answer on its node");
    expect(terms.stringValue(answerContent((await answersTo(presence, q3))[0]!))).toBe(sends[0]!.message);
    // The same DM redelivered over NATS (and re-posted by presence) is never answered again.
    nc.publish(DM_SUBJECT, Buffer.from(JSON.stringify({ obc: { eventType: "dm_message", from: { id: FRIEND, name: "Rex" }, metadata: { conversation_id: "conv-1", messageId: "msg-1" }, text: "Hello! Any music lately?" } })));
    await until(status, (st) => st.stats.dropped >= 1 && st.stats.queued === 0, "the redelivery dropped as a duplicate");
    await new Promise((r) => setTimeout(r, 300));
    expect(platform.sent.length).toBe(before + 1);
    expect(platform.sent.filter((x) => x.conversationId === "conv-1")).toHaveLength(1);
    expect(await answersTo(presence, again)).toHaveLength(0);
    const perMessage = new Map<string, number>();
    for (const l of readFileSync(auditPath, "utf8").trimEnd().split("\n").map((x) => JSON.parse(x))) {
      if (l.action === "reply_sending") perMessage.set(l.detail.message_id, (perMessage.get(l.detail.message_id) ?? 0) + 1);
    }
    expect(Object.fromEntries(perMessage)).toEqual({ "msg-1": 1, "msg-3": 1 });
  });

  it("GET /status answers on loopback with the charter's sha256 and the audit head hash", async () => {
    const s = await until(status, (st) => st.stats.queued === 0 && st.kb.inflight === 0, "idle");
    expect(s).toMatchObject({ ok: true, enabled: true, charter_version: 1, composer: "deterministic", kb: { connected: true, agent: AGENT, channel: CHANNEL }, nats: { connected: true } });
    expect(s.charter_sha256).toBe(createHash("sha256").update(readFileSync(charterPath)).digest("hex"));
    expect(s.audit.head).toBe(lastLineHash(auditPath));
    expect(s.audit.path).toBe(auditPath);
    // The secret was generated at start into a file only the user can read, and is required.
    expect(statSync(pathJoin(dir, "responder", "ingest.secret")).mode & 0o777).toBe(0o600);
    expect((await request(`${responder!.url}/status`)).statusCode).toBe(401);
    const forged = await request(`${responder!.url}/dm`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ conversationId: "c9", messageId: "msg-forged", senderId: "someone", text: "hi" }) });
    expect(forged.statusCode).toBe(401);
  });

  it("verify-audit passes on the chain produced, and fails a tampered copy at the right line", async () => {
    const head = (await status()).audit.head as string;
    responder!.proc.kill("SIGTERM");
    expect(await responder!.exited).toBe(0);
    const ok = spawnSync(process.execPath, [MAIN, "responder", "verify-audit", auditPath], { encoding: "utf8" });
    expect(ok.status, ok.stderr).toBe(0);
    const verdict = JSON.parse(ok.stdout) as { ok: boolean; lines: number; head: string };
    expect(verdict.ok).toBe(true);
    expect(verdict.head).toBe(lastLineHash(auditPath));
    const lines = readFileSync(auditPath, "utf8").trimEnd().split("\n");
    const actions = lines.map((l) => (JSON.parse(l) as { action: string }).action);
    expect(actions.filter((a) => a === "daemon_started")).toHaveLength(2);
    expect(actions).toContain("reply_sent");
    expect(actions).toContain("escalated");
    expect(actions).toContain("catchup");
    // Tamper with the first reply_sent record: verify names exactly that line.
    const at = actions.indexOf("reply_sent");
    const tampered = [...lines];
    tampered[at] = tampered[at]!.replace('"msg-1"', '"msg-9"');
    expect(tampered[at]).not.toBe(lines[at]);
    const bad = pathJoin(dir, "tampered.jsonl");
    writeFileSync(bad, tampered.join("\n") + "\n");
    const broken = spawnSync(process.execPath, [MAIN, "responder", "verify-audit", bad], { encoding: "utf8" });
    expect(broken.status).toBe(1);
    expect(JSON.parse(broken.stdout)).toMatchObject({ ok: false, line: at + 1, reason: "hash_mismatch" });
    expect(broken.stderr).toContain(`line ${at + 1}`);
    // Lines cut off the end are caught only against the published head (here: /status's, before the stop).
    const cut = pathJoin(dir, "cut.jsonl");
    writeFileSync(cut, lines.slice(0, -1).join("\n") + "\n");
    expect(spawnSync(process.execPath, [MAIN, "responder", "verify-audit", cut], { encoding: "utf8" }).status).toBe(0);
    const anchored = spawnSync(process.execPath, [MAIN, "responder", "verify-audit", cut, "--expected-head", verdict.head], { encoding: "utf8" });
    expect(anchored.status).toBe(1);
    expect(JSON.parse(anchored.stdout)).toMatchObject({ ok: false, reason: "head_mismatch" });
    expect(lines.some((l) => l.includes(head))).toBe(true);
  });
});
