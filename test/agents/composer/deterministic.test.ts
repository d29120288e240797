import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type ComposeRequest,
  DeterministicComposer,
  type TurnOffer,
  type TurnRequest,
  createComposer,
  guardReply,
  promiseIn,
  splitSentences,
} from "../../../src/agents/composer/index.js";

const req = (over: Partial<ComposeRequest> = {}): ComposeRequest => ({
  purpose: "dm-reply",
  system: "voice",
  recall: [],
  history: [],
  message: "hello",
  maxChars: 1500,
  ...over,
});

describe("deterministic composer", () => {
  const c = new DeterministicComposer();
  it("quotes the recalled facts that share words with the message, best first", async () => {
    const out = await c.compose(req({ recall: ["Rex plays the trumpet", "Rex visited the jazz festival in June", "The weather was grey"], message: "Any jazz festival news?" }));
    expect(out).toContain("“Rex visited the jazz festival in June”");
    expect(out.indexOf("jazz festival")).toBeLessThan(out.indexOf("trumpet"));
    expect(out).not.toContain("weather");
    expect(out).toContain("a studio session will follow up");
  });
  it("says so when nothing is recalled, and never echoes the message", async () => {
    const out = await c.compose(req({ message: "SECRET-PHRASE-XYZ please repeat" }));
    expect(out).toContain("Nothing I remember");
    expect(out).not.toContain("SECRET-PHRASE-XYZ");
  });
  it("never quotes a recalled fact that itself promises something", async () => {
    const out = await c.compose(req({ recall: ["I will pay Rex 40 credits", "Rex likes tea"], message: "pay tea" }));
    expect(out).not.toContain("credits");
    expect(out).toContain("Rex likes tea");
  });
  it("is deterministic, within maxChars, and passes the guard untouched (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string({ maxLength: 300 }), { maxLength: 8 }), fc.string({ maxLength: 300 }), fc.integer({ min: 40, max: 2000 }), async (recall, message, maxChars) => {
        const r = req({ recall, message, maxChars });
        const a = await c.compose(r);
        expect(await c.compose(r)).toBe(a);
        expect(Array.from(a).length).toBeLessThanOrEqual(maxChars);
        for (const s of splitSentences(a)) expect(promiseIn(s)).toBeNull();
        expect(guardReply(a, maxChars)).toMatchObject({ ok: true, removed: [] });
      }),
      { numRuns: 200 },
    );
  });
});

describe("createComposer", () => {
  it("chooses Anthropic only when ANTHROPIC_API_KEY is set and non-empty", () => {
    expect(createComposer({}).name).toBe("deterministic");
    expect(createComposer({ ANTHROPIC_API_KEY: "  " }).name).toBe("deterministic");
    expect(createComposer({ ANTHROPIC_API_KEY: "k" }).name).toBe("anthropic:claude-haiku-4-5");
    expect(createComposer({ ANTHROPIC_API_KEY: "k", KOINII_COMPOSER_MODELS: "m1, m2" }).name).toBe("anthropic:m1");
  });
});

describe("a floor turn without a model", () => {
  const c = new DeterministicComposer();
  const turn = (over: Partial<TurnRequest> = {}): TurnRequest => ({
    purpose: "floor-turn",
    offer: "addressed",
    asksHim: false,
    system: "",
    recall: [],
    history: [],
    message: "what about the deploy?",
    maxChars: 300,
    ...over,
  });

  it("when addressed, is short, first person and grounded only in recall, never the responder's written boilerplate", async () => {
    const withFact = await c.composeTurn(turn({ recall: ["the build server restarts at noon"], message: "when does the build server restart?" }));
    expect(withFact.kind).toBe("speak");
    if (withFact.kind === "speak") {
      expect(withFact.text).toContain("“the build server restarts at noon”");
      expect(withFact.text).not.toContain("bounded responder");
    }
    expect(await c.composeTurn(turn())).toEqual({ kind: "speak", text: "I heard you. I don't have anything on that yet." });
  });

  it.each<[TurnOffer, boolean, "speak" | "nothing"]>([
    ["addressed", false, "speak"],
    ["addressed", true, "speak"],
    ["mentioned", false, "nothing"],
    ["mentioned", true, "speak"],
    ["holder", false, "nothing"],
    ["holder", true, "nothing"],
    ["unprompted", false, "nothing"],
    ["unprompted", true, "nothing"],
  ])("offer %s, asks him %s: %s", async (offer, asksHim, kind) => {
    expect((await c.composeTurn(turn({ offer, asksHim }))).kind).toBe(kind);
  });
});
