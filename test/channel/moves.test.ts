/**
 * Moves, reads and claims, the same tests over the local medium and a real daemon (wire):
 * everything above the Medium is written once, so both must answer alike.
 */
import { describe, it, expect } from "vitest";
import {
  join, assert, poseQuery, answer, endorse, justify, notUnderstood, refuse, vote, dispute, retract, replyMany,
  speakerOf, answerContent, answersTo, endorsementsOf, query, openQueries, claim, release, claimOf, contextFor, str,
  ChannelError, type AgentHandle,
} from "../../src/channel/index.js";
import { rig, type MediumKind } from "./helpers.js";

async function refusal(p: Promise<unknown>): Promise<ChannelError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ChannelError);
    return e as ChannelError;
  }
  throw new Error("expected a refusal");
}

describe.each<MediumKind>(["local", "wire"])("moves over %s", (kind) => {
  it("contextFor drops Agent and prefixes Cx; join lifts the agent under the channel and roots it in CxSpeechActs", async () => {
    const r = await rig(kind);
    expect(contextFor("AgentAtlas")).toBe("CxAtlas");
    const h = await join(r.medium, "CxDeploy", "AgentAtlas");
    expect(h).toMatchObject({ agent: "AgentAtlas", context: "CxAtlas", channel: "CxDeploy" });
    const edges = (await r.medium.match("(genlCx ?a ?b)", "CxUniverse")).map((s) => s.sentence);
    expect(edges).toContain("(genlCx CxDeploy CxAtlas)");
    expect(edges).toContain("(genlCx CxAtlas CxSpeechActs)");
    const c = await assert(h, "(usesDatabase ProdCluster Postgres)");
    expect(await query(h, "(usesDatabase ProdCluster ?db)")).toEqual([{ "?db": "Postgres" }]);
    expect(c).toBeGreaterThan(0);
  });

  it("re-joining is a no-op: no new seq; opts.speaks roots the context elsewhere", async () => {
    const r = await rig(kind);
    await join(r.medium, "CxDeploy", "AgentAtlas");
    const head = await r.medium.headSeq();
    await join(r.medium, "CxDeploy", "AgentAtlas");
    expect(await r.medium.headSeq()).toBe(head);
    await join(r.medium, "CxDeploy", "AgentBoreas", { speaks: "CxCore" });
    const edges = (await r.medium.match("(genlCx CxBoreas ?b)", "CxUniverse")).map((s) => s.sentence);
    expect(edges).toEqual(["(genlCx CxBoreas CxCore)"]);
  });

  it("every move writes the CxSpeechActs shape in the agent's own context, creator-stamped", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const b = await join(r.medium, "CxDeploy", "AgentBoreas");
    const q = await poseQuery(a, "(whichDatabase ProdCluster)");
    const moves: [number, string][] = [
      [q, "(queries AgentAtlas (whichDatabase ProdCluster))"],
      [await answer(b, str("Postgres 16"), q), `(answers AgentBoreas "Postgres 16" (sentexHandle ${q}))`],
      [await endorse(b, q), `(endorses AgentBoreas (sentexHandle ${q}))`],
      [await justify(b, "(runbook Db7)", q), `(justifies AgentBoreas (runbook Db7) (sentexHandle ${q}))`],
      [await notUnderstood(b, q), `(notUnderstood AgentBoreas (sentexHandle ${q}))`],
      [await refuse(b, q), `(refuse AgentBoreas (sentexHandle ${q}))`],
      [await vote(b, "for", q), `(votesFor AgentBoreas (sentexHandle ${q}))`],
      [await vote(b, "against", q), `(votesAgainst AgentBoreas (sentexHandle ${q}))`],
    ];
    for (const [hdl, sentence] of moves) {
      const s = await r.medium.sentex(hdl);
      expect(s.sentence).toBe(sentence);
      expect(s.context).toBe(speakerOf(s) === "AgentAtlas" ? "CxAtlas" : "CxBoreas");
      expect(s.creator).toBe(speakerOf(s));
    }
  });

  it("a re-answer with the same content returns the same handle; answersTo, speakerOf and answerContent read it back", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const b = await join(r.medium, "CxDeploy", "AgentBoreas");
    const q = await poseQuery(a, "(whichDatabase ProdCluster)");
    const x = await answer(b, str("Postgres 16"), q);
    expect(await answer(b, str("Postgres 16"), q)).toBe(x);
    const got = await answersTo(a, q);
    expect(got.map((s) => [s.handle, speakerOf(s), answerContent(s)])).toEqual([[x, "AgentBoreas", '"Postgres 16"']]);
    const e1 = await endorse(a, x);
    const e2 = await endorse(b, x);
    expect((await endorsementsOf(a, x)).map((s) => s.handle).sort()).toEqual([e1, e2].sort());
  });

  it("vote refuses any stance but for/against, storing nothing", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const c = await assert(a, "(p X)");
    const head = await r.medium.headSeq();
    const e = await refusal(vote(a, "abstain" as "for", c));
    expect(e.type).toBe("bad-stance");
    expect(await r.medium.headSeq()).toBe(head);
  });

  it("dispute writes the negation and the disputes edge in ONE edit; the target becomes contested; disputing (not S) asserts S", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const b = await join(r.medium, "CxDeploy", "AgentBoreas");
    const c = await assert(a, "(usesDatabase ProdCluster Postgres)");
    const head = await r.medium.headSeq();
    const d = await dispute(b, c);
    expect(await r.medium.headSeq()).toBe(head + 1);
    const edge = await r.medium.sentex(d);
    expect(edge.sentence).toBe(`(disputes AgentBoreas (sentexHandle ${c}))`);
    const neg = await r.medium.match("(not (usesDatabase ProdCluster Postgres))", "CxBoreas");
    expect(neg).toHaveLength(1);
    expect(neg[0]!.seq).toBe(edge.seq);
    expect(await query(a, `(contested (sentexHandle ${c}))`)).toEqual([{}]);
    const n = await assert(a, "(not (sleeps Cat))");
    await dispute(b, n);
    expect((await r.medium.match("(sleeps Cat)", "CxBoreas")).map((s) => s.sentence)).toEqual(["(sleeps Cat)"]);
  });

  it("replyMany commits an admissible batch as one seq; a refused batch stores nothing and throws reply-inadmissible with problems", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const b = await join(r.medium, "CxDeploy", "AgentBoreas");
    const q = await poseQuery(a, "(whichDatabase ProdCluster)");
    const ok = await replyMany(b, [`(answers AgentBoreas Postgres (sentexHandle ${q}))`, "(usesDatabase ProdCluster Postgres)"]);
    expect(ok.added).toHaveLength(2);
    const head = await r.medium.headSeq();
    expect(ok.seq).toBe(head);
    const e = await refusal(replyMany(b, ["(fine Claim)", `(answers AgentBoreas (sentexHandle ${q}))`, "(endorses AgentBoreas (sentexHandle 999999))"]));
    expect(e.type).toBe("reply-inadmissible");
    expect(e.problems!.map((p) => [p.type, p.index])).toEqual([["arity", 1], ["dangling-target", 2]]);
    expect(await r.medium.headSeq()).toBe(head);
    expect(await r.medium.match("(fine Claim)", "CxBoreas")).toEqual([]);
  });

  it("retracting a query retracts its answers, endorsements and claims in the same seq; error acts and ballots stay", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const b = await join(r.medium, "CxDeploy", "AgentBoreas");
    const q = await poseQuery(a, "(whichDatabase ProdCluster)");
    const x = await answer(b, "Postgres", q);
    const e = await endorse(a, x);
    const cl = (await claim(b, q, { leaseMs: 60_000 })).handle;
    const nu = await notUnderstood(b, q);
    const out = await retract(a, q);
    expect(out.removed.sort((m, n) => m - n)).toEqual([q, x, e, cl].sort((m, n) => m - n));
    expect(await answersTo(a, q)).toEqual([]);
    expect((await r.medium.sentex(nu)).sentence).toBe(`(notUnderstood AgentBoreas (sentexHandle ${q}))`);
  });

  it("openQueries (K7) lists the channel's cone only, with answer counts; {unanswered} filters", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const b = await join(r.medium, "CxDeploy", "AgentBoreas");
    const elsewhere = await join(r.medium, "CxStaging", "AgentCirrus");
    const q1 = await poseQuery(a, "(whichDatabase ProdCluster)");
    const q2 = await poseQuery(b, "(whoOwns ProdCluster)");
    await poseQuery(elsewhere, "(whoOwns StagingCluster)");
    await answer(b, "Postgres", q1);
    await answer(a, "Postgres", q1); // two agents, two answers
    const all = await openQueries(a);
    expect(all.map((o) => [o.handle, o.agent, o.question, o.answers])).toEqual([
      [q1, "AgentAtlas", "(whichDatabase ProdCluster)", 2],
      [q2, "AgentBoreas", "(whoOwns ProdCluster)", 0],
    ]);
    expect((await openQueries(a, { unanswered: true })).map((o) => o.handle)).toEqual([q2]);
    expect((await openQueries(elsewhere)).map((o) => o.agent)).toEqual(["AgentCirrus"]);
  });

  it("claims: the holder and lease show in openQueries; another agent's claim is refused 'claimed'; renewal replaces; release and expiry free it", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const b = await join(r.medium, "CxDeploy", "AgentBoreas");
    const c = await join(r.medium, "CxDeploy", "AgentCirrus");
    const q = await poseQuery(a, "(whoOwns ProdCluster)");
    const first = await claim(b, q, { leaseMs: 60_000 });
    expect((await openQueries(a))[0]!.claim).toEqual(first);
    const e = await refusal(claim(c, q, { leaseMs: 60_000 }));
    expect(e.type).toBe("claimed");
    if (kind === "wire") expect(e.status).toBe(409);
    const renewed = await claim(b, q, { leaseMs: 120_000 });
    expect(renewed.until).toBeGreaterThan(first.until);
    expect((await r.medium.match(`(claims AgentBoreas (sentexHandle ${q}) ?u)`, "CxBoreas")).map((s) => s.handle)).toEqual([renewed.handle]);
    expect(await release(b, q)).toBe(1);
    expect(await claimOf(a, q)).toBeUndefined();
    // An expired lease blocks nothing and shows as no claim.
    await claim(b, q, { leaseMs: 1, now: Date.now() - 60_000 });
    expect((await openQueries(a))[0]!.claim).toBeUndefined();
    const taken = await claim(c, q, { leaseMs: 60_000 });
    expect(await claimOf(a, q)).toEqual(taken);
  });

  it("a move on a handle that is not stored is refused dangling-target; an unknown handle read is unknown-handle", async () => {
    const r = await rig(kind);
    const a: AgentHandle = await join(r.medium, "CxDeploy", "AgentAtlas");
    expect((await refusal(answer(a, "X", 987654))).type).toBe("dangling-target");
    const e = await refusal(dispute(a, 987654));
    expect(e.type).toBe("unknown-handle");
    if (kind === "wire") expect(e.status).toBe(404);
  });
});
