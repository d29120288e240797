import { describe, expect, it } from "vitest";
import { CONFIG, CTX, msg, type MsgSpec } from "./fixtures.js";
import { DRAFT_REASONS, REFUSALS, decide, priorContacts, type PolicyInput, type Receipt } from "../../../src/agents/mail/index.js";

const NOW = "2026-09-25T12:00:00Z";
const NO_AUTH = "mx.zoho.com; dkim=fail header.d=example.org; spf=softfail smtp.mailfrom=x@example.org";

function receipt(to: string, created_at = "2026-09-25T08:00:00Z", over: Partial<Receipt> = {}): Receipt {
  return { key: `${to}${created_at}` as Receipt["key"], account: "zoho", thread_id: "t:1", message_id: "<x@y>", to: [to], asks: false, created_at, status: "submitted", attempts: 1, ...over };
}

function input(spec: Partial<MsgSpec>, over: Partial<PolicyInput> = {}): PolicyInput {
  return {
    intent: { kind: "reply", target: msg({ id: "a", ...spec }).ref },
    account: "zoho",
    ctx: CTX,
    policy: CONFIG.policy,
    receipts: [],
    contacts: new Set(["vincent@example.org"]),
    draft: false,
    now: NOW,
    ...over,
  };
}

describe("the reply policy (one decision, typed reasons)", () => {
  it.each([
    ["a verified known person", {}, {}, { verdict: "send" }],
    ["no sender", { from: "undisclosed-recipients:;" }, {}, { verdict: "refuse", reason: "no-sender" }],
    ["one of our own addresses", { from: "kannaka@spacechild.love" }, {}, { verdict: "refuse", reason: "own-address" }],
    ["an internal domain (agent to agent)", { from: "rogue@ninja-portal.com" }, {}, { verdict: "refuse", reason: "own-address" }],
    ["a bounce", { from: "MAILER-DAEMON@mx.example.org" }, {}, { verdict: "refuse", reason: "bounce", detail: "sender mailer-daemon" }],
    ["an empty Return-Path", { extra: { "Return-Path": "<>", "Authentication-Results": "mx.zoho.com; dmarc=pass" } }, {}, { verdict: "refuse", reason: "bounce" }],
    ["a list", { extra: { "List-Id": "<l.example.org>", "Authentication-Results": "mx.zoho.com; dmarc=pass" } }, {}, { verdict: "refuse", reason: "list" }],
    ["a robot", { from: "noreply@example.org" }, {}, { verdict: "refuse", reason: "robot" }],
    ["an auto-reply (no reply to a reply: loops)", { extra: { "Auto-Submitted": "auto-replied", "Authentication-Results": "mx.zoho.com; dmarc=pass" } }, {}, { verdict: "refuse", reason: "robot" }],
    ["an unverified sender", { extra: { "Authentication-Results": NO_AUTH } }, {}, { verdict: "refuse", reason: "unverified", detail: "spf=softfail dkim=fail dmarc=none" }],
    ["per-sender cap", {}, { receipts: [receipt("vincent@example.org"), receipt("vincent@example.org", "2026-09-25T09:00:00Z")] }, { verdict: "refuse", reason: "sender-cap", detail: "2/2 to vincent@example.org today" }],
    ["yesterday's replies do not count", {}, { receipts: [receipt("vincent@example.org", "2026-09-24T23:59:59Z"), receipt("vincent@example.org", "2026-09-24T10:00:00Z")] }, { verdict: "send" }],
    ["another account's replies do not count", {}, { receipts: [receipt("vincent@example.org", NOW, { account: "np" }), receipt("vincent@example.org", NOW, { account: "np" })] }, { verdict: "send" }],
    ["per-day cap", {}, { receipts: Array.from({ length: 20 }, (_, i) => receipt(`p${i}@x.org`)) }, { verdict: "refuse", reason: "day-cap", detail: "20/20 today" }],
    ["pending receipts count toward caps", {}, { receipts: [receipt("vincent@example.org", NOW, { status: "pending" }), receipt("vincent@example.org", NOW, { status: "held" })] }, { verdict: "refuse", reason: "sender-cap" }],
    ["--draft", {}, { draft: true }, { verdict: "draft", reason: "draft-mode" }],
    ["first contact is draft-only by default", {}, { contacts: new Set<string>() }, { verdict: "draft", reason: "first-contact" }],
    ["first contact may be sent when the config says so", {}, { contacts: new Set<string>(), policy: { ...CONFIG.policy, first_contact: "send" as const } }, { verdict: "send" }],
    ["a refusal wins over --draft", { from: "noreply@example.org" }, { draft: true }, { verdict: "refuse", reason: "robot" }],
  ] as [string, Partial<MsgSpec>, Partial<PolicyInput>, object][])("%s", (_name, spec, over, expected) => {
    expect(decide(input(spec, over))).toMatchObject(expected);
  });

  it("a new thread skips the inbound checks but keeps caps, own-address and first contact", () => {
    const base = input({}, {});
    expect(decide({ ...base, intent: { kind: "new", to: "Vincent@Example.org" } })).toEqual({ verdict: "send" });
    expect(decide({ ...base, intent: { kind: "new", to: "new@example.org" } })).toEqual({ verdict: "draft", reason: "first-contact" });
    expect(decide({ ...base, intent: { kind: "new", to: "rogue@ninja-portal.com" } })).toMatchObject({ verdict: "refuse", reason: "own-address" });
    expect(decide({ ...base, intent: { kind: "new", to: "not an address" } })).toMatchObject({ verdict: "refuse", reason: "no-sender" });
  });

  it("every reason has its why in one table", () => {
    expect(Object.keys(REFUSALS)).toEqual(["no-sender", "own-address", "bounce", "list", "robot", "unverified", "sender-cap", "day-cap"]);
    expect(Object.keys(DRAFT_REASONS)).toEqual(["draft-mode", "first-contact"]);
  });

  it("prior contacts come from Sent refs and confirmed receipts only", () => {
    const sent = msg({ id: "s", role: "sent", to: "A <a@x.org>", cc: "kannaka@spacechild.love" }).ref;
    const inbox = msg({ id: "i", from: "b@x.org" }).ref;
    const contacts = priorContacts([sent, inbox], [receipt("c@x.org"), receipt("d@x.org", NOW, { status: "pending" })], CTX);
    expect([...contacts].sort()).toEqual(["a@x.org", "c@x.org"]);
  });
});
