/**
 * Issue 6, the in-process core: disputes (kb/disputes.ts), adjudication (kb/adjudication.ts)
 * and belief (kb/belief.ts). The world: the apartment channel CxApartment sees three
 * flatmates; Ava claims the flat should adopt a dog, Ben claims it should not; the landlord's
 * context CxLandlord sees Ava only (a sibling that sees one side).
 */
import { describe, it, expect, vi } from "vitest";
import { disputes, adjudication, belief, type Kb } from "../../src/kb/index.js";
import { freshKb, refusal, recordEvents } from "./helpers.js";

const P = "(adoptDog Flat12)";
const NOT_P = "(not (adoptDog Flat12))";

async function edges(kb: Kb, pairs: [string, string][]): Promise<void> {
  await kb.edit({ add: pairs.map(([a, b]) => ({ sentence: `(genlCx ${a} ${b})`, context: "CxUniverse", strength: "monotonic" as const })) });
}

/** The flat: members lifted under the channel and rooted in CxSpeechActs; Ava claims P, Ben (not P). */
async function flat(opts: { kb?: Kb; now?: () => number } = {}) {
  const kb = opts.kb ?? (await freshKb(opts.now ? { now: opts.now } : {}));
  await edges(kb, [
    ["CxApartment", "CxAva"], ["CxApartment", "CxBen"], ["CxApartment", "CxCal"],
    ["CxAva", "CxSpeechActs"], ["CxBen", "CxSpeechActs"], ["CxCal", "CxSpeechActs"],
    ["CxLandlord", "CxAva"],
  ]);
  const p = (await kb.assert(P, "CxAva", { creator: "AgentAva" })).handle;
  const notP = (await kb.assert(NOT_P, "CxBen", { creator: "AgentBen" })).handle;
  const id = p < notP ? `${p}-${notP}` : `${notP}-${p}`;
  return { kb, p, notP, id };
}

const ballot = (kb: Kb, voter: string, stance: "for" | "against", claim: number) =>
  kb.assert(`(${stance === "for" ? "votesFor" : "votesAgainst"} ${voter} (sentexHandle ${claim}))`, "Cx" + voter.slice(5), { creator: voter });

