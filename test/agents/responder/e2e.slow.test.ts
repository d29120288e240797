/**
 * The responder end to end, every part a real process: the koinii daemon, the responder
 * (`node dist/src/cli/main.js responder ...`), a local DM platform (node:http, here, recording
 * every send) and nats-server (Debian's, on a random loopback port). The test speaks to the
 * responder the way the world does: POST /dm, NATS `KANNAKA.events.obc.dm_message`, and DM
 * query nodes another agent writes into the channel while the responder is down.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { type IncomingMessage, type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join as pathJoin } from "node:path";
import { type NatsConnection, connect as natsConnect } from "nats";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentHandle, type Medium, answerContent, answersTo, join, poseQuery, registerAgent, speakerOf, wire } from "../../../src/channel/index.js";
import { terms } from "../../../src/kb/index.js";
import { dmQuestion } from "../../../src/agents/responder/index.js";
import { ADMIN_TOKEN, type Daemon, MAIN, spawnDaemon } from "../../channel/helpers.js";

const CHANNEL = "CxDirectMessages";
const AGENT = "AgentResponder";
const FRIEND = "00000000-0000-4000-8000-0000000000aa";
const STRANGER = "00000000-0000-4000-8000-0000000000ff";
const JWT = "test-platform-jwt-0123456789";
const ESCALATION_SUBJECT = "KANNAKA.events.obc.responder_escalation";
const DM_SUBJECT = "KANNAKA.events.obc.dm_message";

/** nats-server from Debian: installed here under CI, otherwise a clear failure naming the fix. */
function ensureNatsServer(): string {
  const which = () => spawnSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" }).stdout.trim();
  let bin = which();
  if (bin.length > 0) return bin;
  if (process.env.CI === "true") {
    execFileSync("sh", ["-c", "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nats-server"], { stdio: "inherit" });
    bin = which();
    if (bin.length > 0) return bin;
  }
  throw new Error("nats-server is not installed: run `apt-get update && apt-get install -y nats-server` (Debian package nats-server), or set CI=true to let this test install it");
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

interface Sent {
  conversationId: string;
  message: string;
  auth: string | undefined;
}

async function startPlatform(): Promise<{ url: string; sent: Sent[]; server: Server }> {
  const sent: Sent[] = [];
  const body = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  };
  const server = createServer((req, res) => {
    void (async () => {
      const send = /^\/dm\/conversations\/([^/]+)\/send$/.exec(req.url ?? "");
      const thread = /^\/dm\/conversations\/([^/]+)$/.exec(req.url ?? "");
      if (req.method === "POST" && send) {
        const b = JSON.parse(await body(req)) as { message: string };
        sent.push({ conversationId: decodeURIComponent(send[1]!), message: b.message, auth: req.headers.authorization });
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true }));
      } else if (req.method === "GET" && thread) {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ messages: [] }));
      } else res.writeHead(404).end();
    })();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sent, server };
}

interface ResponderProc {
  url: string;
  proc: ChildProcess;
  stderr: () => string;
  exited: Promise<number | string>;
}

async function until<T>(f: () => T | Promise<T>, pred: (v: T) => boolean, what: string, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (pred(v)) return v;
    if (Date.now() > end) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
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
  let platform: Awaited<ReturnType<typeof startPlatform>>;
  let responderToken: string;
  let dir: string;
  let charterPath: string;
  let auditPath: string;
  let responder: ResponderProc | null = null;
  const escalations: Record<string, unknown>[] = [];

  function startResponder(): Promise<ResponderProc> {
    const env: NodeJS.ProcessEnv = { ...process.env, RESPONDER_ENABLED: "1" };
    delete env.ANTHROPIC_API_KEY; // the deterministic composer: no model in the loop
    const proc = spawn(
      process.execPath,
      [
        MAIN, "responder",
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
      ],
      { env, stdio: ["ignore", "pipe", "pipe"] },
    );
    let err = "";
    proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | string>((r) => proc.once("exit", (code, signal) => r(code ?? signal ?? -1)));
    return new Promise<ResponderProc>((resolve, reject) => {
      let out = "";
      proc.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        const m = /koinii responder listening on (http:\/\/\S+)\n/.exec(out);
        if (m) resolve({ url: m[1]!, proc, stderr: () => err, exited });
      });
      void exited.then((code) => reject(new Error(`responder exited (${code}) before listening: ${err}`)));
    });
  }

  /** The secret the responder generated at start into <data>/ingest.secret (mode 0600), as the feeding process reads it. */
  const auth = () => ({ authorization: `Bearer ${readFileSync(pathJoin(dir, "responder", "ingest.secret"), "utf8").trim()}` });
  const status = async (): Promise<any> => (await (await request(`${responder!.url}/status`, { headers: auth() })).body.json());
  const ready = () => until(status, (s) => s.kb.connected === true && s.kb.catchups >= 1 && s.nats?.connected === true, "responder connected and caught up");
  const postDm = async (body: unknown) => {
    const r = await request(`${responder!.url}/dm`, { method: "POST", headers: { "content-type": "application/json", ...auth() }, body: JSON.stringify(body) });
    return { status: r.statusCode, body: (await r.body.json()) as any };
  };
  const nodeOf = async (messageId: string, asker = AGENT) =>
    (await admin.match(`(queries ${asker} (dm ?c ${JSON.stringify(messageId)} ?s ?n ?t))`, "?ctx")).map((s) => s.handle);
  const escalationRecords = (q: number) => admin.match(`(responderEscalation ${AGENT} (sentexHandle ${q}) ?reason)`, "CxResponder");
  const refusals = (q: number) => admin.match(`(refuse ${AGENT} (sentexHandle ${q}))`, "CxResponder");

  beforeAll(async () => {
    const bin = ensureNatsServer();
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
    dir = mkdtempSync(pathJoin(tmpdir(), "koinii-responder-e2e-"));
    writeFileSync(pathJoin(dir, "obc.env"), `OPENBOTCITY_JWT=${JWT}\n`);
    charterPath = pathJoin(dir, "charter.json");
    auditPath = pathJoin(dir, "audit.jsonl");
    writeFileSync(
      charterPath,
      JSON.stringify({
        version: 1,
        enabled: true,
        allowlist: { [FRIEND]: "Rex" },
        limits: { max_replies_per_day: 12, max_replies_per_conversation_per_day: 4, min_gap_seconds_per_conversation: 0, max_reply_chars: 600 },
        escalate_keywords: ["deal", "money", "wallet", "password", "send me"],
        voice: "You are the bounded responder.",
      }),
    );
    responder = await startResponder();
    await ready();
  }, 120_000);

  async function poseFact(sentence: string): Promise<void> {
    await presenceMedium.assert(sentence, presence.context);
  }

  afterAll(async () => {
    if (responder && responder.proc.exitCode === null && responder.proc.signalCode === null) {
      responder.proc.kill("SIGTERM");
      await responder.exited;
    }
    await nc?.close();
    nats?.proc.kill("SIGTERM");
    await presenceMedium?.close();
    await admin?.close();
    await daemon?.stop();
    platform?.server.close();
    if (daemon) rmSync(daemon.dataDir, { recursive: true, force: true });
    if (dir) rmSync(dir, { recursive: true, force: true });
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
