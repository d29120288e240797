/**
 * The routes of disputes, adjudication and belief (issue 6, docs/decisions.md K5/K6,
 * docs/disputes.md): the in-process core (kb/disputes, kb/adjudication, kb/belief) served
 * over the wire, one entry per call, in the route table's shape (zod body and answer).
 *
 * Access, besides the token every route needs:
 *  - reads are open to every principal;
 *  - the policies that write for the deployment (notify, sweep, reopen, majority, quarantine,
 *    unquarantine, convene) are the admin's;
 *  - rule / withdraw-rulings: the admin names any arbiter; an agent token rules only as
 *    itself (its ruling lands in its own context), else 403 `foreign-agent`;
 *  - disregard / restore: the admin names the agent; an agent token acts only for itself,
 *    and the core refuses a statement the agent did not make (`not-own-statement`).
 */
import { disputes, adjudication, belief, KbError, contextFor, type Kb } from "../kb/index.js";
import { WireError } from "./errors.js";
import { route, readRoute, type RouteDeps, type RouteDef } from "./routes.js";
import type { Access, Principal } from "./access.js";
import * as s from "./schemas.js";

/**
 * The agent a call acts as: an agent token is itself (naming another agent is 403
 * `foreign-agent`); the admin must name one. Then the write boundary for what the call
 * writes in that agent's context (an agent token writing its own context always passes).
 */
function actingAgent(p: Principal, named: string | undefined, what: string): string {
  if (p.admin) {
    if (named === undefined) throw new WireError("bad-request", `the admin names the ${what} (an agent id)`);
    contextFor(named); // naming: an agent id is Agent + CapitalCamelCase
    return named;
  }
  if (named !== undefined && named !== p.id) throw new WireError("foreign-agent", `${p.id} acts only as itself, not as ${what} ${named}`, { own: p.id });
  return p.id;
}

/** A ruling lifts the arbiter's context under the channel: the edge must pass the write boundary too (never CxRegistry as viewer). */
function checkRulingEdge(access: Access, p: Principal, arbiter: string, channel: string): void {
  const ctx = contextFor(arbiter);
  access.checkWrite(p, ctx, `(genlCx ${channel} ${ctx})`);
}

function handleOr404(kb: Kb, h: number): void {
  if (!kb.sentex(h)) throw new KbError("unknown-handle", `no sentex has handle ${h}`);
}