describe("disputes: where a clash is seen, ids, the hot path", () => {
  it("a dispute is open in the context that sees both sides and absent from a sibling that sees one", async () => {
    const { kb, p, notP, id } = await flat();
    const [d, ...rest] = disputes.disputesIn(kb, "CxApartment");
    expect(rest).toEqual([]);
    expect(d).toMatchObject({ id, class: "contradiction", state: "open" });
    expect(d!.sides.map((s) => s.handle).sort()).toEqual([p, notP].sort());
    expect(disputes.disputesIn(kb, "CxLandlord")).toEqual([]);
    expect(disputes.disputesIn(kb, "CxAva")).toEqual([]);
  });

  it("a dispute id is independent of side order: either spelling names one dispute, one term, one state", async () => {
    const { kb, p, notP, id } = await flat();
    const swapped = p < notP ? `${notP}-${p}` : `${p}-${notP}`;
    expect(disputes.disputeKey(swapped)).toBe(id);
    expect(disputes.disputeTerm(swapped)).toBe(disputes.disputeTerm(id));
    expect(disputes.disputeHandles(swapped)).toEqual(disputes.disputeHandles(id));
    expect(disputes.disputeState(kb, swapped)).toBe("open");
    await disputes.markNotified(kb, swapped, 1);
    expect(disputes.disputeState(kb, id)).toBe("notified");
    expect((await refusal(() => disputes.disputeKey("12+15"))).type).toBe("bad-request");
  });

  it("disputed is the hot path: true where both sides are seen, false in a sibling, and it never lists the KB's clashes", async () => {
    const { kb } = await flat();
    const clashes = vi.spyOn(kb.engine, "clashes");
    expect(disputes.disputed(kb, P, "CxApartment")).toBe(true);
    expect(disputes.disputed(kb, NOT_P, "CxApartment")).toBe(true);
    expect(disputes.disputed(kb, P, "CxLandlord")).toBe(false);
    expect(disputes.disputed(kb, "(adoptDog Flat7)", "CxApartment")).toBe(false);
    expect(clashes).not.toHaveBeenCalled();
  });

  it("a dispute between derived sides dates from the premises it rests on, so a long stale timeout does not sweep it at once", async () => {
    let clock = 1_000_000;
    const kb = await freshKb({ now: () => clock });
    await edges(kb, [["CxApartment", "CxHouseRules"], ["CxApartment", "CxAva"], ["CxApartment", "CxBen"]]);
    await kb.assert("(implies (and (wantsPet ?who ?flat) (hasGarden ?flat)) (adoptDog ?flat))", "CxHouseRules");
    await kb.assert("(implies (and (livesIn ?who ?flat) (allergicTo ?who Dogs)) (not (adoptDog ?flat)))", "CxHouseRules");
    await kb.edit({ add: [{ sentence: "(hasGarden Flat12)", context: "CxHouseRules" }, { sentence: "(livesIn AgentBen Flat12)", context: "CxHouseRules" }] });
    await kb.assert("(wantsPet AgentAva Flat12)", "CxAva");
    clock = 2_000_000;
    await kb.assert("(allergicTo AgentBen Dogs)", "CxBen");
    const [d] = disputes.disputesIn(kb, "CxApartment");
    expect(d!.sides.every((s) => s.derived)).toBe(true);
    expect(d!.openedAt).toBe(2_000_000);
    clock = 2_000_500;
    expect(await adjudication.sweepStale(kb, "CxApartment", { staleTimeoutMs: 1000, now: () => clock })).toEqual([]);
    clock = 2_001_000;
    expect((await adjudication.sweepStale(kb, "CxApartment", { staleTimeoutMs: 1000, now: () => clock })).map((x) => x.id)).toEqual([d!.id]);
  });
});

