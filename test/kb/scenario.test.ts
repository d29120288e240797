/**
 * Issue 3 scenario (the roommates of reference §2.1): house rules in a shared context,
 * facts from two agent contexts it sees, a derived P and a derived (not P) that both stay
 * believed and are listed, a monotonic ruling that defeats (not P), and its retraction
 * that revives (not P).
 */
import { describe, expect, it } from "vitest";
import { freshKb, handleOf, recordEvents, removalsOf } from "./helpers.js";

describe("roommates: house rules over two agents' facts", () => {
  it("derive P and (not P), keep both believed and listed; a monotonic P defeats (not P) and its retraction revives it", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxApartment CxAva)", "CxUniverse");
    await kb.assert("(genlCx CxApartment CxBen)", "CxUniverse");
    await kb.assert("(implies (invites ?host ?guest) (welcome ?guest))", "CxApartment");
    await kb.assert("(implies (and (invites ?host ?guest) (allergicTo ?other ?guest)) (not (welcome ?guest)))", "CxApartment");
    await kb.assert("(invites Ava Rex)", "CxAva", { creator: "AgentAva" });
    await kb.assert("(allergicTo Ben Rex)", "CxBen", { creator: "AgentBen" });

    const p = handleOf(kb, "(welcome Rex)", "CxApartment")!;
    const notP = handleOf(kb, "(not (welcome Rex))", "CxApartment")!;
    expect(kb.sentex(p)).toMatchObject({ believed: true, derived: true, strength: "default" });
    expect(kb.sentex(notP)).toMatchObject({ believed: true, derived: true, strength: "default" });
    expect(kb.query("(welcome Rex)", "CxApartment").solutions).toEqual([{}]);
    expect(kb.query("(not (welcome Rex))", "CxApartment").solutions).toEqual([{}]);
    const listed = kb.contradictions("CxApartment");
    expect(listed.conflicts).toEqual([]);
    expect(listed.contradictions.map((c) => c.sides.map((s) => [s.handle, s.context, s.derived]))).toEqual([
      [
        [p, "CxApartment", true],
        [notP, "CxApartment", true],
      ],
    ]);
    // The agents' own contexts do not see the house: nothing is listed there.
    expect(kb.contradictions("CxAva").contradictions).toEqual([]);
    expect(kb.contradictions("CxBen").contradictions).toEqual([]);

    // A monotonic ruling for P (in the house context) defeats the derived (not P).
    const events = recordEvents(kb);
    const ruling = await kb.assert("(welcome Rex)", "CxApartment", { strength: "monotonic", creator: "AgentLandlord" });
    expect(ruling).toMatchObject({ handle: p, created: false });
    expect(kb.sentex(notP)).toMatchObject({ believed: false, derived: true });
    expect(kb.why(notP)).toMatchObject({ believed: false, reason: "defeated" });
    expect(kb.sentex(p)).toMatchObject({ believed: true, strength: "monotonic" });
    expect(kb.contradictions("CxApartment")).toEqual({ contradictions: [], conflicts: [] });
    expect(removalsOf(events, "(not (welcome Rex))", "CxApartment")).toEqual(["defeated"]);
    expect(kb.query("(not (welcome Rex))", "CxApartment").solutions).toEqual([]);

    // Retracting the ruling revives (not P); P stays, derived again, and the pair is listed again.
    await kb.retract(p);
    expect(kb.sentex(notP)).toMatchObject({ believed: true });
    expect(kb.sentex(p)).toMatchObject({ believed: true, derived: true, strength: "default" });
    expect(events.at(-1)!.added.map((r) => r.handle)).toEqual([notP]);
    expect(kb.contradictions("CxApartment").contradictions.map((c) => c.id)).toEqual([`${Math.min(p, notP)}-${Math.max(p, notP)}`]);
  });

  it("a ruling stored in a context the house sees defeats (not P) the same way, and its retraction revives it", async () => {
    const kb = await freshKb();
    for (const c of ["CxAva", "CxBen", "CxLandlord"]) await kb.assert(`(genlCx CxApartment ${c})`, "CxUniverse");
    await kb.assert("(implies (invites ?host ?guest) (welcome ?guest))", "CxApartment");
    await kb.assert("(implies (and (invites ?host ?guest) (allergicTo ?other ?guest)) (not (welcome ?guest)))", "CxApartment");
    await kb.assert("(invites Ava Rex)", "CxAva");
    await kb.assert("(allergicTo Ben Rex)", "CxBen");
    const notP = handleOf(kb, "(not (welcome Rex))", "CxApartment")!;
    const ruling = await kb.assert("(welcome Rex)", "CxLandlord", { strength: "monotonic" });
    expect(kb.sentex(notP)!.believed).toBe(false);
    expect(kb.contradictions("CxApartment")).toEqual({ contradictions: [], conflicts: [] });
    await kb.retract(ruling.handle);
    expect(kb.sentex(notP)!.believed).toBe(true);
    expect(kb.contradictions("CxApartment").contradictions).toHaveLength(1);
  });

  it("Ben withdrawing his fact removes (not P) as unsupported and ends the contradiction", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxApartment CxAva)", "CxUniverse");
    await kb.assert("(genlCx CxApartment CxBen)", "CxUniverse");
    await kb.assert("(implies (invites ?host ?guest) (welcome ?guest))", "CxApartment");
    await kb.assert("(implies (and (invites ?host ?guest) (allergicTo ?other ?guest)) (not (welcome ?guest)))", "CxApartment");
    await kb.assert("(invites Ava Rex)", "CxAva");
    const allergy = await kb.assert("(allergicTo Ben Rex)", "CxBen");
    const events = recordEvents(kb);
    await kb.retract(allergy.handle);
    expect(removalsOf(events, "(not (welcome Rex))", "CxApartment")).toEqual(["unsupported"]);
    expect(kb.contradictions("CxApartment").contradictions).toEqual([]);
    expect(kb.query("(welcome Rex)", "CxApartment").solutions).toEqual([{}]);
  });
});
