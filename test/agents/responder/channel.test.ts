/**
 * The responder over the channel, in-process (local medium on a temp KB): the DM query node
 * shape, recall, replies and escalations as knowledge, catch-up with its bounds and dedup,
 * and the loopback HTTP surface. The same code runs over the wire in e2e.slow.test.ts.
 */
import { rawExchange, sendPastAnswer } from "../../daemon/helpers.js";
import { describe, expect, it, onTestFinished } from "vitest";
import { request } from "undici";
import { answersTo, join, local, type Medium, poseQuery, speakerOf, answerContent } from "../../../src/channel/index.js";
import { terms } from "../../../src/kb/index.js";
import {
  ChannelKb, type Dm, ResponderService, bootResponder, dmQuestion, isLoopbackAddress, parseDmNode, parseDmQuestion, parseIngest, startHttp, verifyAudit,
} from "../../../src/agents/responder/index.js";
import { freshKb } from "../../channel/helpers.js";
import { FRIEND, STRANGER, charter, dm, tmp } from "./helpers.js";
import { EchoTagComposer, FakeClock, FakePlatform } from "./fakes.js";

const CHANNEL = "CxDirectMessages";
const AGENT = "AgentResponder";

async function rig(opts: { catchup?: { maxAgeMs: number; maxCount: number }; trusted?: string[] } = {}) {
  const kb = await freshKb();
  const medium: Medium = local(kb);
  const clock = new FakeClock(Date.now());
  const platform = new FakePlatform(clock);
  const published: unknown[] = [];
  const ckb = new ChannelKb({ trustedAskers: new Set(opts.trusted ?? ["AgentPresence"]), factWriters: new Set(["AgentNotes"]), publish: (n) => published.push(n) });
  const dir = tmp("responder-channel-");
  const loaded = { charter: charter(), sha256: "e".repeat(64), path: "(test)" };
  const booted = bootResponder({ dataDir: dir, loaded, kb: ckb, platform, composer: new EchoTagComposer(), clock });
  const logs: string[] = [];
  const service = new ResponderService({ booted, kb: ckb, clock, catchup: opts.catchup, log: (m) => logs.push(m), connect: () => join(medium, CHANNEL, AGENT) });
  onTestFinished(async () => {
    await service.close();
    await booted.stop("test");
  });
  const presence = await join(medium, CHANNEL, "AgentPresence");
  const stranger = await join(medium, CHANNEL, "AgentMallory");
  return { kb, medium, clock, platform, published, ckb, booted, service, dir, logs, presence, stranger };
}

async function until(pred: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`never: ${what}`);
}

describe("DM query nodes", () => {
  it("every field is a string atom, so hostile text round-trips as data", async () => {
    const hostile: Dm = dm({ text: 'he said "(answers AgentX ?y)" ; then\n\tleft ) ( \\ \u0000 \u{1F600}', senderName: 'Rex "the" ?name' });
    const q = dmQuestion(hostile);
    expect(parseDmQuestion(q)).toEqual(hostile);
    const { kb, medium } = await rig();
    const h = await join(medium, CHANNEL, AGENT);
    const handle = await poseQuery(h, q);
    const stored = kb.sentex(handle)!;
    expect(parseDmNode(stored.sentence)).toEqual({ agent: AGENT, dm: hostile });
    // A symbol or variable where a string belongs is not a DM.
    expect(parseDmQuestion('(dm "c" "m" Rex "n" "t")')).toBeNull();
    expect(parseDmQuestion('(dm "c" "m" "s" "n")')).toBeNull();
    expect(parseDmQuestion(dmQuestion(dm({ messageId: null })))?.messageId).toBeNull();
  });

  it("parseIngest takes the presence event and the flat body, and refuses anything else", () => {
    expect(parseIngest({ obc: { eventType: "dm_message", from: { id: "b1", name: "Rex" }, metadata: { conversation_id: "c1", messageId: "m1" }, text: "hi" } })).toEqual({
      ok: true,
      dm: { senderId: "b1", senderName: "Rex", conversationId: "c1", messageId: "m1", text: "hi" },
    });
    expect(parseIngest({ conversationId: "c1", messageId: "m1", senderId: "b1", senderName: "Rex", text: "hi" }).ok).toBe(true);
    expect(parseIngest({ obc: { eventType: "zone_chat" } }).ok).toBe(false);
    expect(parseIngest({ conversationId: "c1", senderId: "b1", text: "hi", extra: 1 }).ok).toBe(false);
    expect(parseIngest({ conversationId: "c1", senderId: "b1", text: "x".repeat(40_000) }).ok).toBe(false);
    expect(parseIngest("hi").ok).toBe(false);
  });
});

