/** Naming conventions every part of the channel shares (wire.md "Sentences", design.md D8). */
import type { AgentId, ContextName } from "./medium.js";

export const REGISTRY_CONTEXT = "CxRegistry";
export const SPEECH_ACTS_CONTEXT = "CxSpeechActs";
export const UNIVERSE_CONTEXT = "CxUniverse";
export const CORE_CONTEXT = "CxCore";
export const DISPUTES_CONTEXT = "CxDisputes";

const AGENT_ID_RE = /^Agent[A-Z][A-Za-z0-9]*$/;
export const isAgentId = (s: string): boolean => AGENT_ID_RE.test(s);

/**
 * An agent's own context: drop a leading `Agent`, prefix `Cx`.
 *
 *   contextFor("AgentAtlas"); // "CxAtlas"
 */
export const contextFor = (agentId: AgentId): ContextName => "Cx" + agentId.replace(/^Agent/, "");

/** A string value as a sentence atom: str("Postgres 16") -> "\"Postgres 16\"". */
export const str = (value: string): string => JSON.stringify(value);
