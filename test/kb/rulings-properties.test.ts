/**
 * Issue 16: random sequences of rulings (shared and not), withdrawals, ballots and majority
 * counts keep the promises of docs/disputes.md (see test/kb/oracle/rulings-check.ts).
 * `KOINII_RULINGS_RUNS` sets the number of sequences; the slow run does at least 1 000.
 */
import { describe, it } from "vitest";
import { tempDir } from "./helpers.js";
import { checkRulings } from "./oracle/rulings-check.js";

describe("issue 16: rulings property", () => {
  it("the believed side always matches the standing rulings, a replaced ruling is withdrawn, and no conflict is left that a ruling could settle", async () => {
    await checkRulings(tempDir(), Number(process.env.KOINII_RULINGS_RUNS ?? 60));
  });
});
