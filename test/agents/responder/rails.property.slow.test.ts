/**
 * R18, the long run (see rails.property.test.ts): 280 more random runs of three
 * conversations each, so default + slow exercise 1 020 conversations.
 */
import { describe, expect, it } from "vitest";
import { railsProperty } from "./rails.property.js";

describe("R18: what a reply may draw on (property, long run)", () => {
  it("over random conversations with hostile lines and restarts, a reply carries only the DM, earlier answered lines and trusted facts", { timeout: 1_800_000 }, async () => {
    expect(await railsProperty(280)).toBe(840);
  });
});
