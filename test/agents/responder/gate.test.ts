import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type GateVerdict,
  type RateState,
  clampReply,
  emptyRateState,
  extractDm,
  gateDecision,
  recordReply,
  rollDay,
  utcDay,
} from "../../../src/agents/responder/index.js";
import { FRIEND, NOON, STRANGER, charter, dm } from "./helpers.js";

const fresh = emptyRateState(NOON);
const withReplies = (n: number, convo = "c1", at = NOON - 10 * 60_000): RateState => {
  let s = fresh;
  for (let i = 0; i < n; i++) s = recordReply(s, i === 0 ? convo : `other-${i}`, at);
  return s;
};

describe("gateDecision: first match wins, in the original's order", () => {
  const on = charter();
  const cases: [string, Parameters<typeof gateDecision>, GateVerdict][] = [
    ["charter null drops", [null, dm(), fresh, NOON], { action: "drop", reason: "charter_disabled" }],
    ["disabled charter drops, before anything else", [charter({ enabled: false }), dm({ senderId: STRANGER, text: "deal" }), fresh, NOON], { action: "drop", reason: "charter_disabled" }],
    ["charter without enabled drops", [charter({ enabled: undefined }), dm(), fresh, NOON], { action: "drop", reason: "charter_disabled" }],
    ["not a DM drops", [on, null, fresh, NOON], { action: "drop", reason: "not_a_dm" }],
    ["stranger escalates, even with a keyword", [on, dm({ senderId: STRANGER, text: "deal" }), fresh, NOON], { action: "escalate", reason: "sender_not_allowlisted" }],
    ["friend with a keyword escalates", [on, dm({ text: "got MONEY?" }), fresh, NOON], { action: "escalate", reason: "keyword:money" }],
    ["keyword beats the daily cap", [on, dm({ text: "a deal" }), withReplies(12), NOON], { action: "escalate", reason: "keyword:deal" }],
    ["daily cap", [on, dm(), withReplies(12), NOON], { action: "escalate", reason: "daily_cap" }],
    ["daily cap beats conversation cap", [charter({}, { max_replies_per_day: 1, max_replies_per_conversation_per_day: 1 }), dm(), withReplies(1), NOON], { action: "escalate", reason: "daily_cap" }],
    ["conversation cap", [charter({}, { max_replies_per_conversation_per_day: 1 }), dm(), withReplies(1), NOON], { action: "escalate", reason: "conversation_cap" }],
    ["conversation cap beats min gap", [charter({}, { max_replies_per_conversation_per_day: 1 }), dm(), withReplies(1, "c1", NOON - 1000), NOON], { action: "escalate", reason: "conversation_cap" }],
    ["min gap: one ms short", [on, dm(), withReplies(1, "c1", NOON - 120_000 + 1), NOON], { action: "escalate", reason: "min_gap" }],
    ["min gap: exactly elapsed replies", [on, dm(), withReplies(1, "c1", NOON - 120_000), NOON], { action: "reply", reason: "allowlisted" }],
    ["min gap: the clock went back", [charter({}, { min_gap_seconds_per_conversation: 0 }), dm(), withReplies(1, "c1", NOON + 5), NOON], { action: "escalate", reason: "min_gap" }],
    ["min gap is per conversation", [on, dm({ conversationId: "c2" }), withReplies(1, "c1", NOON - 1), NOON], { action: "reply", reason: "allowlisted" }],
    ["a friend, quiet day, replies", [on, dm(), fresh, NOON], { action: "reply", reason: "allowlisted" }],
    ["a daily cap of 0 means no replies at all", [charter({}, { max_replies_per_day: 0 }), dm(), fresh, NOON], { action: "escalate", reason: "daily_cap" }],
    ["a conversation cap of 0 means no replies", [charter({}, { max_replies_per_conversation_per_day: 0 }), dm(), fresh, NOON], { action: "escalate", reason: "conversation_cap" }],
    ["yesterday's full counters do not bind today (the gate rolls the day)", [on, dm(), withReplies(12, "c9", NOON - 24 * 3600_000), NOON], { action: "reply", reason: "allowlisted" }],
    ["min gap holds across midnight", [on, dm(), withReplies(1, "c1", Date.UTC(2026, 6, 18, 23, 59, 30)), Date.UTC(2026, 6, 19, 0, 0, 30)], { action: "escalate", reason: "min_gap" }],
  ];
  it.each(cases)("%s", (_name, args, want) => {
    expect(gateDecision(...args)).toEqual(want);
  });
});

