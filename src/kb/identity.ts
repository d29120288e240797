/**
 * Agent identity conventions (docs/kb.md "Identity conventions"): an agent `AgentAtlas` writes only its
 * own context `CxAtlas` (K4), which is also its belief context (K6).
 *
 *   contextFor("AgentAtlas") // "CxAtlas"
 *   agentFor("CxAtlas")      // "AgentAtlas"
 */
const AGENT_RE = /^Agent[A-Z][A-Za-z0-9]*$/;

export const isAgentId = (s: unknown): s is string => typeof s === "string" && AGENT_RE.test(s);

/** Drop a leading `Agent`, prefix `Cx` (a malformed result is refused by the naming check where it is used). */
export function contextFor(agentId: string): string {
  return "Cx" + agentId.replace(/^Agent/, "");
}

/** The agent whose own context this is, or undefined for a context that is no agent's. */
export function agentFor(ctx: string): string | undefined {
  const id = "Agent" + ctx.slice(2);
  return ctx.startsWith("Cx") && AGENT_RE.test(id) ? id : undefined;
}
