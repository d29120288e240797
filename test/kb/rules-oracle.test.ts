/**
 * Issue 16: the engine held against an independent oracle (test/kb/oracle/rules-oracle.ts,
 * the semantics of docs/rules.md evaluated naively) on random programs played as random
 * assert / retract / edit sequences on a real SQLite file. `KOINII_ORACLE_RUNS` sets the
 * number of programs; test/kb/rules-oracle.slow.test.ts runs at least 1 000.
 */
import { describe, it } from "vitest";
import { tempDir } from "./helpers.js";
import { checkAgainstOracle } from "./oracle/rules-oracle-check.js";

describe("issue 16: rules against an independent oracle", () => {
  it("after every step the engine stores, believes and clashes as the oracle's fixpoint, answers (not ...) and (unknown ...) queries alike, and every justification why gives is a valid firing there", async () => {
    await checkAgainstOracle(tempDir(), Number(process.env.KOINII_ORACLE_RUNS ?? 150));
  });
});
