/**
 * Belief projection (issue 6, reference §8.6, K6): an agent's own context is its belief
 * context, so "does AgentAtlas believe P?" is a proof of P in CxAtlas's cone.
 *
 *   believes(kb, "AgentAtlas", "(usesDatabase ProdCluster Postgres)") // true / false
 *   await convene(kb, "CxPanel", ["AgentAva", "AgentBen"]);
 *   disagreements(kb, "CxPanel") // [{ between: ["AgentAva", "AgentBen"], sides: [...] }]
 */
import { KbError } from "./errors.js";
import type { Kb } from "./kb.js";
import { contextFor, agentFor } from "./identity.js";
import { parseTerm } from "./term.js";

const REGISTRY_CONTEXT = "CxRegistry";

/** Does `agent` believe `goal`? With variables: the binding maps under which it does. */
export function believes(kb: Kb, agent: string, goal: string): { believed: boolean; solutions: Record<string, string>[] } {
  const { solutions } = kb.query(goal, contextFor(agent));
  return { believed: solutions.length > 0, solutions };
}

/** Let `ctx` see each agent's belief context (monotonic topology; idempotent). */
export async function convene(kb: Kb, ctx: string, agents: string[]): Promise<string> {
  if (!agents.length) return ctx;
  await kb.edit({ add: agents.map((a) => ({ sentence: `(genlCx ${ctx} ${contextFor(a)})`, context: "CxUniverse", strength: "monotonic" as const })) });
  return ctx;
}

/**
 * Registered agents (`(agent A)` in CxRegistry) whose own context `ctx` sees (itself
 * excluded). Every context name maps to an agent-shaped id (CxCore -> AgentCore), so the
 * registry decides who is an agent: without it, the vocabulary contexts in every cone
 * (CxCore, CxSpeechActs, a house-rules context) were counted as convened agents.
 */
export function convenedAgents(kb: Kb, ctx: string): string[] {
  const registered = new Set(kb.match("(agent ?a)", REGISTRY_CONTEXT).map((r) => (parseTerm(r.sentence) as string[])[1]!));
  const out: string[] = [];
  for (const c of kb.cone(ctx)) {
    const a = c === ctx ? undefined : agentFor(c);
    if (a && registered.has(a)) out.push(a);
  }
  return out.sort();
}

export interface Disagreement {
  id: string;
  between: string[];
  sides: { agent: string; sentence: string; handle: number }[];
}

/** Contradictions `ctx` sees whose every side is stored in a convened agent's own context. */
export function disagreements(kb: Kb, ctx: string): Disagreement[] {
  const convened = new Set(convenedAgents(kb, ctx));
  const { contradictions, conflicts } = kb.contradictions(ctx);
  const out: Disagreement[] = [];
  for (const c of [...contradictions, ...conflicts]) {
    const sides = c.sides.map((s) => ({ agent: agentFor(s.context), sentence: s.sentence, handle: s.handle }));
    if (sides.some((s) => !s.agent || !convened.has(s.agent))) continue;
    out.push({ id: c.id, between: [...new Set(sides.map((s) => s.agent!))].sort(), sides: sides as Disagreement["sides"] });
  }
  return out;
}

/** Hide one of the agent's own statements from its belief context (and what sees it). */
export async function disregard(kb: Kb, agent: string, h: number): Promise<number> {
  const s = kb.sentex(h);
  if (!s) throw new KbError("unknown-handle", `no sentex has handle ${h}`);
  if (s.creator !== agent) throw new KbError("not-own-statement", `${agent} can disregard only its own statements; handle ${h} was asserted by ${s.creator ?? "nobody (derived)"}`);
  return (await kb.assert(`(except (sentexHandle ${h}))`, contextFor(agent), { strength: "monotonic", creator: agent })).handle;
}

/** Undo a disregard. Returns whether a mask was retracted. */
export async function restore(kb: Kb, agent: string, h: number): Promise<boolean> {
  const mask = kb.match(`(except (sentexHandle ${h}))`, contextFor(agent))[0];
  if (!mask) return false;
  await kb.retract(mask.handle);
  return true;
}

/** Handles the agent has disregarded. */
export function disregards(kb: Kb, agent: string): number[] {
  return kb
    .match("(except ?h)", contextFor(agent))
    .map((r) => Number(/\(sentexHandle ([0-9]+)\)/.exec(r.sentence)?.[1]))
    .filter((h) => Number.isFinite(h))
    .sort((a, b) => a - b);
}