describe("the responder's knowledge-base port", () => {
  it("an allowlisted DM is answered on its query node; an escalation is a refuse plus a record in one edit, and a bus event", async () => {
    const r = await rig();
    r.service.start();
    await until(() => r.ckb.connected, "connected");
    const { query: q1 } = await r.service.ingest(dm({ messageId: "m1", text: "hello tag1" }), "http");
    await until(async () => (await answersTo(r.ckb.handle!, q1)).length === 1, "answered");
    const [a] = await answersTo(r.ckb.handle!, q1);
    expect(speakerOf(a!)).toBe(AGENT);
    expect(terms.stringValue(answerContent(a!))).toBe(r.platform.sent[0]!.text);
    expect(r.platform.sent).toHaveLength(1);

    const { query: q2 } = await r.service.ingest(dm({ messageId: "m2", conversationId: "c2", text: "let's make a DEAL" }), "nats");
    const { query: q3 } = await r.service.ingest(dm({ messageId: "m3", senderId: STRANGER, senderName: "Mallory", text: "hi" }), "http");
    await until(() => r.published.length === 2, "two escalations published");
    await until(async () => (await r.medium.match(`(responderEscalation ${AGENT} ?t ?reason)`, "CxResponder")).length === 2, "two escalations recorded");
    const refuse = await r.medium.match(`(refuse ${AGENT} ?t)`, "CxResponder");
    const records = await r.medium.match(`(responderEscalation ${AGENT} ?t ?reason)`, "CxResponder");
    expect(refuse.map((s) => s.sentence).sort()).toEqual([`(refuse ${AGENT} (sentexHandle ${q2}))`, `(refuse ${AGENT} (sentexHandle ${q3}))`]);
    expect(records.map((s) => s.sentence).sort()).toEqual([
      `(responderEscalation ${AGENT} (sentexHandle ${q2}) "keyword:deal")`,
      `(responderEscalation ${AGENT} (sentexHandle ${q3}) "sender_not_allowlisted")`,
    ]);
    // Each refuse and its record landed in the same seq.
    for (const q of [q2, q3]) {
      const pair = [...refuse, ...records].filter((s) => s.sentence.includes(`(sentexHandle ${q})`));
      expect(new Set(pair.map((s) => s.seq)).size).toBe(1);
    }
    expect(r.platform.sent).toHaveLength(1);
    // Ingesting the same DM again gives the same node and never a second send.
    expect((await r.service.ingest(dm({ messageId: "m1", text: "hello tag1" }), "http")).query).toBe(q1);
    await r.booted.responder.drain();
    expect(r.platform.sent).toHaveLength(1);
    expect(verifyAudit(r.booted.audit.path).ok).toBe(true);
  });

  it("a DM node another trusted agent writes while the responder runs is taken live; an untrusted agent's is not", async () => {
    const r = await rig();
    r.service.start();
    await until(() => r.service.status().catchups === 1, "connected and caught up");
    const forged = await poseQuery(r.stranger, dmQuestion(dm({ messageId: "live-forged", conversationId: "c8", text: "forged tag8" })));
    const q = await poseQuery(r.presence, dmQuestion(dm({ messageId: "live-1", conversationId: "c7", text: "live tag7" })));
    await until(async () => (await answersTo(r.ckb.handle!, q)).length === 1, "answered live");
    expect(r.service.status().ingested.channel).toBe(1);
    expect(r.platform.sent.map((s) => s.text)).toEqual(["Thanks, I read tag7."]);
    expect(await answersTo(r.ckb.handle!, forged)).toHaveLength(0);
  });

  it("recall: facts about the sender by id or name, then the thread from earlier DM nodes and my answers to them", async () => {
    const r = await rig();
    const notes = await join(r.medium, CHANNEL, "AgentNotes");
    await r.medium.assert(`(correspondentFact "${FRIEND}" "Rex likes modal jazz")`, notes.context, { creator: "AgentNotes" });
    await r.medium.assert(`(correspondentFact "Rex" "Rex plays the upright bass")`, notes.context, { creator: "AgentNotes" });
    await r.medium.assert(`(correspondentFact "${STRANGER}" "not about Rex")`, notes.context, { creator: "AgentNotes" });
    // A context outside the channel's cone is not recalled.
    await r.medium.assert(`(correspondentFact "${FRIEND}" "a secret elsewhere")`, "CxElsewhere");
    r.service.start();
    await until(() => r.ckb.connected, "connected");
    await r.service.ingest(dm({ messageId: "h1", text: "first message tag1" }), "http");
    await r.booted.responder.drain();
    await until(() => r.booted.audit.lines > 0 && r.platform.sent.length === 1, "first reply");
    await until(async () => (await r.medium.match(`(answers ${AGENT} ?c ?t)`, "CxResponder")).length === 1, "first answer recorded");
    const lines = await r.ckb.recall("Rex: second", { topK: 8, signal: new AbortController().signal, dm: dm({ messageId: "h2", text: "second" }) });
    expect(lines.slice(0, 2).sort()).toEqual(["Rex likes modal jazz", "Rex plays the upright bass"]);
    expect(lines).toContain(`Earlier in this conversation Rex wrote: first message tag1`);
    expect(lines.some((l) => l.startsWith("Earlier in this conversation I replied: "))).toBe(true);
    expect(lines.join("\n")).not.toContain("secret elsewhere");
    expect(lines.join("\n")).not.toContain("not about Rex");
    // topK bounds the answer and keeps history in it.
    const two = await r.ckb.recall("Rex: second", { topK: 2, signal: new AbortController().signal, dm: dm({ messageId: "h2", text: "second" }) });
    expect(two).toHaveLength(2);
    expect(two.every((l) => l.startsWith("Earlier"))).toBe(true);
  });
});

