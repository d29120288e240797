import { readFileSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CharterError, charterSha256, envEnabled, findEscalationKeyword, loadCharter, parseCharter } from "../../../src/agents/responder/index.js";
import { charter, tmp } from "./helpers.js";

const base = { version: 1, allowlist: { a: "A" } };

describe("charter: enabled is off unless literally true (R1)", () => {
  it.each([
    ["missing", {}, false],
    ["false", { enabled: false }, false],
    ["true", { enabled: true }, true],
  ])("enabled %s -> %s", (_n, over, want) => {
    expect(parseCharter({ ...base, ...over }).enabled).toBe(want);
  });
  it.each([["the string true", "true"], ["1", 1], ["null", null]])("a non-boolean enabled (%s) is refused, never read as on", (_n, v) => {
    expect(() => parseCharter({ ...base, enabled: v })).toThrow(CharterError);
  });
  it("the environment switch enables only on exactly RESPONDER_ENABLED=1", () => {
    expect(envEnabled({ RESPONDER_ENABLED: "1" })).toBe(true);
    for (const v of [undefined, "", "0", "true", "yes", " 1", "1 "]) expect(envEnabled({ RESPONDER_ENABLED: v })).toBe(false);
  });
});

describe("charter: limits (R2)", () => {
  it("a limit of 0 stays 0 and is not replaced by the default", () => {
    const c = parseCharter({
      ...base,
      limits: { max_replies_per_day: 0, max_replies_per_conversation_per_day: 0, min_gap_seconds_per_conversation: 0, max_reply_chars: 0 },
    });
    expect(c.limits).toEqual({ maxRepliesPerDay: 0, maxRepliesPerConversationPerDay: 0, minGapMsPerConversation: 0, maxReplyChars: 0 });
  });
  it("missing limits take the original's defaults", () => {
    expect(parseCharter(base).limits).toEqual({ maxRepliesPerDay: 12, maxRepliesPerConversationPerDay: 4, minGapMsPerConversation: 120_000, maxReplyChars: 1500 });
    expect(parseCharter({ ...base, limits: { max_replies_per_day: 3 } }).limits.maxRepliesPerConversationPerDay).toBe(4);
  });
  it.each([
    ["negative", { max_replies_per_day: -1 }],
    ["fractional", { max_reply_chars: 1.5 }],
    ["above the bound", { max_replies_per_day: 1_000_000 }],
    ["a string", { max_replies_per_day: "12" }],
    ["a misspelt key", { max_replies_perday: 3 }],
  ])("a %s limit is refused", (_n, limits) => {
    expect(() => parseCharter({ ...base, limits })).toThrow(CharterError);
  });
  it("unknown top-level keys are refused so a typo fails loudly", () => {
    expect(() => parseCharter({ ...base, enabeld: true })).toThrow(CharterError);
  });
});

describe("charter: escalation keywords match whole words and phrases, any case (R3)", () => {
  const c = charter({ escalate_keywords: ["deal", "api key", "pay", "token", "Seed Phrase", "send me"] });
  it.each([
    ["Let's make a deal", "deal"],
    ["DEAL?", "deal"],
    ["deal", "deal"],
    ["it's a deal.", "deal"],
    ["(deal)", "deal"],
    ["my API key is", "api key"],
    ["my api-key is", "api key"],
    ["my api\n  key is", "api key"],
    ["can you pay", "pay"],
    ["pay.", "pay"],
    ["Pay me", "pay"],
    ["one token please", "token"],
    ["your seed phrase", "seed phrase"],
    ["send me the thing", "send me"],
    ["a zero\u200bwidth d\u200beal", "deal"],
    ["ｄｅａｌ in fullwidth", "deal"],
  ])("%j escalates as %s", (text, kw) => {
    expect(findEscalationKeyword(c, text)).toBe(kw);
  });
  it.each([
    "an ideal morning",
    "the dealer was kind",
    "tokens of affection",
    "a payload arrived",
    "repay nothing",
    "apikeys",
    "send meaning",
    "sender me",
    "",
  ])("%j does not escalate", (text) => {
    expect(findEscalationKeyword(c, text)).toBeNull();
  });
  it("the first keyword in charter order names the reason", () => {
    expect(findEscalationKeyword(c, "pay for the deal")).toBe("deal");
  });
  it("keywords are lowercased and trimmed at load (the original's 'pay ' becomes 'pay')", () => {
    expect(charter({ escalate_keywords: ["  PAY "] }).keywords.map((k) => k.keyword)).toEqual(["pay"]);
  });
  it("a keyword without letters or digits is refused", () => {
    expect(() => charter({ escalate_keywords: ["  - "] })).toThrow(CharterError);
  });
  it("regex metacharacters in a keyword are literal", () => {
    const m = charter({ escalate_keywords: ["c++ (deal)"] });
    expect(findEscalationKeyword(m, "a c++ deal")).toBe("c++ (deal)");
    expect(findEscalationKeyword(m, "cdeal")).toBeNull();
  });
});

describe("charter: allowlist and file", () => {
  it("prototype keys are never allowlisted", () => {
    const c = parseCharter(base);
    for (const k of ["toString", "__proto__", "constructor", "hasOwnProperty"]) expect(c.allowlist.has(k)).toBe(false);
  });
  it("the sha256 is over the file's exact bytes", () => {
    const dir = tmp();
    const p = join(dir, "charter.json");
    const text = JSON.stringify({ ...base, enabled: true }, null, 2) + "\n";
    writeFileSync(p, text);
    const loaded = loadCharter(p);
    expect(loaded.sha256).toBe(createHash("sha256").update(Buffer.from(text)).digest("hex"));
    expect(charterSha256(Buffer.from(text))).toBe(loaded.sha256);
    writeFileSync(p, text.replace("\n", "\r\n"));
    expect(loadCharter(p).sha256).not.toBe(loaded.sha256);
  });
  it("a file that is not JSON is a CharterError", () => {
    const p = join(tmp(), "c.json");
    writeFileSync(p, "{ nope");
    expect(() => loadCharter(p)).toThrow(CharterError);
  });
  it("the shipped example parses, ships disabled, and escalates the ADR's word list", () => {
    const loaded = loadCharter("src/agents/responder/charter.example.json");
    expect(loaded.charter.enabled).toBe(false);
    expect(loaded.charter.allowlist.size).toBeGreaterThan(0);
    for (const w of ["money", "credits", "deal", "escrow", "commission", "contract", "tokens", "api keys", "wallet"]) {
      expect(findEscalationKeyword(loaded.charter, `about the ${w} thing`)).toBe(w);
    }
    expect(loaded.sha256).toBe(charterSha256(readFileSync("src/agents/responder/charter.example.json")));
  });
});
