import { describe, expect, it } from "vitest";
import { classifyAddress, nameCameUp, phoneticKey, tokenize, type AddressKind } from "../../../src/agents/floor/address.js";

const NAMES = ["clankie"];

describe("phoneticKey", () => {
  it.each(["clanky", "clankee", "klankie", "clanki", "CLANKIE!", "Clan-kie"])(
    "a transcriber's spelling %s keys the same as clankie",
    (spelling) => {
      expect(phoneticKey(spelling)).toBe(phoneticKey("clankie"));
    },
  );

  it.each([
    ["blankie", "a different leading consonant"],
    ["clankiest", "an extra consonant ending"],
    ["lanky", "a missing consonant"],
  ])("%s does not key as clankie (%s)", (word) => {
    expect(phoneticKey(word)).not.toBe(phoneticKey("clankie"));
  });

  it.each([
    ["phil", "fl"], // ph -> f
    ["hugh", "h"], // gh dropped
    ["check", "k"], // ch -> k, ck -> k, doubles collapse
    ["shoe", "s"], // sh -> s
    ["thor", "tr"], // th -> t
    ["cider", "sdr"], // soft c -> s
    ["queue", "k"], // q -> k
    ["rex", "rks"], // x -> ks
    ["zara", "sr"], // z -> s
    ["vic", "fk"], // v -> f, hard c
    ["amy", "am"], // leading vowel kept; y -> i then dropped
    ["eve", "ef"], // leading vowel kept, inner vowels dropped
    ["bobby", "b"], // doubled letters collapse after vowels go: b,b,b -> b
    ["42", ""], // no letters, no key
  ])("the spelling folds turn %s into %s", (word, key) => {
    expect(phoneticKey(word)).toBe(key);
  });
});

describe("tokenize", () => {
  it("marks a trailing 's or ’s as possessive and strips it; other apostrophes vanish", () => {
    expect(tokenize("Clankie's job, clankie’s too; don't")).toEqual([
      { word: "clankie", possessive: true },
      { word: "job", possessive: false },
      { word: "clankie", possessive: true },
      { word: "too", possessive: false },
      { word: "dont", possessive: false },
    ]);
  });
});

// Each row: transcript, expected kind, the rule that decides it.
const TABLE: [string, AddressKind, string][] = [
  // addressed: vocative, name-first that is not a report, name-last
  ["hey clankie you there", "addressed", "a vocative before the name is a hail"],
  ["so clankie what now", "addressed", "'so' is a vocative"],
  ["and clankie one more thing", "addressed", "'and' is a vocative"],
  ["clankie what do you think", "addressed", "name first, not followed by a report verb"],
  ["klanky run the tests", "addressed", "a mis-transcribed name first is still a hail"],
  ["thanks clankie", "addressed", "name last is a hail"],
  ["so what do you think clankie", "addressed", "name last; no second addressee is inferred from word order"],
  ["hey bob what do you think clankie", "addressed", "name last wins even after another vocative"],
  ["ok clankie's turn", "addressed", "a possessive after a vocative is still a hail"],
  ["is this clankie's", "addressed", "a possessive that ends the line is a hail (name last)"],
  ["clankie", "addressed", "the bare name is first and last"],
  // mentioned: a name hit that is not clearly a hail nor clearly about him
  ["clankie did you see that", "mentioned", "name first followed by a report verb"],
  ["clankie is broken again", "mentioned", "a report: 'is' after a leading name"],
  ["clankie just tell me the score", "mentioned", "'just' after a leading name reads as a report"],
  ["alright clankie go ahead", "mentioned", "a name mid-line after a non-vocative"],
  ["hey bob what did clankie say to you", "mentioned", "a mid-line hit after no vocative"],
  ["bob can you ask clankie something or clankie might know", "mentioned", "the ask-object is skipped, the later mid-line hit is a mention"],
  // none: possessive or ask/tell object, or no hit at all
  ["that is clankie's job", "none", "a possessive mid-line is about him"],
  ["clankie's thing is weird", "none", "a possessive first, not last, no vocative"],
  ["ask clankie about it", "none", "an ask-object"],
  ["bob can you ask clankie", "none", "an ask-object at the end is still an object"],
  ["i told clanky yesterday", "none", "a tell-object, mis-transcribed"],
  ["we were calling clankie all day", "none", "a call-object"],
  ["show clankie the logs", "none", "a show-object"],
  ["the blankie is on the couch", "none", "a near-miss name is no hit"],
  ["clankiest robot ever", "none", "a longer word is no hit"],
  ["", "none", "no tokens"],
  ["... !!!", "none", "punctuation has no tokens"],
];

describe("classifyAddress", () => {
  it.each(TABLE)("%j is %s: %s", (transcript, kind) => {
    expect(classifyAddress(transcript, NAMES)).toBe(kind);
  });

  it("with no usable names nothing is ever addressed", () => {
    expect(classifyAddress("hey clankie", [])).toBe("none");
    expect(classifyAddress("hey clankie", ["", "123"])).toBe("none");
  });

  it("any configured alias is matched by its own key", () => {
    expect(classifyAddress("hey sprocket", ["clankie", "sprocket"])).toBe("addressed");
    expect(classifyAddress("ask sprocket", ["clankie", "sprocket"])).toBe("none");
  });

  it("a mention counts as the name coming up; none does not", () => {
    expect(nameCameUp("clankie did you see that", NAMES)).toBe(true);
    expect(nameCameUp("hey clankie", NAMES)).toBe(true);
    expect(nameCameUp("ask clankie about it", NAMES)).toBe(false);
  });
});
