/**
 * Issue 6 from the channel: disputes, adjudication and belief, the same tests over the local
 * medium (the in-process core) and a real daemon (wire, open mode): same answers on both.
 * The lifecycle is also watched through the ordinary feed.
 */
import { describe, it, expect } from "vitest";
import {
  join, assert, vote, dispute, retract, subscribe, registerAgent, ChannelError,
  disputesIn, disputed, disputeState, notifyDisputes, sweepStale, reopenDispute, rule, withdrawRulings, standingRulings, whoRuled,
  tally, resolveByMajority, contestedPremises, restsOnContested, quarantine, unquarantine, quarantined, believes, convene,
  disagreements, disregard, restore, disregards, watchDisputes,
  type AgentHandle, type FeedEvent, type DisputeChange,
} from "../../src/channel/index.js";
import { rig, eventually, type MediumKind } from "./helpers.js";

const P = "(adoptDog Flat12)";
const NOT_P = "(not (adoptDog Flat12))";

async function refusal(p: Promise<unknown>): Promise<ChannelError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ChannelError);
    return e as ChannelError;
  }
  throw new Error("expected a refusal");
}

/** Three flatmates in CxApartment; a landlord context that sees Ava only. */
async function flat(kind: MediumKind) {
  const r = await rig(kind);
  const [ava, ben, cal] = await Promise.all(["AgentAva", "AgentBen", "AgentCal"].map((a) => join(r.medium, "CxApartment", a)));
  await join(r.medium, "CxLandlord", "AgentAva");
  const p = await assert(ava!, P);
  const notP = await assert(ben!, NOT_P);
  const id = p < notP ? `${p}-${notP}` : `${notP}-${p}`;
  return { r, ava: ava!, ben: ben!, cal: cal!, p, notP, id };
}

