/**
 * Issue 6 property: any order of the same ballots and rulings (with majority counts taken
 * at any points in between) reaches the same outcome: the same tally, the same majority
 * outcome and ruling, the same dispute state, the same standing rulings and the same
 * believed set.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { disputes, adjudication, type Kb } from "../../src/kb/index.js";
import { believed, memoryKb } from "./helpers.js";

const P = "(adoptDog Flat12)";
const NOT_P = "(not (adoptDog Flat12))";
const VOTERS = ["AgentVi", "AgentWen", "AgentXu", "AgentYan"] as const;
const JUDGES = ["AgentJudy", "AgentJules"] as const;

type Op =
  | { kind: "ballot"; voter: string; stance: "for" | "against" }
  | { kind: "rule"; arbiter: string; upheld: string }
  | { kind: "count" };

const opsArb: fc.Arbitrary<Op[]> = fc
  .record({
    stances: fc.tuple(...VOTERS.map(() => fc.constantFrom("none", "for", "against", "both"))),
    rulings: fc.tuple(...JUDGES.map(() => fc.constantFrom(null, P, NOT_P))),
    counts: fc.nat(3),
  })
  .map(({ stances, rulings, counts }) => {
    const ops: Op[] = [];
    stances.forEach((s, i) => {
      if (s === "for" || s === "both") ops.push({ kind: "ballot", voter: VOTERS[i]!, stance: "for" });
      if (s === "against" || s === "both") ops.push({ kind: "ballot", voter: VOTERS[i]!, stance: "against" });
    });
    rulings.forEach((upheld, i) => {
      if (upheld) ops.push({ kind: "rule", arbiter: JUDGES[i]!, upheld });
    });
    for (let i = 0; i < counts; i++) ops.push({ kind: "count" });
    return ops;
  });

async function play(ops: readonly Op[]): Promise<{ kb: Kb; outcome: Record<string, unknown> }> {
  const kb = await memoryKb();
  const members = [...VOTERS, "AgentAva", "AgentBen"].map((a) => "Cx" + a.slice(5));
  await kb.edit({
    add: members.flatMap((c) => [
      { sentence: `(genlCx CxApartment ${c})`, context: "CxUniverse" },
      { sentence: `(genlCx ${c} CxSpeechActs)`, context: "CxUniverse" },
    ]),
  });
  const p = (await kb.assert(P, "CxAva", { creator: "AgentAva" })).handle;
  const notP = (await kb.assert(NOT_P, "CxBen", { creator: "AgentBen" })).handle;
  const id = disputes.disputeKey(`${p}-${notP}`);
  for (const op of ops) {
    if (op.kind === "ballot") {
      await kb.assert(`(${op.stance === "for" ? "votesFor" : "votesAgainst"} ${op.voter} (sentexHandle ${p}))`, "Cx" + op.voter.slice(5), { creator: op.voter });
    } else if (op.kind === "rule") {
      await adjudication.rule(kb, op.arbiter, id, op.upheld, "CxApartment");
    } else {
      await adjudication.resolveByMajority(kb, id, p, "CxApartment");
    }
  }
  const final = await adjudication.resolveByMajority(kb, id, p, "CxApartment");
  const sentenceOf = (h: number | null) => (h === null ? null : kb.sentex(h)?.sentence);
  const outcome = {
    tally: adjudication.tally(kb, p),
    majority: { for: final.for, against: final.against, outcome: final.outcome, ruling: sentenceOf(final.ruling) },
    state: disputes.disputeState(kb, id),
    standing: Object.fromEntries([...JUDGES, "AgentMajority"].map((a) => [a, adjudication.standingRulings(kb, a, id).map(sentenceOf)])),
    // A count that once ruled leaves AgentMajority's context lifted under the channel (the
    // lift is monotonic topology and carries no claim); everything else must be equal.
    believed: believed(kb).filter((b) => !/^CxUniverse\|\(genlCx (CxApartment CxMajority|CxMajority CxSpeechActs)\)/.test(b)),
  };
  return { kb, outcome };
}

describe("issue 6 property", () => {
  it("any order of the same ballots and rulings reaches the same outcome", async () => {
    await fc.assert(
      fc.asyncProperty(
        opsArb.chain((ops) => fc.tuple(fc.constant(ops), fc.shuffledSubarray(ops, { minLength: ops.length, maxLength: ops.length }))),
        async ([ops, shuffled]) => {
          const a = await play(ops);
          const b = await play(shuffled);
          try {
            expect(b.outcome).toEqual(a.outcome);
            // The outcome is the count's: more for upholds P, more against (not P), a tie nothing.
            const t = a.outcome.tally as { for: number; against: number };
            const want = t.for > t.against ? P : t.for < t.against ? NOT_P : null;
            expect((a.outcome.majority as { ruling: string | null }).ruling).toBe(want);
          } finally {
            await a.kb.close();
            await b.kb.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
