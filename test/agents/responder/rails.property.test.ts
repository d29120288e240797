/**
 * R18, the default run: a reply never carries a refused or escalated line, a line after the
 * DM it answers, or a fact from an untrusted writer (rails.property.ts). The long run is
 * rails.property.slow.test.ts; together they exercise more than 1 000 conversations.
 */
import { describe, expect, it } from "vitest";
import { railsProperty } from "./rails.property.js";

describe("R18: what a reply may draw on (property, default run)", () => {
  it("over random conversations with hostile lines and restarts, a reply carries only the DM, earlier answered lines and trusted facts", { timeout: 300_000 }, async () => {
    expect(await railsProperty(60)).toBe(180);
  });
});
