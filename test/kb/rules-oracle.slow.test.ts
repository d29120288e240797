/**
 * Issue 16, the slow run of the rules oracle property: at least 1 000 random programs
 * (`KOINII_ORACLE_SLOW_RUNS` raises it), each checked after every step.
 */
import { describe, it } from "vitest";
import { tempDir } from "./helpers.js";
import { checkAgainstOracle } from "./oracle/rules-oracle-check.js";

describe("issue 16: rules against an independent oracle (slow)", () => {
  it("1 000 random programs agree with the oracle after every step", async () => {
    await checkAgainstOracle(tempDir(), Math.max(1000, Number(process.env.KOINII_ORACLE_SLOW_RUNS ?? 1000)));
  }, 1_800_000);
});
