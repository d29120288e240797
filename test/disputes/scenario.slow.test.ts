/**
 * Issue 6's scenario over the wire between separate OS processes: three flatmates argue
 * whether the shared apartment should adopt a dog. The daemon runs under an admin token;
 * each flatmate is a `flatmate.js` process (test/disputes/fixtures, run from dist/) with its
 * own agent token, so the write boundary is the daemon's. This test process is the admin
 * (house rules, the majority count, notify, retracting a ruling) and a feed subscriber.
 *
 *  - House rules in CxHouseRules (which CxApartment sees) and the flatmates' facts derive
 *    (adoptDog Flat12) and (not (adoptDog Flat12)) in CxApartment.
 *  - The dispute is open in CxApartment and absent from CxLandlord, a sibling that sees the
 *    house rules and Ava only (one side).
 *  - Votes 1-1 leave it open; Cal's vote makes 2-1 and the majority count rules as
 *    AgentMajority; the losing side is kept (stored) but not believed.
 *  - Retracting the ruling reopens it.
 *  - Ava, who posed a question and left, reconnects later and reads the open queries, the
 *    answers given while she was away and the standing state of the dispute.
 */
import { spawn } from "node:child_process";
import { join as joinPath } from "node:path";
import { describe, it, expect } from "vitest";
import { wire, join, registerAgent, watchDisputes, type DisputeChange } from "../../src/channel/index.js";
import { spawnDaemon, tempDir, eventually, ROOT, ADMIN_TOKEN } from "../channel/helpers.js";

const FLATMATE = joinPath(ROOT, "dist/test/disputes/fixtures/flatmate.js");
const P = "(adoptDog Flat12)";
const NOT_P = "(not (adoptDog Flat12))";

/** Run one flatmate command as its own process and parse its JSON line. */
function flatmate(url: string, token: string, agent: string, ...args: string[]): Promise<any> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [FLATMATE, url, token, agent, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    p.once("exit", (code) => (code === 0 ? resolve(JSON.parse(out.trim().split("\n").pop()!)) : reject(new Error(`${agent} ${args[0]} exited ${code}: ${err}`))));
  });
}