describe("the lifecycle: open -> notified -> stale -> resolved, marks stored in CxDisputes", () => {
  it("notify once per episode, sweep after the timeout (never dropped), a ruling resolves, retracting a mark reopens", async () => {
    let clock = 5_000;
    const { kb, id } = await flat({ now: () => clock });
    const now = () => clock;
    const sunk: string[] = [];
    const opts = { now, notifySink: (d: { id: string }) => sunk.push(`notified ${d.id}`), staleSink: (d: { id: string }) => sunk.push(`stale ${d.id}`) };

    expect(disputes.disputeState(kb, id)).toBe("open");
    expect((await adjudication.notifyDisputes(kb, "CxApartment", opts)).map((d) => [d.id, d.state])).toEqual([[id, "notified"]]);
    expect(disputes.disputeState(kb, id)).toBe("notified");
    expect(kb.match("(disputeNotified ?d ?at)", "CxDisputes").map((r) => r.sentence)).toEqual([`(disputeNotified ${disputes.disputeTerm(id)} 5000)`]);
    // Once per episode: a second notify finds nothing open.
    expect(await adjudication.notifyDisputes(kb, "CxApartment", opts)).toEqual([]);

    // Not yet stale within the timeout; stale after it, and still listed.
    expect(await adjudication.sweepStale(kb, "CxApartment", { ...opts, staleTimeoutMs: 10_000 })).toEqual([]);
    clock = 20_000;
    expect((await adjudication.sweepStale(kb, "CxApartment", { ...opts, staleTimeoutMs: 10_000 })).map((d) => d.state)).toEqual(["stale"]);
    expect(await adjudication.sweepStale(kb, "CxApartment", { ...opts, staleTimeoutMs: 10_000 })).toEqual([]);
    expect(disputes.disputesIn(kb, "CxApartment").map((d) => [d.id, d.state])).toEqual([[id, "stale"]]);
    expect(sunk).toEqual([`notified ${id}`, `stale ${id}`]);

    // Retracting the marks reopens the dispute (reopen = retract every mark).
    const stale = kb.match("(disputeStale ?d ?at ?why)", "CxDisputes")[0]!;
    await kb.retract(stale.handle);
    expect(disputes.disputeState(kb, id)).toBe("notified");
    expect(await disputes.reopen(kb, id)).toBe(1);
    expect(disputes.disputeState(kb, id)).toBe("open");

    // A ruling resolves it; resolved is derived, never stored.
    await adjudication.notifyDisputes(kb, "CxApartment", opts);
    await adjudication.rule(kb, "AgentCal", id, P, "CxApartment");
    expect(disputes.disputeState(kb, id)).toBe("resolved");
    expect(disputes.disputesIn(kb, "CxApartment")).toEqual([]);
    expect(kb.match("(disputeNotified ?d ?at)", "CxDisputes")).toEqual([]); // the ruling ends the episode
  });

  it("the marks follow the sides: retracting a side takes its marks along and the dispute is resolved", async () => {
    const { kb, notP, id } = await flat();
    await adjudication.notifyDisputes(kb, "CxApartment");
    await adjudication.sweepStale(kb, "CxApartment", { staleTimeoutMs: 0 });
    expect(kb.match("(disputeStale ?d ?at ?why)", "CxDisputes")).toHaveLength(1);
    const { removed } = await kb.retract(notP);
    expect(removed).toHaveLength(3);
    expect(disputes.disputeState(kb, id)).toBe("resolved");
  });

  it("every transition reaches a feed listener as a sentex: marks added and retracted in CxDisputes, the ruling, the loser defeated", async () => {
    const { kb, notP, id } = await flat();
    const events = recordEvents(kb);
    await adjudication.notifyDisputes(kb, "CxApartment");
    await adjudication.sweepStale(kb, "CxApartment", { staleTimeoutMs: 0 });
    await adjudication.rule(kb, "AgentCal", id, P, "CxApartment");
    await new Promise((r) => setImmediate(r));
    const added = events.flatMap((e) => e.added.map((a) => `${a.context} ${a.sentence}`));
    const removed = events.flatMap((e) => e.removed.map((r) => `${r.context} ${r.sentence} ${r.reason}`));
    expect(added.some((a) => a.startsWith("CxDisputes (disputeNotified"))).toBe(true);
    expect(added.some((a) => a.startsWith("CxDisputes (disputeStale"))).toBe(true);
    expect(added).toContain(`CxCal (ruling AgentCal ${disputes.disputeTerm(id)} "${P.replace(/"/g, '\\"')}")`);
    expect(removed.filter((r) => r.startsWith("CxDisputes")).map((r) => r.split(" ").pop())).toEqual(["retracted", "retracted"]);
    expect(removed).toContain(`CxBen ${NOT_P} defeated`);
    expect(kb.sentex(notP)).toMatchObject({ believed: false });
    // The ruling, the end of the episode (its marks) and the loser's defeat are ONE event.
    const ruled = events.find((e) => e.added.some((a) => a.sentence.startsWith("(ruling ")))!;
    expect(ruled.removed.map((r) => `${r.context} ${r.reason}`).sort()).toEqual(["CxBen defeated", "CxDisputes retracted", "CxDisputes retracted"]);
  });
});