describe.each<MediumKind>(["local", "wire"])("disputes over %s", (kind) => {
  it("disputesIn, disputed and disputeState: open in the channel, absent from a sibling that sees one side; either id spelling", async () => {
    const { ava, p, notP, id } = await flat(kind);
    const [d, ...rest] = await disputesIn(ava);
    expect(rest).toEqual([]);
    expect(d).toMatchObject({ id, class: "contradiction", state: "open" });
    expect(d!.sides.map((s) => s.sentence).sort()).toEqual([P, NOT_P].sort());
    expect(await disputesIn(ava, "CxLandlord")).toEqual([]);
    expect(await disputed(ava, P)).toBe(true);
    expect(await disputed(ava, P, "CxLandlord")).toBe(false);
    const swapped = p < notP ? `${notP}-${p}` : `${p}-${notP}`;
    expect(await disputeState(ava, swapped)).toEqual({ id, state: "open" });
    expect((await refusal(disputeState(ava, "twelve"))).type).toBe("bad-request");
  });

  it("notify once per episode, sweep stale, reopen; rule as oneself, replaced atomically; who ruled; withdraw reopens", async () => {
    const { ava, cal, p, notP, id } = await flat(kind);
    expect((await notifyDisputes(cal)).map((d) => [d.id, d.state])).toEqual([[id, "notified"]]);
    expect(await notifyDisputes(cal)).toEqual([]);
    expect(await sweepStale(cal, { staleTimeoutMs: 86_400_000 })).toEqual([]);
    expect((await sweepStale(cal, { staleTimeoutMs: 0 })).map((d) => d.state)).toEqual(["stale"]);
    expect((await disputeState(cal, id)).state).toBe("stale");
    expect(await reopenDispute(cal, id)).toBe(2);
    expect((await disputeState(cal, id)).state).toBe("open");

    const party = await refusal(rule(ava, id, P));
    expect(party.type).toBe("arbiter-is-party");
    if (kind === "wire") expect(party.status).toBe(400);

    const first = await rule(cal, id, P);
    expect(first.withdrawn).toEqual([]);
    expect((await disputeState(cal, id)).state).toBe("resolved");
    const second = await rule(cal, id, NOT_P);
    expect(second.withdrawn).toEqual([first.ruling]);
    expect(await standingRulings(cal, "AgentCal", id)).toEqual([second.ruling]);
    expect(await whoRuled(cal, second.ruling)).toMatchObject({ arbiter: "AgentCal", disputeIds: [id] });
    expect(await whoRuled(cal, p)).toBeNull();
    expect((await refusal(whoRuled(cal, 999_999))).type).toBe("unknown-handle");
    expect((await ava.medium.sentex(p)).believed).toBe(false);
    expect(await withdrawRulings(cal, id)).toEqual([second.ruling]);
    expect((await disputeState(cal, id)).state).toBe("open");
    expect((await ava.medium.sentex(notP)).believed).toBe(true);
  });

  it("tally and majority: spoiled ballots, 1-1 tie leaves it open, a third vote rules as AgentMajority, idempotent", async () => {
    const { ava, ben, cal, p, notP, id } = await flat(kind);
    expect(await resolveByMajority(cal, id, p)).toEqual({ for: 0, against: 0, outcome: "tie", ruling: null, withdrawn: [] });
    await vote(ava, "for", p);
    await vote(ben, "against", p);
    expect(await resolveByMajority(cal, id, p)).toMatchObject({ for: 1, against: 1, outcome: "tie", ruling: null });
    expect((await disputeState(cal, id)).state).toBe("open");
    await vote(cal, "for", p);
    await vote(cal, "against", p);
    expect(await tally(cal, p)).toEqual({ for: 1, against: 1, spoiled: 1, voters: { for: ["AgentAva"], against: ["AgentBen"], spoiled: ["AgentCal"] } });
    await retract(cal, (await cal.medium.match(`(votesAgainst AgentCal ?t)`, "CxCal"))[0]!.handle);
    const won = await resolveByMajority(cal, id, p);
    expect(won).toMatchObject({ for: 2, against: 1, outcome: "for", withdrawn: [] });
    expect(await whoRuled(cal, won.ruling!)).toMatchObject({ arbiter: "AgentMajority", disputeIds: [id] });
    expect((await ben.medium.sentex(notP)).believed).toBe(false); // kept, not believed
    const head = await cal.medium.headSeq();
    expect(await resolveByMajority(cal, id, p)).toEqual(won);
    expect(await cal.medium.headSeq()).toBe(head);
  });

  it("contested premises, and quarantine (off by default) hiding the dispute from the channel while the author holds the claim", async () => {
    const { r, ava, ben, notP, p, id } = await flat(kind);
    await r.medium.edit({ add: [{ sentence: "(genlCx CxApartment CxHouseRules)", context: "CxUniverse" }, { sentence: "(implies (adoptDog ?f) (needsDogWalker ?f))", context: "CxHouseRules" }] });
    expect(await contestedPremises(ava, "(needsDogWalker Flat12)")).toEqual([p]);
    expect(await restsOnContested(ava, "(needsDogWalker Flat12)")).toBe(true);
    expect(await quarantined(ava)).toEqual([]);
    const mask = await quarantine(ava, notP);
    expect(mask).toBeGreaterThan(notP);
    expect(await quarantined(ava)).toEqual([notP]);
    expect(await disputesIn(ava)).toEqual([]);
    expect(await restsOnContested(ava, "(needsDogWalker Flat12)")).toBe(false);
    expect((await believes(ben, NOT_P)).believed).toBe(true);
    expect(await unquarantine(ava, notP)).toBe(true);
    expect(await unquarantine(ava, notP)).toBe(false);
    expect((await disputesIn(ava)).map((d) => d.id)).toEqual([id]);
  });

  it("belief: believes with bindings, convene and disagreements between registered agents, disregard own only, restore", async () => {
    const { r, ava, ben, notP } = await flat(kind);
    for (const a of ["AgentAva", "AgentBen"]) await registerAgent(r.medium, a);
    expect(await believes(ben, "(not (adoptDog ?f))")).toEqual({ believed: true, solutions: [{ "?f": "Flat12" }] });
    expect(await believes(ben, P, "AgentAva")).toEqual({ believed: true, solutions: [{}] });
    expect(await convene(ava, "CxPanel", ["AgentAva", "AgentBen"])).toEqual(["AgentAva", "AgentBen"]);
    const { agents, disagreements: ds } = await disagreements(ava, "CxPanel");
    expect(agents).toEqual(["AgentAva", "AgentBen"]);
    expect(ds.map((d) => d.between)).toEqual([["AgentAva", "AgentBen"]]);
    expect((await refusal(disregard(ava, notP))).type).toBe("not-own-statement");
    const mask = await disregard(ben, notP);
    expect(await disregards(ben)).toEqual([notP]);
    expect((await believes(ben, NOT_P)).believed).toBe(false);
    expect((await disagreements(ava, "CxPanel")).disagreements).toEqual([]);
    expect((await ben.medium.sentex(mask)).context).toBe("CxBen");
    expect(await restore(ben, notP)).toBe(true);
    expect((await believes(ben, NOT_P)).believed).toBe(true);
    expect(await disregards(ben)).toEqual([]);
  });

  it("a subscriber watches the lifecycle through the ordinary feed: marks in CxDisputes, rulings and contested in the channel", async () => {
    const { r, cal, p, id } = await flat(kind);
    const marks: FeedEvent[] = [];
    const rulings: FeedEvent[] = [];
    const contested: FeedEvent[] = [];
    const changes: DisputeChange[] = [];
    const errors: unknown[] = [];
    const onError = (e: unknown) => errors.push(e);
    const watcher = await join(r.another(), "CxApartment", "AgentWatcher");
    const subs = [
      await subscribe(watcher, "(disputeNotified ?d ?at)", "CxDisputes", (e) => void marks.push(e), { waitMs: 1000, onError }),
      await subscribe(watcher, "(disputeStale ?d ?at ?why)", "CxDisputes", (e) => void marks.push(e), { waitMs: 1000, onError }),
      await subscribe(watcher, "(ruling ?arbiter ?d ?upheld)", "CxApartment", (e) => void rulings.push(e), { waitMs: 1000, onError }),
      await subscribe(watcher, "(contested ?t)", "CxApartment", (e) => void contested.push(e), { waitMs: 1000, onError }),
    ];
    const watch = await watchDisputes(watcher, (c) => void changes.push(c), { waitMs: 1000, onError });
    expect([...watch.states]).toEqual([[id, "open"]]);
    try {
      const dan = await join(r.medium, "CxApartment", "AgentDan");
      const edge = await dispute(dan, p); // Dan disputes Ava's claim: (contested (sentexHandle p)) is derived
      // watchDisputes re-reads the state after each event: the test waits for each state before
      // the next step, as a reader faster than the writes would see them.
      const reaches = (state: string) => eventually(() => watch.states.get(id), (s) => s === state);
      await notifyDisputes(cal);
      await reaches("notified");
      await sweepStale(cal, { staleTimeoutMs: 0 });
      await reaches("stale");
      const { ruling } = await rule(cal, id, NOT_P);
      await eventually(() => watch.states.has(id), (has) => !has); // resolved: gone from the channel's view
      await retract(cal, ruling);
      await reaches("open");
      await retract(dan, edge);
      // The transitions of the first dispute; "open" after "resolved" is the retracted ruling reopening it.
      const mine = await eventually(

        () => changes.filter((c) => c.id === id).map((c) => c.to),
        (m) => m.includes("resolved") && m.lastIndexOf("open") > m.indexOf("resolved"),
      ).catch((e) => {
        throw new Error(`${(e as Error).message}: ${JSON.stringify(changes)} errors ${String(errors)}`);
      });
      await eventually(() => contested.length, (n) => n >= 2);
      await eventually(() => marks.length, (n) => n >= 3);
      await eventually(() => rulings.length, (n) => n >= 1);

      // Dan's rebuttal (not P) opens a second dispute beside the first; follow the first.
      expect(new Set(changes.map((c) => c.id)).size).toBe(2);
      // The ruling ends the episode in its own edit: stale goes straight to resolved.
      expect(mine.slice(0, 3)).toEqual(["notified", "stale", "resolved"]);

      const markAdds = marks.flatMap((e) => e.added.map((a) => `${a.sentence.split(" ")[0]} ${a.bindings!["?d"]}`));
      const term = `(dispute (sentexHandle ${id.split("-")[0]}) (sentexHandle ${id.split("-")[1]}))`;
      expect(markAdds).toContain(`(disputeNotified ${term}`);
      expect(markAdds).toContain(`(disputeStale ${term}`);
      expect(marks.flatMap((e) => e.removed.map((x) => x.reason))).toContain("retracted"); // the ruling ended the episode
      expect(rulings[0]!.added[0]).toMatchObject({ context: "CxCal", bindings: { "?arbiter": "AgentCal", "?upheld": JSON.stringify(NOT_P) } });
      expect(contested[0]!.added[0]!.sentence).toBe(`(contested (sentexHandle ${p}))`);
      expect(contested.at(-1)!.removed[0]!.sentence).toBe(`(contested (sentexHandle ${p}))`);
      expect(errors).toEqual([]);
    } finally {
      await watch.stop();
      for (const s of subs) await s.stop();
    }
  });
});
