import { describe, expect, it } from "vitest";
import { guardReply, promiseIn, sendable } from "../../../src/agents/composer/index.js";

describe("guard: promises of work, money, deadlines or commitments are removed", () => {
  it.each([
    ["I'll send you the files tomorrow.", "first_person_commitment"],
    ["We can build that for you.", "first_person_commitment"],
    ["I am going to pay you back.", "first_person_commitment"],
    ["I will definitely get it done.", "first_person_commitment"],
    ["I’d be glad to. I’ll review your draft.", "first_person_commitment"],
    ["I promise.", "explicit_promise"],
    ["You have my word.", "explicit_promise"],
    ["It's a deal!", "explicit_promise"],
    ["That costs $50.", "money"],
    ["Send 20 credits.", "money"],
    ["The payment is sorted.", "money"],
    ["Done by Friday.", "deadline"],
  ])("%j is a promise (%s)", (s, kind) => {
    expect(promiseIn(s)).toBe(kind);
  });
  it.each([
    "Lovely to hear from you.",
    "I remember our talk about jazz.",
    "A studio session will follow up on anything that needs more.",
    "I can't promise anything here.",
    "I am the bounded responder.",
    "I will keep this short.",
  ])("%j is not a promise", (s) => {
    expect(promiseIn(s)).toBeNull();
  });
  it("strips promising sentences and keeps the rest", () => {
    expect(guardReply("Lovely to hear from you. I'll send you 50 credits tomorrow. Talk soon!", 500)).toEqual({
      ok: true,
      text: "Lovely to hear from you. Talk soon!",
      removed: ["I'll send you 50 credits tomorrow."],
    });
  });
  it("refuses when every sentence promised something", () => {
    expect(guardReply("I'll do it. I promise.", 500)).toMatchObject({ ok: false, reason: "all_sentences_removed" });
    expect(guardReply("   ", 500)).toMatchObject({ ok: false, reason: "empty" });
  });
  it("clamps what is left at a sentence boundary", () => {
    const r = guardReply("First sentence here. Second sentence is longer than the rest.", 30);
    expect(r).toMatchObject({ ok: true, text: "First sentence here." });
  });
});

describe("guard: what is sent is sendable", () => {
  it("strips NUL, control characters and lone surrogates, and keeps tabs, newlines and well-formed pairs", () => {
    expect(sendable("a\u0000b\uD800c\uDC00d\u0007e\u007Ff\t\n\u{1F600}")).toBe("abcdef\t\n\u{1F600}");
    const g = guardReply("Hello\u0000 there\uDFFF. Nice \uD83D\uDE00 day.", 500);
    expect(g).toEqual({ ok: true, text: "Hello there. Nice \u{1F600} day.", removed: [] });
  });
});