describe("arbiter rulings", () => {
  it("one standing ruling per arbiter per dispute, replaced atomically in one edit", async () => {
    const { kb, p, id } = await flat();
    const first = await adjudication.rule(kb, "AgentCal", id, P, "CxApartment");
    expect(first.withdrawn).toEqual([]);
    expect(adjudication.standingRulings(kb, "AgentCal", id)).toEqual([first.ruling]);
    expect(kb.sentex(first.ruling)).toMatchObject({ sentence: P, context: "CxCal", strength: "monotonic", creator: "AgentCal" });
    // Re-ruling the same side stores nothing new.
    const head = kb.headSeq;
    expect(await adjudication.rule(kb, "AgentCal", id, P, "CxApartment")).toEqual({ ruling: first.ruling, withdrawn: [] });
    expect(kb.headSeq).toBe(head);
    // Switching sides: one event adds the new ruling and removes the old one.
    const events = recordEvents(kb);
    const second = await adjudication.rule(kb, "AgentCal", id, NOT_P, "CxApartment");
    await new Promise((r) => setImmediate(r));
    expect(second.withdrawn).toEqual([first.ruling]);
    expect(adjudication.standingRulings(kb, "AgentCal", id)).toEqual([second.ruling]);
    const swap = events.find((e) => e.added.some((a) => a.handle === second.ruling))!;
    expect(swap.removed.map((r) => r.handle)).toContain(first.ruling);
    expect(kb.sentex(first.ruling)).toBeUndefined();
    expect(adjudication.whoRuled(kb, second.ruling)).toMatchObject({ arbiter: "AgentCal", disputeIds: [id] });
    expect(adjudication.whoRuled(kb, p)).toBeUndefined(); // a claim, not a ruling
  });

  it("an arbiter who claims either side is a party and is refused; nothing is stored", async () => {
    const { kb, id } = await flat();
    const head = kb.headSeq;
    for (const arbiter of ["AgentAva", "AgentBen"]) {
      const r = await refusal(() => adjudication.rule(kb, arbiter, id, P, "CxApartment"));
      expect(r.type).toBe("arbiter-is-party");
      expect(r.message).toContain("is a party to dispute");
    }
    expect(kb.headSeq).toBe(head);
    expect((await refusal(() => adjudication.rule(kb, "AgentCal", id, "(adoptCat Flat12)", "CxApartment"))).type).toBe("bad-request");
  });

  it("retracting a ruling reopens the dispute: both sides believed again", async () => {
    const { kb, notP, id } = await flat();
    const { ruling } = await adjudication.rule(kb, "AgentCal", id, P, "CxApartment");
    expect(kb.sentex(notP)!.believed).toBe(false);
    await kb.retract(ruling);
    expect(kb.sentex(notP)!.believed).toBe(true);
    expect(disputes.disputeState(kb, id)).toBe("open");
    expect(adjudication.standingRulings(kb, "AgentCal", id)).toEqual([]);
    expect(await adjudication.withdrawRulings(kb, "AgentCal", id)).toEqual([]); // the mark went with the ruling
  });
});