describe("rollDay and recordReply", () => {
  it("the same UTC day returns the very same state object", () => {
    expect(rollDay(fresh, NOON + 3600_000)).toBe(fresh);
  });
  it("a new UTC day zeroes the counters and keeps lastReplyAt", () => {
    const s = recordReply(fresh, "c1", NOON);
    const next = rollDay(s, Date.UTC(2026, 6, 19, 0, 0, 0));
    expect(next.day).toBe("2026-07-19");
    expect(next.repliesToday).toBe(0);
    expect(next.perConversationToday.size).toBe(0);
    expect(next.lastReplyAtMs.get("c1")).toBe(NOON);
  });
  it("the day key is UTC, not local time", () => {
    expect(utcDay(Date.UTC(2026, 0, 1, 23, 59, 59, 999))).toBe("2026-01-01");
    expect(utcDay(Date.UTC(2026, 0, 2))).toBe("2026-01-02");
  });
  it("recordReply counts per conversation and overall, and leaves its input untouched", () => {
    const a = recordReply(fresh, "c1", NOON);
    const b = recordReply(a, "c1", NOON + 1);
    const c = recordReply(b, "c2", NOON + 2);
    expect([c.repliesToday, c.perConversationToday.get("c1"), c.perConversationToday.get("c2"), c.lastReplyAtMs.get("c1")]).toEqual([3, 2, 1, NOON + 1]);
    expect(fresh.repliesToday).toBe(0);
    expect(a.perConversationToday.get("c1")).toBe(1);
  });
  it("a conversation named __proto__ is just a key", () => {
    const s = recordReply(fresh, "__proto__", NOON);
    expect(s.perConversationToday.get("__proto__")).toBe(1);
    expect(gateDecision(charter({}, { max_replies_per_conversation_per_day: 1 }), dm({ conversationId: "__proto__" }), s, NOON + 10 * 60_000)).toEqual({ action: "escalate", reason: "conversation_cap" });
  });
});

describe("clampReply", () => {
  it.each([
    ["fits: trimmed only", "  Hello.  ", 100, "Hello."],
    ["cut after the last sentence past half", "Hello there. How are you today?", 20, "Hello there."],
    ["a sentence end before half is ignored: cut at a space", "Hi. This is a rather long second sentence", 20, "Hi. This is a rather"],
    ["no space at all: hard cut", "abcdefghijklmnopqrstuvwxyz", 10, "abcdefghij"],
    ["punctuation not followed by space is not a boundary", "v1.2.3 is out now ok", 12, "v1.2.3 is"],
    ["a boundary right at the limit counts", "Twelve char. Rest", 12, "Twelve char."],
    ["! and ? count", "Wow! Really? Yes indeed friend", 14, "Wow! Really?"],
    ["0 gives empty", "anything", 0, ""],
    ["never splits a surrogate pair", "😀😀😀😀", 3, "😀😀😀"],
  ])("%s", (_n, text, max, want) => {
    expect(clampReply(text, max)).toBe(want);
  });
  it("never exceeds the bound and always returns a prefix of the trimmed text (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 300 }), fc.nat(200), (text, max) => {
        const out = clampReply(text, max);
        expect(Array.from(out).length).toBeLessThanOrEqual(max);
        expect(text.trim().startsWith(out)).toBe(true);
      }),
    );
  });
});

describe("extractDm", () => {
  const ev = (obc: Record<string, unknown>) => ({ obc: { eventType: "dm_message", from: { id: FRIEND, name: "Rex" }, metadata: { conversation_id: "c1", messageId: "m1" }, text: "hi", ...obc } });
  it("reads the original's field names, both spellings", () => {
    expect(extractDm(ev({}))).toEqual({ senderId: FRIEND, senderName: "Rex", conversationId: "c1", messageId: "m1", text: "hi" });
    expect(extractDm(ev({ metadata: { conversationId: "c2", message_id: "m2" } }))).toMatchObject({ conversationId: "c2", messageId: "m2" });
    expect(extractDm(ev({ from: { id: FRIEND } }))?.senderName).toBe("?");
    expect(extractDm(ev({ metadata: { conversation_id: "c1" } }))?.messageId).toBeNull();
  });
  it.each([
    ["another event type", { eventType: "zone_chat" }],
    ["no sender id", { from: { name: "x" } }],
    ["no conversation", { metadata: { messageId: "m" } }],
    ["text not a string", { text: 5 }],
  ])("%s gives null", (_n, over) => {
    expect(extractDm(ev(over))).toBeNull();
  });
  it("non-objects give null", () => {
    for (const v of [null, undefined, 3, "x", [], { obc: null }]) expect(extractDm(v)).toBeNull();
  });
});
