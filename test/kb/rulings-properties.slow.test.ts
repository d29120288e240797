/**
 * Issue 16, the slow run of the rulings property: at least 1 000 random sequences
 * (`KOINII_RULINGS_SLOW_RUNS` raises it).
 */
import { describe, it } from "vitest";
import { tempDir } from "./helpers.js";
import { checkRulings } from "./oracle/rulings-check.js";

describe("issue 16: rulings property (slow)", () => {
  it("1 000 random sequences keep the rulings' promises after every step", async () => {
    await checkRulings(tempDir(), Math.max(1000, Number(process.env.KOINII_RULINGS_SLOW_RUNS ?? 1000)));
  }, 1_800_000);
});