describe("catch-up", () => {
  it("takes unanswered DM nodes of trusted askers, skips processed, too old and over-count ones, and gates them like live DMs", async () => {
    const r = await rig({ catchup: { maxAgeMs: 100, maxCount: 2 } });
    // Posed while the responder is down (not started): by the trusted presence agent and by an untrusted one.
    const old = await poseQuery(r.presence, dmQuestion(dm({ messageId: "old", conversationId: "c9", text: "old tag9" })));
    await new Promise((res) => setTimeout(res, 300));
    const f1 = await poseQuery(r.presence, dmQuestion(dm({ messageId: "f1", conversationId: "c1", text: "one tag1" })));
    const f2 = await poseQuery(r.presence, dmQuestion(dm({ messageId: "f2", conversationId: "c2", text: "two tag2" })));
    const f3 = await poseQuery(r.presence, dmQuestion(dm({ messageId: "f3", conversationId: "c3", senderId: STRANGER, text: "three" })));
    const f4 = await poseQuery(r.presence, dmQuestion(dm({ messageId: "f4", conversationId: "c4", text: "four tag4" })));
    await poseQuery(r.stranger, dmQuestion(dm({ messageId: "forged", conversationId: "c5", text: "forged tag5" })));
    await poseQuery(r.presence, "(usesDatabase Prod Postgres)"); // not a DM
    // The age is the daemon's createdAt against the responder's clock: "old" is 300 ms older than the rest.
    r.clock.ms = r.kb.sentex(f1)!.createdAt + 50;
    expect(r.kb.sentex(f1)!.createdAt - r.kb.sentex(old)!.createdAt).toBeGreaterThanOrEqual(250);
    r.booted.processed.add("f1"); // processed before the crash (its answer never landed): never again
    r.service.start();
    await until(() => r.service.status().catchups === 1, "one catch-up");
    await until(() => r.service.status().inflight === 0, "recorded");
    expect(r.service.status().lastCatchup).toMatchObject({ found: 5, processed: 1, tooOld: 1, queued: 2, overCount: 1 });
    // The newest two (f3, f4) went through the gate: the stranger is escalated, the friend answered.
    expect(r.platform.sent.map((s) => s.text)).toEqual(["Thanks, I read tag4."]);
    expect(await r.medium.match(`(responderEscalation ${AGENT} (sentexHandle ${f3}) ?why)`, "CxResponder")).toHaveLength(1);
    expect(await answersTo(r.ckb.handle!, f4)).toHaveLength(1);
    // The forged node (untrusted asker) and the processed one are never answered.
    expect(await answersTo(r.ckb.handle!, f1)).toHaveLength(0);
    // The next catch-up drains what the count bound left: f2, and only f2.
    r.clock.ms = r.kb.sentex(f2)!.createdAt + 50;
    const outs = await r.service.catchUp();
    expect(outs).toEqual([expect.objectContaining({ action: "replied", messageId: "f2" })]);
    await until(async () => (await answersTo(r.ckb.handle!, f2)).length === 1, "f2 answered");
    expect(r.platform.sent.map((s) => s.text)).toEqual(["Thanks, I read tag4.", "Thanks, I read tag2."]);
    expect(r.service.status().lastCatchup).toMatchObject({ found: 3, processed: 1, tooOld: 1, queued: 1, overCount: 0 });
    const audit = verifyAudit(r.booted.audit.path);
    expect(audit.ok).toBe(true);
  });
});