describe("issue 6 scenario: should the flat adopt a dog?", () => {
  it("house rules derive both sides; 1-1 stays open; 2-1 is ruled by AgentMajority; the loser is kept, not believed; retracting reopens; Ava catches up", async () => {
    const d = await spawnDaemon({ adminToken: ADMIN_TOKEN });
    const admin = wire({ url: d.url, token: ADMIN_TOKEN });
    const dir = tempDir();
    const cursorFile = joinPath(dir, "ava.cursor.json");
    let watch: Awaited<ReturnType<typeof watchDisputes>> | undefined;
    try {
      const tokens: Record<string, string> = {};
      for (const a of ["AgentAva", "AgentBen", "AgentCal"]) tokens[a] = (await registerAgent(admin, a, { displayName: a.slice(5) })).token!;
      const run = (agent: string, ...args: string[]) => flatmate(d.url, tokens[agent]!, agent, ...args);

      // The house rules, shared by the apartment and (with Ava) the landlord's sibling view.
      await admin.edit({
        add: [
          { sentence: "(genlCx CxApartment CxHouseRules)", context: "CxUniverse" },
          { sentence: "(genlCx CxLandlord CxHouseRules)", context: "CxUniverse" },
          { sentence: "(genlCx CxLandlord CxAva)", context: "CxUniverse" },
          { sentence: "(implies (and (wantsPet ?who ?flat) (hasGarden ?flat)) (adoptDog ?flat))", context: "CxHouseRules" },
          { sentence: "(implies (and (livesIn ?who ?flat) (allergicTo ?who Dogs)) (not (adoptDog ?flat)))", context: "CxHouseRules" },
          { sentence: "(hasGarden Flat12)", context: "CxHouseRules" },
          { sentence: "(livesIn AgentBen Flat12)", context: "CxHouseRules" },
        ],
      });
      // An admin-side subscriber watches the lifecycle through the ordinary feed.
      const changes: DisputeChange[] = [];
      const errors: unknown[] = [];
      watch = await watchDisputes(await join(admin, "CxApartment", "AgentWarden"), (c) => void changes.push(c), { waitMs: 1000, onError: (e) => errors.push(e) });

      // Ava starts her catch-up cursor, asks who would walk the dog, and leaves.
      expect((await run("AgentAva", "catch-up", cursorFile)).answers).toEqual([]);
      const { handle: q } = await run("AgentAva", "pose", "(whoWalksDog Flat12)");

      // The facts: with the house rules they derive both sides in the apartment.
      await run("AgentAva", "claim", "(wantsPet AgentAva Flat12)");
      await run("AgentBen", "claim", "(allergicTo AgentBen Dogs)");
      const { disputes } = await run("AgentCal", "disputes");
      expect(disputes).toHaveLength(1);
      const dispute = disputes[0];
      expect(dispute).toMatchObject({ class: "contradiction", state: "open" });
      expect(dispute.sides.map((s: { sentence: string; context: string; derived: boolean }) => [s.sentence, s.context, s.derived]).sort()).toEqual([
        [P, "CxApartment", true],
        [NOT_P, "CxApartment", true],
      ].sort());
      const id: string = dispute.id;
      const p: number = dispute.sides.find((s: { sentence: string }) => s.sentence === P).handle;
      const notP: number = dispute.sides.find((s: { sentence: string }) => s.sentence === NOT_P).handle;
      // The landlord's sibling view sees the house rules and Ava: one side only, no dispute.
      expect((await run("AgentCal", "disputes", "CxLandlord")).disputes).toEqual([]);
      expect(await admin.query(P, "CxLandlord")).toMatchObject({ solutions: [{}], truncated: false, asOf: expect.any(Number) });

      // Votes 1-1: a tie leaves it open.
      await run("AgentAva", "vote", "for", String(p));
      await run("AgentBen", "vote", "against", String(p));
      expect(await admin.resolveByMajority(id, p, "CxApartment")).toMatchObject({ for: 1, against: 1, outcome: "tie", ruling: null });
      expect((await admin.disputeState(id)).state).toBe("open");

      // While Ava is away, Cal and Ben answer her question.
      expect((await run("AgentCal", "answer-open", "AgentCal")).answered).toEqual([[q, expect.any(Number)]]);
      expect((await run("AgentBen", "answer-open", "AgentBen")).answered).toEqual([]); // answered already: nothing open for Ben
      await run("AgentBen", "answer", "AgentBen", String(q));

      // A flatmate cannot rule as the majority: its token rules only as itself.
      expect(await run("AgentCal", "rule-as", "AgentMajority", id, P)).toEqual({ refused: "foreign-agent", status: 403 });

      // Cal's vote makes 2-1: the majority arbiter rules; the losing side is kept but not believed.
      await run("AgentCal", "vote", "for", String(p));
      const won = await admin.resolveByMajority(id, p, "CxApartment");
      expect(won).toMatchObject({ for: 2, against: 1, outcome: "for", withdrawn: [] });
      expect(await admin.whoRuled(won.ruling!)).toMatchObject({ arbiter: "AgentMajority", disputeIds: [id] });
      expect(await admin.sentex(won.ruling!)).toMatchObject({ sentence: P, context: "CxMajority", strength: "monotonic", creator: "AgentMajority" });
      expect((await admin.disputeState(id)).state).toBe("resolved");
      await eventually(() => watch!.states.has(id), (has) => !has); // the subscriber saw it leave the channel's view
      expect((await run("AgentBen", "disputes")).disputes).toEqual([]);
      expect(await admin.sentex(notP)).toMatchObject({ sentence: NOT_P, believed: false });
      expect((await admin.query(NOT_P, "CxApartment")).solutions).toEqual([]);
      expect((await admin.query(P, "CxApartment")).solutions).toEqual([{}]);

      // Retracting the ruling reopens the dispute; the admin notifies it.
      await admin.retract(won.ruling!);
      expect((await admin.disputeState(id)).state).toBe("open");
      expect(await admin.sentex(notP)).toMatchObject({ believed: true });
      expect((await admin.notifyDisputes("CxApartment")).map((x) => x.id)).toEqual([id]);

      // Ava reconnects: the open queries, the answers given while she was away, the dispute's standing state.
      const back = await run("AgentAva", "reconnect", cursorFile, id);
      expect(back.answers).toEqual([
        { speaker: "AgentBen", content: "AgentBen", target: q },
        { speaker: "AgentCal", content: "AgentCal", target: q },
      ]);
      expect(back.openQueries).toEqual([{ handle: q, agent: "AgentAva", question: "(whoWalksDog Flat12)", answers: 2 }]);
      expect(back.state).toEqual({ id, state: "notified" });
      expect(back.disputes.map((x: { id: string; state: string }) => [x.id, x.state])).toEqual([[id, "notified"]]);

      // The subscriber saw it resolve, reopen and get notified, in that order.
      const seen = await eventually(
        () => changes.filter((c) => c.id === id).map((c) => c.to),
        (m) => m.at(-1) === "notified",
      );
      expect(seen.indexOf("resolved")).toBeGreaterThanOrEqual(0);
      expect(seen.lastIndexOf("open")).toBeGreaterThan(seen.indexOf("resolved"));
      expect(errors).toEqual([]);
    } finally {
      await watch?.stop();
      await admin.close();
      await d.stop();
    }
  });
});