describe("majority vote", () => {
  it("distinct voters; a voter on both sides is spoiled and counted on neither; a ballot counts only from its voter's own context", async () => {
    const { kb, p } = await flat();
    await ballot(kb, "AgentAva", "for", p);
    await ballot(kb, "AgentBen", "against", p);
    await ballot(kb, "AgentCal", "for", p);
    await ballot(kb, "AgentCal", "against", p);
    await kb.assert(`(votesFor AgentDan (sentexHandle ${p}))`, "CxAva"); // written by Ava for Dan: not Dan's ballot
    await kb.assert(`(votesFor Dan (sentexHandle ${p}))`, "CxAva"); // no agent id: not a ballot
    expect(adjudication.tally(kb, p)).toEqual({ for: 1, against: 1, spoiled: 1, voters: { for: ["AgentAva"], against: ["AgentBen"], spoiled: ["AgentCal"] } });
  });

  it("a tie upholds nothing: 0-0 and 1-1 leave the dispute open with no majority ruling", async () => {
    const { kb, p, id } = await flat();
    expect(await adjudication.resolveByMajority(kb, id, p, "CxApartment")).toEqual({ for: 0, against: 0, outcome: "tie", ruling: null, withdrawn: [] });
    await ballot(kb, "AgentAva", "for", p);
    await ballot(kb, "AgentBen", "against", p);
    expect(await adjudication.resolveByMajority(kb, id, p, "CxApartment")).toMatchObject({ for: 1, against: 1, outcome: "tie", ruling: null });
    expect(disputes.disputeState(kb, id)).toBe("open");
    expect(adjudication.standingRulings(kb, "AgentMajority", id)).toEqual([]);
  });

  it("a majority rules as AgentMajority; the loser is kept but not believed; idempotent on an unchanged count", async () => {
    const { kb, p, notP, id } = await flat();
    await ballot(kb, "AgentAva", "for", p);
    await ballot(kb, "AgentBen", "against", p);
    await ballot(kb, "AgentCal", "for", p);
    const won = await adjudication.resolveByMajority(kb, id, p, "CxApartment");
    expect(won).toMatchObject({ for: 2, against: 1, outcome: "for", withdrawn: [] });
    expect(adjudication.whoRuled(kb, won.ruling!)).toMatchObject({ arbiter: "AgentMajority", disputeIds: [id] });
    expect(disputes.disputeState(kb, id)).toBe("resolved");
    expect(kb.sentex(notP)).toMatchObject({ believed: false, sentence: NOT_P });
    expect(kb.query(P, "CxApartment").solutions).toEqual([{}]);
    expect(kb.query(NOT_P, "CxApartment").solutions).toEqual([]);
    const head = kb.headSeq;
    expect(await adjudication.resolveByMajority(kb, id, p, "CxApartment")).toEqual({ ...won, withdrawn: [] });
    expect(kb.headSeq).toBe(head);
  });

  it("a swing withdraws the standing majority ruling and re-rules the other side; a return to a tie withdraws it", async () => {
    const { kb, p, notP, id } = await flat();
    const ava = await ballot(kb, "AgentAva", "for", p);
    await ballot(kb, "AgentBen", "against", p);
    await ballot(kb, "AgentCal", "for", p);
    const first = await adjudication.resolveByMajority(kb, id, p, "CxApartment");
    await kb.retract(ava.handle);
    await ballot(kb, "AgentAva", "against", p);
    const swung = await adjudication.resolveByMajority(kb, id, p, "CxApartment");
    expect(swung).toMatchObject({ for: 1, against: 2, outcome: "against", withdrawn: [first.ruling] });
    expect(kb.sentex(swung.ruling!)).toMatchObject({ sentence: NOT_P, context: "CxMajority", strength: "monotonic" });
    expect(kb.sentex(p)!.believed).toBe(false);
    expect(kb.sentex(notP)!.believed).toBe(true);
    // Ben withdraws his ballot: 1-1 is a tie, which withdraws the ruling and reopens the dispute.
    await kb.retract(kb.match(`(votesAgainst AgentBen ?t)`, "CxBen")[0]!.handle);
    const tie = await adjudication.resolveByMajority(kb, id, p, "CxApartment");
    expect(tie).toEqual({ for: 1, against: 1, outcome: "tie", ruling: null, withdrawn: [swung.ruling] });
    expect(disputes.disputeState(kb, id)).toBe("open");
    expect(adjudication.standingRulings(kb, "AgentMajority", id)).toEqual([]);
  });
});

describe("contested premises and quarantine", () => {
  it("a conclusion resting on a disputed side is contested; it stops being so once the dispute is ruled", async () => {
    const { kb, p, id } = await flat();
    await edges(kb, [["CxApartment", "CxHouseRules"]]);
    await kb.assert("(implies (adoptDog ?flat) (needsDogWalker ?flat))", "CxHouseRules");
    expect(adjudication.contestedPremises(kb, "(needsDogWalker Flat12)", "CxApartment")).toEqual([p]);
    expect(adjudication.restsOnContested(kb, "(needsDogWalker Flat12)", "CxApartment")).toBe(true);
    expect(adjudication.restsOnContested(kb, "(hasGarden Flat12)", "CxApartment")).toBe(false);
    await adjudication.rule(kb, "AgentCal", id, P, "CxApartment");
    expect(adjudication.contestedPremises(kb, "(needsDogWalker Flat12)", "CxApartment")).toEqual([]);
  });

  it("quarantine is off by default; it hides the claim and the dispute from the channel while its author still holds it", async () => {
    const { kb, notP, id } = await flat();
    expect(adjudication.quarantined(kb, "CxApartment")).toEqual([]);
    const mask = await adjudication.quarantine(kb, "CxApartment", notP);
    expect(adjudication.quarantined(kb, "CxApartment")).toEqual([notP]);
    expect(kb.sentex(mask)).toMatchObject({ sentence: `(except (sentexHandle ${notP}))`, context: "CxApartment", strength: "monotonic" });
    expect(disputes.disputesIn(kb, "CxApartment")).toEqual([]);
    expect(disputes.disputed(kb, P, "CxApartment")).toBe(false);
    expect(kb.query(NOT_P, "CxApartment").solutions).toEqual([]);
    expect(kb.query(NOT_P, "CxBen").solutions).toEqual([{}]); // Ben still holds it
    expect(belief.believes(kb, "AgentBen", NOT_P).believed).toBe(true);
    expect(await adjudication.unquarantine(kb, "CxApartment", notP)).toBe(true);
    expect(await adjudication.unquarantine(kb, "CxApartment", notP)).toBe(false);
    expect(disputes.disputesIn(kb, "CxApartment").map((d) => d.id)).toEqual([id]);
    expect((await refusal(() => adjudication.quarantine(kb, "CxApartment", 999_999))).type).toBe("unknown-handle");
  });
});

