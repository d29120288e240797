import { describe, expect, it } from "vitest";
import { asksHim, classifyAddress } from "../../../src/agents/floor/index.js";

const names = ["clankie"];

describe("asksHim: does the sentence that names him put a question to him", () => {
  it.each<[string, boolean, string]>([
    ["clankie did you see that?", true, "his name opens a question"],
    ["clankie did you see that", true, "an auxiliary and a subject after his name make a question without '?'"],
    ["clanky, is the build green?", true, "a misheard name still counts"],
    ["bob, clankie, what do you think?", true, "a question to 'you' in the sentence that names him"],
    ["I think clankie knows the answer", false, "a statement about him"],
    ["clankie is broken", false, "an auxiliary without a subject after it is a report"],
    ["alright clankie go ahead", false, "a mention that asks nothing"],
    ["what is clankie doing", false, "a question about him, put to nobody in the second person"],
    ["bob did clankie fix it?", false, "a question about him, put to Bob"],
    ["did you fix it? clankie is slow today", false, "the question is in a sentence that does not name him"],
    ["how was your weekend", false, "no name of his at all"],
  ])("%j -> %s (%s)", (line, expected) => {
    expect(asksHim(line, names)).toBe(expected);
  });

  it("the mentions of the table are mentions (the reading is only consulted for those)", () => {
    for (const line of ["clankie did you see that?", "I think clankie knows the answer", "clankie is broken", "alright clankie go ahead", "what is clankie doing", "bob did clankie fix it?"]) {
      expect(classifyAddress(line, names)).toBe("mentioned");
    }
  });

  it("with no names, nothing asks him", () => {
    expect(asksHim("clankie did you see that?", [])).toBe(false);
  });
});