export function disputeRoutes(d: RouteDeps): RouteDef[] {
  const { kb, access, metrics, now } = d;
  const wrote = (name: string) => metrics.writes.inc({ route: name });
  return [
    // ------------------------------------------------------------ disputes (reads)
    readRoute({
      method: "POST",
      url: "/v1/disputes",
      summary: "Every dispute a context sees (it sees both sides), with its lifecycle state",
      access: "any",
      body: s.disputesBody,
      answer: s.disputesAnswer,
      handler: ({ body }) => ({ disputes: disputes.disputesIn(kb, body.context) }),
    }),
    readRoute({
      method: "POST",
      url: "/v1/disputed",
      summary: "Hot path: is this sentence disputed where the context looks (one index bucket, no scan)",
      access: "any",
      body: s.disputedBody,
      answer: s.disputedAnswer,
      handler: ({ body }) => ({ disputed: disputes.disputed(kb, body.sentence, body.context) }),
    }),
    readRoute({
      method: "POST",
      url: "/v1/dispute-state",
      summary: "The lifecycle state of one dispute: open, notified, stale or resolved",
      access: "any",
      body: s.disputeStateBody,
      answer: s.disputeStateAnswer,
      handler: ({ body }) => ({ id: disputes.disputeKey(body.id), state: disputes.disputeState(kb, body.id) }),
    }),
    // ------------------------------------------------------------ leave open and notify (admin)
    route({
      method: "POST",
      url: "/v1/disputes/notify",
      summary: "Mark every open dispute the channel sees as notified (once per episode), in CxDisputes",
      access: "admin",
      body: s.notifyBody,
      answer: s.notifyAnswer,
      async handler({ body }) {
        const notified = await adjudication.notifyDisputes(kb, body.context, { now });
        if (notified.length) wrote("disputes-notify");
        return { notified };
      },
    }),
    route({
      method: "POST",
      url: "/v1/disputes/sweep",
      summary: "Mark stale (TimedOut) every dispute the channel sees that stayed un-ruled past the timeout; nothing is dropped",
      access: "admin",
      body: s.sweepBody,
      answer: s.sweepAnswer,
      async handler({ body }) {
        const stale = await adjudication.sweepStale(kb, body.context, { now, staleTimeoutMs: body.staleTimeoutMs });
        if (stale.length) wrote("disputes-sweep");
        return { stale };
      },
    }),
    route({
      method: "POST",
      url: "/v1/disputes/reopen",
      summary: "Retract a dispute's notified and stale marks (it is open again while the clash stands)",
      access: "admin",
      body: s.reopenBody,
      answer: s.reopenAnswer,
      async handler({ body }) {
        const removed = await disputes.reopen(kb, body.id);
        if (removed) wrote("disputes-reopen");
        return { id: disputes.disputeKey(body.id), removed };
      },
    }),
    // ------------------------------------------------------------ rulings
    route({
      method: "POST",
      url: "/v1/rule",
      summary: "Rule on a dispute: the upheld side, monotonic, in the arbiter's context; replaces the arbiter's standing ruling in one edit",
      access: "any",
      body: s.ruleBody,
      answer: s.ruleAnswer,
      async handler({ body, principal }) {
        const arbiter = actingAgent(principal, body.arbiter, "arbiter");
        checkRulingEdge(access, principal, arbiter, body.channel);
        const r = await adjudication.rule(kb, arbiter, body.id, body.upheld, body.channel);
        wrote("rule");
        return r;
      },
    }),
    route({
      method: "POST",
      url: "/v1/withdraw-rulings",
      summary: "Withdraw an arbiter's standing rulings on a dispute (the dispute reopens while the clash stands)",
      access: "any",
      body: s.withdrawBody,
      answer: s.withdrawAnswer,
      async handler({ body, principal }) {
        const arbiter = actingAgent(principal, body.arbiter, "arbiter");
        const withdrawn = await adjudication.withdrawRulings(kb, arbiter, body.id);
        if (withdrawn.length) wrote("withdraw-rulings");
        return { withdrawn };
      },
    }),
    readRoute({
      method: "POST",
      url: "/v1/rulings",
      summary: "The handles of an arbiter's standing rulings on a dispute",
      access: "any",
      body: s.rulingsBody,
      answer: s.rulingsAnswer,
      handler: ({ body }) => {
        contextFor(body.arbiter);
        return { rulings: adjudication.standingRulings(kb, body.arbiter, body.id) };
      },
    }),
    readRoute({
      method: "POST",
      url: "/v1/who-ruled",
      summary: "Who ruled with this sentex, on which disputes, and when (null when it is no ruling)",
      access: "any",
      body: s.whoRuledBody,
      answer: s.whoRuledAnswer,
      handler: ({ body }) => {
        handleOr404(kb, body.handle);
        return { ruling: adjudication.whoRuled(kb, body.handle) ?? null };
      },
    }),
    // ------------------------------------------------------------ majority
    readRoute({
      method: "POST",
      url: "/v1/tally",
      summary: "Distinct voters for and against a claim; a voter on both sides is spoiled and counted on neither",
      access: "any",
      body: s.tallyBody,
      answer: s.tallyAnswer,
      handler: ({ body }) => adjudication.tally(kb, body.handle),
    }),
    route({
      method: "POST",
      url: "/v1/majority",
      summary: "Count the ballots and rule as AgentMajority; a tie (0-0 included) withdraws a standing majority ruling; idempotent on an unchanged count",
      access: "admin",
      body: s.majorityBody,
      answer: s.majorityAnswer,
      async handler({ body }) {
        const r = await adjudication.resolveByMajority(kb, body.id, body.claim, body.channel);
        wrote("majority");
        return r;
      },
    }),
    // ------------------------------------------------------------ contested premises, quarantine
    readRoute({
      method: "POST",
      url: "/v1/contested",
      summary: "The handles in a sentence's support that are a side of a dispute the context sees",
      access: "any",
      body: s.contestedBody,
      answer: s.contestedAnswer,
      handler: ({ body }) => {
        const premises = adjudication.contestedPremises(kb, body.sentence, body.context);
        return { contested: premises.length > 0, premises };
      },
    }),
    route({
      method: "POST",
      url: "/v1/quarantine",
      summary: "Hide a sentex from a channel (and what sees it) with a monotonic except mask; its author still holds it",
      access: "admin",
      body: s.quarantineBody,
      answer: s.quarantineAnswer,
      async handler({ body }) {
        const mask = await adjudication.quarantine(kb, body.context, body.handle);
        wrote("quarantine");
        return { mask };
      },
    }),
    route({
      method: "POST",
      url: "/v1/unquarantine",
      summary: "Retract a channel's except mask on a sentex",
      access: "admin",
      body: s.quarantineBody,
      answer: s.unquarantineAnswer,
      async handler({ body }) {
        const removed = await adjudication.unquarantine(kb, body.context, body.handle);
        if (removed) wrote("unquarantine");
        return { removed };
      },
    }),
    readRoute({
      method: "POST",
      url: "/v1/quarantined",
      summary: "The handles a channel's except masks hide",
      access: "any",
      body: s.quarantinedBody,
      answer: s.quarantinedAnswer,
      handler: ({ body }) => ({ handles: adjudication.quarantined(kb, body.context) }),
    }),
    // ------------------------------------------------------------ belief (K6)
    readRoute({
      method: "POST",
      url: "/v1/believes",
      summary: "Does the agent believe the goal: a proof in its own context's cone (K6), with the bindings",
      access: "any",
      body: s.believesBody,
      answer: s.believesAnswer,
      handler: ({ body }) => belief.believes(kb, body.agent, body.goal),
    }),
    route({
      method: "POST",
      url: "/v1/convene",
      summary: "Let a context see each agent's belief context (monotonic edges; idempotent)",
      access: "admin",
      body: s.conveneBody,
      answer: s.conveneAnswer,
      async handler({ body }) {
        for (const a of body.agents) contextFor(a);
        await belief.convene(kb, body.context, body.agents);
        wrote("convene");
        return { context: body.context, agents: belief.convenedAgents(kb, body.context) };
      },
    }),
    readRoute({
      method: "POST",
      url: "/v1/disagreements",
      summary: "Contradictions a context sees whose every side is a convened agent's own statement",
      access: "any",
      body: s.disagreementsBody,
      answer: s.disagreementsAnswer,
      handler: ({ body }) => ({ agents: belief.convenedAgents(kb, body.context), disagreements: belief.disagreements(kb, body.context) }),
    }),
    route({
      method: "POST",
      url: "/v1/disregard",
      summary: "Hide one of the agent's own statements from its belief context (and what sees it)",
      access: "any",
      body: s.disregardBody,
      answer: s.disregardAnswer,
      async handler({ body, principal }) {
        const agent = actingAgent(principal, body.agent, "agent");
        handleOr404(kb, body.handle);
        const mask = await belief.disregard(kb, agent, body.handle);
        wrote("disregard");
        return { mask };
      },
    }),
    route({
      method: "POST",
      url: "/v1/restore",
      summary: "Undo a disregard: retract the agent's except mask on the statement",
      access: "any",
      body: s.disregardBody,
      answer: s.restoreAnswer,
      async handler({ body, principal }) {
        const agent = actingAgent(principal, body.agent, "agent");
        const restored = await belief.restore(kb, agent, body.handle);
        if (restored) wrote("restore");
        return { restored };
      },
    }),
    readRoute({
      method: "POST",
      url: "/v1/disregards",
      summary: "The handles an agent has disregarded (default: the calling agent)",
      access: "any",
      body: s.disregardsBody,
      answer: s.disregardsAnswer,
      handler: ({ body, principal }) => {
        const agent = body.agent ?? (principal.admin ? undefined : principal.id);
        if (agent === undefined) throw new WireError("bad-request", "the admin names the agent");
        contextFor(agent);
        return { agent, handles: belief.disregards(kb, agent) };
      },
    }),
  ];
}