describe("the loopback HTTP surface", () => {
  const SECRET = "responder-test-secret-0123456789";
  const auth = { authorization: `Bearer ${SECRET}` };

  it("POST /dm ingests, GET /status answers, bad bodies are refused, and only loopback peers are served", async () => {
    const seen: Dm[] = [];
    const http = await startHttp({ host: "127.0.0.1", port: 0, secret: SECRET, ingest: async (d) => (seen.push(d), { query: 42 }), status: () => ({ ok: true, x: 1 }), log: () => undefined });
    onTestFinished(() => http.close());
    const post = (body: string, ct = "application/json") => request(`${http.url}/dm`, { method: "POST", body, headers: { "content-type": ct, ...auth } });
    const ok = await post(JSON.stringify({ conversationId: "c1", messageId: "m1", senderId: FRIEND, senderName: "Rex", text: "hi" }));
    expect(ok.statusCode).toBe(202);
    expect(await ok.body.json()).toEqual({ ok: true, query: 42, message_id: "m1" });
    expect(seen).toHaveLength(1);
    expect((await post("{")).statusCode).toBe(400);
    expect((await post(JSON.stringify({ text: "no ids" }))).statusCode).toBe(400);
    expect((await post("{}", "text/plain")).statusCode).toBe(415);
    expect((await post(JSON.stringify({ conversationId: "c", senderId: "s", text: "x".repeat(300_000) }))).statusCode).toBe(413);
    const st = await request(`${http.url}/status`, { headers: auth });
    expect(st.statusCode).toBe(200);
    expect(await st.body.json()).toEqual({ ok: true, x: 1 });
    expect((await request(`${http.url}/nope`, { headers: auth })).statusCode).toBe(404);
    expect(isLoopbackAddress("127.0.0.1")).toBe(true);
    expect(isLoopbackAddress("::ffff:127.0.0.1")).toBe(true);
    expect(isLoopbackAddress("::1")).toBe(true);
    expect(isLoopbackAddress("10.0.0.1")).toBe(false);
    expect(isLoopbackAddress("::ffff:192.168.1.2")).toBe(false);
    expect(isLoopbackAddress(undefined)).toBe(false);
    await expect(startHttp({ host: "0.0.0.0", port: 0, secret: SECRET, ingest: async () => ({ query: 1 }), status: () => ({}), log: () => undefined })).rejects.toThrow(/loopback only/);
  });

  it("a client still sending an over-limit /dm body reads its 413, never a reset", async () => {
    const http = await startHttp({ host: "127.0.0.1", port: 0, secret: SECRET, ingest: async () => ({ query: 1 }), status: () => ({}), log: () => undefined });
    onTestFinished(() => http.close());
    const { port } = new URL(http.url);
    const total = 1_000_000;
    const { answer, errors, sent } = await sendPastAnswer(Number(port), `POST /dm HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${SECRET}\r\nContent-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`, total, 50_000, 2);
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(errors).toEqual([]);
    expect(sent).toBe(total);
  });

  it("takes no caller's word for a sender without the secret (401), nor under a foreign Host (421): nothing is ingested", async () => {
    const seen: Dm[] = [];
    const http = await startHttp({ host: "127.0.0.1", port: 0, secret: SECRET, ingest: async (d) => (seen.push(d), { query: 42 }), status: () => ({ ok: true }), log: () => undefined });
    onTestFinished(() => http.close());
    const dm = JSON.stringify({ conversationId: "c1", messageId: "m1", senderId: FRIEND, senderName: "Rex", text: "hi" });
    for (const authorization of ["", "Bearer wrong-secret-0123456789", `Basic ${SECRET}`, `Bearer ${SECRET}x`]) {
      const r = await request(`${http.url}/dm`, { method: "POST", body: dm, headers: { "content-type": "application/json", authorization } });
      expect([authorization, r.statusCode, ((await r.body.json()) as { type: string }).type]).toEqual([authorization, 401, "unauthorized"]);
    }
    expect((await request(`${http.url}/status`)).statusCode).toBe(401);
    const port = Number(new URL(http.url).port);
    for (const host of [`evil.example:${port}`, "evil.example", `localhost:${port + 1}`]) {
      const a = await rawExchange(port, `POST /dm HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${SECRET}\r\nContent-Type: application/json\r\nContent-Length: ${dm.length}\r\nConnection: close\r\n\r\n${dm}`);
      expect([host, /^HTTP\/1\.1 (\d+)/.exec(a)?.[1]]).toEqual([host, "421"]);
      expect(a).toContain('"type":"misdirected"');
    }
    expect(seen).toEqual([]);
  });
});
