import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DeterministicComposer } from "../../../src/agents/composer/index.js";
import { type AuditRecord, type Dm, type LoadedCharter, Responder, bootResponder, verifyAudit } from "../../../src/agents/responder/index.js";
import { FRIEND, FRIEND2, NOON, STRANGER, charter, dm, tmp } from "./helpers.js";
import { EchoTagComposer, FakeClock, FakeKb, FakePlatform } from "./fakes.js";

function setup(c = charter(), dir = tmp()) {
  const clock = new FakeClock(NOON);
  const kb = new FakeKb();
  const platform = new FakePlatform(clock);
  const composer = new EchoTagComposer();
  const loaded: LoadedCharter = { charter: c, sha256: "b".repeat(64), path: "(test)" };
  const boot = () => bootResponder({ dataDir: dir, loaded, kb, platform, composer, clock, ownSenderId: "bot-self" });
  const records = (): AuditRecord[] => readFileSync(join(dir, "audit.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as AuditRecord);
  return { clock, kb, platform, composer, dir, boot, records, b: boot() };
}

describe("Responder", () => {
  it("replies to a friend: composes from recall and thread, sends, audits sending then sent", async () => {
    const t = setup();
    t.platform.threads.set("c1", [{ id: "m1", senderId: FRIEND, from: "Rex", text: "hello there tag1" }]);
    expect(await t.b.responder.handle(dm({ text: "hello there tag1" }))).toEqual({ action: "replied", messageId: "m1", chars: 20, text: expect.any(String) });
    expect(t.platform.sent).toEqual([{ conversationId: "c1", text: "Thanks, I read tag1.", atMs: NOON }]);
    expect(t.composer.requests[0]).toMatchObject({ purpose: "dm-reply", recall: ["Rex likes jazz"], history: [], message: "hello there tag1", correspondent: "Rex" });
    expect(t.kb.queries).toEqual(["Rex: hello there tag1"]);
    expect(t.records().map((r) => r.action)).toEqual(["daemon_started", "reply_sending", "reply_sent"]);
    expect(t.records()[2]!.detail).toMatchObject({ message_id: "m1", text: "Thanks, I read tag1." });
    expect(t.b.responder.status()).toMatchObject({ seen: 1, replied: 1, escalated: 0, today: { replies: 1, perConversation: { c1: 1 } } });
  });

  it("R18: the thread handed to the composer holds only earlier lines that were answered, across a restart", async () => {
    const t = setup();
    const line = (id: string, text: string, senderId = FRIEND) => ({ id, senderId, from: senderId === FRIEND ? "Rex" : "Mallory", text });
    t.platform.threads.set("c1", [line("m1", "hello there tag1")]);
    await t.b.responder.handle(dm({ messageId: "m1", text: "hello there tag1" }));
    await t.b.responder.handle(dm({ messageId: "m2", text: "what about the deal tag2" })); // escalated: keyword
    await t.b.stop("SIGTERM");
    const b = t.boot();
    t.clock.advance(3600_000);
    t.platform.threads.set("c1", [
      line("m1", "hello there tag1"),
      line("m2", "what about the deal tag2"),
      line("x1", "click http://phish.example now", STRANGER),
      line("m3", "and now? tag3"),
      line("m4", "a later line tag4"),
    ]);
    expect(await b.responder.handle(dm({ messageId: "m3", text: "and now? tag3" }))).toMatchObject({ action: "replied" });
    expect(t.composer.requests.at(-1)!.history).toEqual([{ from: "Rex", text: "hello there tag1" }]);
  });

  it("escalates a stranger visibly: audit record, KB notice, no reply, marked processed", async () => {
    const t = setup();
    const d = dm({ senderId: STRANGER, messageId: "s1" });
    expect(await t.b.responder.handle(d)).toEqual({ action: "escalated", reason: "sender_not_allowlisted" });
    expect(await t.b.responder.handle(d)).toEqual({ action: "dropped", reason: "duplicate" });
    await new Promise((r) => setImmediate(r));
    expect(t.platform.sent).toHaveLength(0);
    expect(t.kb.notices).toEqual([expect.objectContaining({ reason: "sender_not_allowlisted", senderId: STRANGER, messageId: "s1" })]);
    expect(t.records()[1]).toMatchObject({ action: "escalated", detail: { reason: "sender_not_allowlisted", from: STRANGER, message_id: "s1" } });
  });

  it("drops its own echoes and non-DMs, and audits the drop", async () => {
    const t = setup();
    expect(await t.b.responder.handle(dm({ senderId: "bot-self" }))).toEqual({ action: "dropped", reason: "own_echo" });
    expect(await t.b.responder.handle(null)).toEqual({ action: "dropped", reason: "not_a_dm" });
    expect(t.records().slice(1).map((r) => [r.action, r.detail.reason])).toEqual([["dropped", "own_echo"], ["dropped", "not_a_dm"]]);
  });

  it("a disabled charter drops everything, strangers and keywords included", async () => {
    const t = setup(charter({ enabled: false }));
    expect(await t.b.responder.handle(dm({ senderId: STRANGER, text: "deal" }))).toEqual({ action: "dropped", reason: "charter_disabled" });
    expect(t.platform.sent).toHaveLength(0);
  });

  it("R5: a keyword past the event's truncation, found in the full text, escalates", async () => {
    const t = setup();
    const short = "a".repeat(50) + " tag2";
    t.platform.threads.set("c1", [{ id: "m1", senderId: FRIEND, from: "Rex", text: short + " and then, about that money" }]);
    expect(await t.b.responder.handle(dm({ text: short }))).toEqual({ action: "escalated", reason: "keyword:money" });
    expect(t.platform.sent).toHaveLength(0);
  });

  it("R5: the full text from the thread is what gets answered", async () => {
    const t = setup();
    t.platform.threads.set("c1", [{ id: "m1", senderId: FRIEND, from: "Rex", text: "cut tag3 and the rest of it" }]);
    await t.b.responder.handle(dm({ text: "cut tag3" }));
    expect(t.composer.requests[0].message).toBe("cut tag3 and the rest of it");
  });

  it("R5: a long event text whose full version cannot be read escalates instead of answering a fragment", async () => {
    const t = setup();
    t.platform.failThread = true;
    expect(await t.b.responder.handle(dm({ text: "x ".repeat(100) }))).toEqual({ action: "escalated", reason: "full_text_unavailable" });
    expect(await t.b.responder.handle(dm({ messageId: "m2", text: "short one" }))).toMatchObject({ action: "replied" });
  });

  it("R4: a burst of concurrent DMs never passes a cap", async () => {
    const t = setup(charter({}, { max_replies_per_day: 10, max_replies_per_conversation_per_day: 2, min_gap_seconds_per_conversation: 0 }));
    const outs = await Promise.all(Array.from({ length: 8 }, (_, i) => t.b.responder.handle(dm({ messageId: `b${i}`, text: `hi tag${i}` }))));
    expect(outs.filter((o) => o.action === "replied")).toHaveLength(2);
    expect(outs.slice(2).every((o) => o.action === "escalated" && o.reason === "conversation_cap")).toBe(true);
    expect(t.platform.sent).toHaveLength(2);
  });

  it("a full queue escalates queue_full instead of waiting without bound", async () => {
    const t = setup();
    const r = new Responder(
      { kb: t.kb, platform: t.platform, composer: t.composer, audit: t.b.audit, clock: t.clock, processed: t.b.processed },
      { charter: charter(), maxQueued: 2 },
    );
    const outs = await Promise.all(Array.from({ length: 5 }, (_, i) => r.handle(dm({ messageId: `q${i}`, conversationId: `c${i}`, text: "hi" }))));
    expect(outs.filter((o) => o.action === "escalated" && o.reason === "queue_full").length).toBeGreaterThan(0);
    expect(outs.filter((o) => o.action === "replied").length).toBeGreaterThan(0);
  });

  it.each([
    ["compose fails", (t: ReturnType<typeof setup>) => (t.composer.reply = () => { throw new Error("model down"); }), "compose_failed"],
    ["the guard strips everything", (t: ReturnType<typeof setup>) => (t.composer.reply = () => "I'll send you 5 credits. I promise."), "guard_refused"],
    ["the send fails", (t: ReturnType<typeof setup>) => (t.platform.failSend = () => true), "send_failed"],
  ])("%s: escalates, nothing reaches the platform", async (_n, arrange, reason) => {
    const t = setup();
    arrange(t);
    expect(await t.b.responder.handle(dm())).toEqual({ action: "escalated", reason });
    expect(t.platform.sent).toHaveLength(0);
    expect(verifyAudit(join(t.dir, "audit.jsonl")).ok).toBe(true);
  });

  it("a failed send still counts against the caps and is not retried on redelivery (at most once)", async () => {
    const t = setup(charter({}, { max_replies_per_conversation_per_day: 1 }));
    t.platform.failSend = () => true;
    await t.b.responder.handle(dm());
    t.platform.failSend = () => false;
    t.clock.advance(3600_000);
    expect(await t.b.responder.handle(dm())).toEqual({ action: "dropped", reason: "duplicate" });
    expect(await t.b.responder.handle(dm({ messageId: "m2" }))).toEqual({ action: "escalated", reason: "conversation_cap" });
  });

  it("the guard removes a promise from a composed reply before it is sent", async () => {
    const t = setup();
    t.composer.reply = () => "Good to hear from you. I will pay you tomorrow. Take care.";
    await t.b.responder.handle(dm());
    expect(t.platform.sent[0].text).toBe("Good to hear from you. Take care.");
  });

  it("a reply is clamped to the charter's max_reply_chars", async () => {
    const t = setup(charter({}, { max_reply_chars: 30 }));
    t.composer.reply = () => "This is the first sentence. And this is a second one that is long.";
    await t.b.responder.handle(dm());
    expect(t.platform.sent[0].text).toBe("This is the first sentence.");
  });

  it("a DM without a message id is escalated, never answered (it could not be deduplicated)", async () => {
    const t = setup();
    expect(await t.b.responder.handle(dm({ messageId: null }))).toEqual({ action: "escalated", reason: "missing_message_id" });
  });

  it("a failing recall still lets a modest reply through (the deterministic composer says it remembers nothing)", async () => {
    const t = setup();
    const b = bootResponder({ dataDir: tmp(), loaded: { charter: charter(), sha256: "c".repeat(64), path: "x" }, kb: t.kb, platform: t.platform, composer: new DeterministicComposer(), clock: t.clock });
    t.kb.failRecall = true;
    expect(await b.responder.handle(dm())).toMatchObject({ action: "replied" });
    expect(t.platform.sent[0].text).toContain("Nothing I remember");
  });

  it("R8: after a restart, counters, min-gap and processed ids come back from the audit and dedup files", async () => {
    const t = setup(charter({}, { max_replies_per_day: 2, max_replies_per_conversation_per_day: 2, min_gap_seconds_per_conversation: 600 }));
    await t.b.responder.handle(dm({ messageId: "r1", conversationId: "c1" }));
    await t.b.responder.handle(dm({ messageId: "x1", senderId: STRANGER }));
    await t.b.stop("SIGTERM");
    t.clock.advance(60_000);
    const again = t.boot();
    expect(await again.responder.handle(dm({ messageId: "r1", conversationId: "c1" }))).toEqual({ action: "dropped", reason: "duplicate" });
    expect(await again.responder.handle(dm({ messageId: "x1", senderId: STRANGER }))).toEqual({ action: "dropped", reason: "duplicate" });
    expect(await again.responder.handle(dm({ messageId: "r2", conversationId: "c1" }))).toEqual({ action: "escalated", reason: "min_gap" });
    expect(await again.responder.handle(dm({ messageId: "r3", conversationId: "c2", senderId: FRIEND2 }))).toMatchObject({ action: "replied" });
    expect(await again.responder.handle(dm({ messageId: "r4", conversationId: "c3" }))).toEqual({ action: "escalated", reason: "daily_cap" });
    const actions = t.records().map((r) => r.action);
    expect(actions.filter((a) => a === "daemon_started")).toHaveLength(2);
    expect(actions).toContain("daemon_stopped");
    expect(verifyAudit(join(t.dir, "audit.jsonl")).ok).toBe(true);
  });

  it("R8: a crash after reply_sending but before the dedup write still blocks a redelivery", async () => {
    const t = setup();
    let crashed: Dm | null = null;
    t.platform.failSend = () => {
      crashed = dm();
      return true;
    };
    await t.b.responder.handle(dm());
    expect(crashed).not.toBeNull();
    // Simulate losing the dedup file entirely: the audit alone must carry the id.
    t.b.audit.close();
    t.b.processed.close();
    const { rmSync } = await import("node:fs");
    rmSync(join(t.dir, "processed.jsonl"));
    const again = t.boot();
    expect(await again.responder.handle(dm())).toEqual({ action: "dropped", reason: "duplicate" });
  });
});