describe("belief (K6): the agent's own context is its belief context", () => {
  it("believes proves in the agent's cone, with bindings; convene and disagreements; disregard own statements only, restore", async () => {
    const { kb, p, notP } = await flat();
    expect(belief.believes(kb, "AgentAva", P)).toEqual({ believed: true, solutions: [{}] });
    expect(belief.believes(kb, "AgentAva", NOT_P).believed).toBe(false);
    expect(belief.believes(kb, "AgentBen", "(not (adoptDog ?f))")).toEqual({ believed: true, solutions: [{ "?f": "Flat12" }] });
    expect(belief.believes(kb, "AgentCal", "(adoptDog ?f)").believed).toBe(false);

    expect(belief.disagreements(kb, "CxPanel")).toEqual([]);
    await kb.edit({ add: ["AgentAva", "AgentBen", "AgentCal"].map((a) => ({ sentence: `(agent ${a})`, context: "CxRegistry" })) });
    expect(await belief.convene(kb, "CxPanel", ["AgentAva", "AgentBen"])).toBe("CxPanel");
    await belief.convene(kb, "CxPanel", ["AgentAva"]); // idempotent
    // The registry decides who is an agent: CxSpeechActs and CxCore, in the cone, are not.
    expect(kb.cone("CxPanel").has("CxSpeechActs")).toBe(true);
    expect(belief.convenedAgents(kb, "CxPanel")).toEqual(["AgentAva", "AgentBen"]);
    const [dis, ...more] = belief.disagreements(kb, "CxPanel");
    expect(more).toEqual([]);
    expect(dis!.between).toEqual(["AgentAva", "AgentBen"]);
    expect(dis!.sides.map((s) => [s.agent, s.sentence]).sort()).toEqual([["AgentAva", P], ["AgentBen", NOT_P]]);

    const r = await refusal(() => belief.disregard(kb, "AgentAva", notP));
    expect(r.type).toBe("not-own-statement");
    const mask = await belief.disregard(kb, "AgentBen", notP);
    expect(kb.sentex(mask)).toMatchObject({ context: "CxBen", creator: "AgentBen", strength: "monotonic" });
    expect(belief.disregards(kb, "AgentBen")).toEqual([notP]);
    expect(belief.believes(kb, "AgentBen", NOT_P).believed).toBe(false);
    expect(belief.disagreements(kb, "CxPanel")).toEqual([]);
    expect(kb.sentex(notP)).toMatchObject({ believed: true }); // kept, only hidden from Ben's cone
    expect(await belief.restore(kb, "AgentBen", notP)).toBe(true);
    expect(await belief.restore(kb, "AgentBen", notP)).toBe(false);
    expect(belief.believes(kb, "AgentBen", NOT_P).believed).toBe(true);
    expect(belief.disregards(kb, "AgentBen")).toEqual([]);
    expect(p).toBeGreaterThan(0);
  });
});
