/**
 * Issue 16: a replaced ruling is withdrawn, also when one ruling settles two disputes; and
 * a ruling retracted directly takes its `(ruling ...)` mark with it. The world: the channel
 * CxApartment sees Ava, Ben and Dan; Ava claims P, Ben and Dan each claim (not P), so two
 * disputes are about one sentence.
 */
import { describe, it, expect } from "vitest";
import { disputes, adjudication, type Kb } from "../../src/kb/index.js";
import { freshKb, recordEvents } from "./helpers.js";

const P = "(adoptDog Flat12)";
const NOT_P = "(not (adoptDog Flat12))";

/** Two disputes about P: Ava's P against Ben's (not P), and against Dan's. */
async function twoDisputes(): Promise<{ kb: Kb; withBen: string; withDan: string }> {
  const kb = await freshKb();
  const members = ["CxAva", "CxBen", "CxDan"];
  await kb.edit({
    add: members.flatMap((c) => [
      { sentence: `(genlCx CxApartment ${c})`, context: "CxUniverse" },
      { sentence: `(genlCx ${c} CxSpeechActs)`, context: "CxUniverse" },
    ]),
  });
  const p = (await kb.assert(P, "CxAva", { creator: "AgentAva" })).handle;
  const ben = (await kb.assert(NOT_P, "CxBen", { creator: "AgentBen" })).handle;
  const dan = (await kb.assert(NOT_P, "CxDan", { creator: "AgentDan" })).handle;
  return { kb, withBen: disputes.disputeKey(`${p}-${ben}`), withDan: disputes.disputeKey(`${p}-${dan}`) };
}

/** The `(ruling ...)` marks in the arbiter's context, as "dispute id -> upheld text". */
const marks = (kb: Kb, ctx: string) => kb.match("(ruling ?a ?d ?u)", ctx).map((r) => r.sentence).sort();

describe("issue 16: rulings are withdrawn when replaced, and their marks go with them", () => {
  it("a shared ruling replaced on one dispute is withdrawn: the arbiter holds one side, its other mark goes, no conflict is left", async () => {
    const { kb, withBen, withDan } = await twoDisputes();
    const first = await adjudication.rule(kb, "AgentCal", withBen, P, "CxApartment");
    const again = await adjudication.rule(kb, "AgentCal", withDan, P, "CxApartment");
    expect(again.ruling).toBe(first.ruling); // one upheld sentence settles both disputes
    expect(marks(kb, "CxCal")).toHaveLength(2);

    const swap = await adjudication.rule(kb, "AgentCal", withBen, NOT_P, "CxApartment");
    expect(swap.withdrawn).toEqual([first.ruling]);
    expect(kb.sentex(first.ruling)).toBeUndefined();
    // The arbiter upholds one side only: (not P) on the dispute it re-ruled, nothing left on P.
    expect(kb.match(P, "CxCal")).toEqual([]);
    expect(marks(kb, "CxCal")).toEqual([`(ruling AgentCal ${disputes.disputeTerm(withBen)} ${JSON.stringify(NOT_P)})`]);
    expect(adjudication.standingRulings(kb, "AgentCal", withDan)).toEqual([]);
    expect(adjudication.standingRulings(kb, "AgentCal", withBen)).toEqual([swap.ruling]);
    // No conflict in the channel; the last ruling's side is believed there, Ava's P is not.
    expect(kb.contradictions("CxApartment")).toEqual({ contradictions: [], conflicts: [] });
    expect(kb.query(P, "CxApartment").solutions).toEqual([]);
    expect(kb.query(NOT_P, "CxApartment").solutions).toEqual([{}]);
  });

  it("retracting a ruling directly takes its mark along in the same event, and the dispute reopens", async () => {
    const { kb, withBen } = await twoDisputes();
    const { ruling } = await adjudication.rule(kb, "AgentCal", withBen, P, "CxApartment");
    const [mark] = kb.match("(ruling ?a ?d ?u)", "CxCal");
    expect(mark).toBeDefined();
    const events = recordEvents(kb);
    const { removed } = await kb.retract(ruling);
    await new Promise((r) => setImmediate(r));
    expect(removed).toEqual([ruling, mark!.handle].sort((a, b) => a - b));
    expect(marks(kb, "CxCal")).toEqual([]);
    // A subscriber watching rulings sees the mark go, as a cascade of the retracted ruling.
    const gone = events.flatMap((e) => e.removed).map((r) => `${r.handle} ${r.reason}`);
    expect(gone).toContain(`${mark!.handle} cascade`);
    expect(disputes.disputeState(kb, withBen)).toBe("open");
    expect(adjudication.whoRuled(kb, ruling)).toBeUndefined();
  });
});
