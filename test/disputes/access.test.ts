/**
 * Issue 6 over the wire with tokens (a real daemon process, KOINII_ADMIN_TOKEN set): who may
 * call which dispute, adjudication and belief route (docs/disputes.md "Access"), the
 * refusals' types and statuses, and the routes in /openapi.json.
 */
import { describe, it, expect } from "vitest";
import { wire, join, assert, registerAgent, ChannelError, type Medium, type AgentHandle } from "../../src/channel/index.js";
import { spawnDaemon, ADMIN_TOKEN } from "../channel/helpers.js";

const P = "(adoptDog Flat12)";
const NOT_P = "(not (adoptDog Flat12))";

async function refusal(p: Promise<unknown>): Promise<{ type: string; status: number | undefined }> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ChannelError);
    return { type: (e as ChannelError).type, status: (e as ChannelError).status };
  }
  throw new Error("expected a refusal");
}

describe("dispute routes under tokens", () => {
  it("reads for everyone; the deployment's policies for the admin; rule, disregard and restore only as oneself", async () => {
    const d = await spawnDaemon({ adminToken: ADMIN_TOKEN });
    const media: Medium[] = [];
    const open = (token: string | undefined) => {
      const m = wire({ url: d.url, token });
      media.push(m);
      return m;
    };
    try {
      const admin = open(ADMIN_TOKEN);
      const h: Record<string, AgentHandle> = {};
      for (const a of ["AgentAva", "AgentBen", "AgentCal"]) h[a] = await join(open((await registerAgent(admin, a)).token), "CxApartment", a);
      const ava = h.AgentAva!, ben = h.AgentBen!, cal = h.AgentCal!;
      const p = await assert(ava, P);
      const notP = await assert(ben, NOT_P);
      const id = `${Math.min(p, notP)}-${Math.max(p, notP)}`;

      // Reads: every principal.
      expect((await cal.medium.disputesIn("CxApartment")).map((x) => x.id)).toEqual([id]);
      expect(await cal.medium.disputed(P, "CxApartment")).toBe(true);
      expect((await cal.medium.disputeState(id)).state).toBe("open");
      expect(await cal.medium.tally(p)).toMatchObject({ for: 0, against: 0 });
      expect(await cal.medium.quarantined("CxApartment")).toEqual([]);
      expect((await cal.medium.believes("AgentAva", P)).believed).toBe(true);
      expect(await cal.medium.disregards("AgentBen")).toEqual([]);

      // The deployment's policies: the admin's; an agent token is 403 forbidden and nothing is written.
      const head = await admin.headSeq();
      for (const call of [
        () => cal.medium.notifyDisputes("CxApartment"),
        () => cal.medium.sweepStale("CxApartment", { staleTimeoutMs: 0 }),
        () => cal.medium.reopenDispute(id),
        () => cal.medium.resolveByMajority(id, p, "CxApartment"),
        () => cal.medium.quarantine("CxApartment", notP),
        () => cal.medium.unquarantine("CxApartment", notP),
        () => cal.medium.convene("CxPanel", ["AgentAva"]),
      ]) {
        expect(await refusal(call())).toEqual({ type: "forbidden", status: 403 });
      }
      expect(await admin.headSeq()).toBe(head);

      // Rulings: an agent rules only as itself; the admin names the arbiter.
      expect(await refusal(cal.medium.rule({ arbiter: "AgentBen", id, upheld: P, channel: "CxApartment" }))).toEqual({ type: "foreign-agent", status: 403 });
      expect(await refusal(cal.medium.withdrawRulings("AgentMajority", id))).toEqual({ type: "foreign-agent", status: 403 });
      expect(await refusal(cal.medium.rule({ arbiter: "AgentCal", id, upheld: P, channel: "CxRegistry" }))).toEqual({ type: "registry-forbidden", status: 403 });
      expect(await refusal(ava.medium.rule({ arbiter: "AgentAva", id, upheld: P, channel: "CxApartment" }))).toEqual({ type: "arbiter-is-party", status: 400 });
      expect(await admin.headSeq()).toBe(head);
      const mine = await cal.medium.rule({ arbiter: "AgentCal", id, upheld: P, channel: "CxApartment" });
      expect(await admin.sentex(mine.ruling)).toMatchObject({ context: "CxCal", creator: "AgentCal", strength: "monotonic" });
      expect(await cal.medium.withdrawRulings("AgentCal", id)).toEqual([mine.ruling]);
      const asJudge = await admin.rule({ arbiter: "AgentJudge", id, upheld: NOT_P, channel: "CxApartment" });
      expect(await admin.whoRuled(asJudge.ruling)).toMatchObject({ arbiter: "AgentJudge", disputeIds: [id] });
      expect(await admin.withdrawRulings("AgentJudge", id)).toEqual([asJudge.ruling]);
      // Open-mode shortcuts do not exist under a token: the admin must name the arbiter.
      const noArbiter = await fetch(`${d.url}/v1/rule`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` },
        body: JSON.stringify({ id, upheld: P, channel: "CxApartment" }),
      });
      expect(noArbiter.status).toBe(400);
      expect(((await noArbiter.json()) as { type: string }).type).toBe("bad-request");

      // Disregard: own statements only; another agent is foreign-agent; the admin acts for any agent.
      expect(await refusal(ava.medium.disregard("AgentAva", notP))).toEqual({ type: "not-own-statement", status: 400 });
      expect(await refusal(ava.medium.disregard("AgentBen", notP))).toEqual({ type: "foreign-agent", status: 403 });
      expect(await refusal(ava.medium.restore("AgentBen", notP))).toEqual({ type: "foreign-agent", status: 403 });
      expect(await refusal(ava.medium.disregard("AgentAva", 999_999))).toEqual({ type: "unknown-handle", status: 404 });
      const mask = await ben.medium.disregard("AgentBen", notP);
      expect(await admin.sentex(mask)).toMatchObject({ context: "CxBen", creator: "AgentBen" });
      expect((await ava.medium.believes("AgentBen", NOT_P)).believed).toBe(false);
      expect(await admin.restore("AgentBen", notP)).toBe(true);
      expect((await ava.medium.believes("AgentBen", NOT_P)).believed).toBe(true);

      // The admin's policies work.
      expect((await admin.notifyDisputes("CxApartment")).map((x) => x.id)).toEqual([id]);
      expect(await admin.convene("CxPanel", ["AgentAva", "AgentBen"])).toEqual(["AgentAva", "AgentBen"]);
      expect((await cal.medium.disagreements("CxPanel")).disagreements.map((x) => x.between)).toEqual([["AgentAva", "AgentBen"]]);
    } finally {
      for (const m of media) await m.close();
      await d.stop();
    }
  });

  it("every dispute, adjudication and belief route is in /openapi.json with its body, and foreign-agent is a 403 type", async () => {
    const d = await spawnDaemon({ adminToken: ADMIN_TOKEN });
    try {
      const res = await fetch(`${d.url}/openapi.json`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      const doc = (await res.json()) as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { required?: string[] } }> } }>>; "x-error-types": Record<string, number> };
      const routes = [
        "/v1/disputes", "/v1/disputed", "/v1/dispute-state", "/v1/disputes/notify", "/v1/disputes/sweep", "/v1/disputes/reopen", "/v1/rule",
        "/v1/withdraw-rulings", "/v1/rulings", "/v1/who-ruled", "/v1/tally", "/v1/majority", "/v1/contested", "/v1/quarantine",
        "/v1/unquarantine", "/v1/quarantined", "/v1/believes", "/v1/convene", "/v1/disagreements", "/v1/disregard", "/v1/restore", "/v1/disregards",
      ];
      for (const r of routes) expect(doc.paths[r]?.post?.requestBody, r).toBeDefined();
      expect(doc.paths["/v1/rule"]!.post!.requestBody!.content["application/json"]!.schema.required).toEqual(["id", "upheld", "channel"]);
      expect(doc["x-error-types"]["foreign-agent"]).toBe(403);
      expect(doc["x-error-types"]["arbiter-is-party"]).toBe(400);
      expect(doc["x-error-types"]["not-own-statement"]).toBe(400);
    } finally {
      await d.stop();
    }
  });
});
