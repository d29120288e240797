/** Naming conventions every part of the channel shares (docs/wire.md "Sentences"). */

export const REGISTRY_CONTEXT = "CxRegistry";
export const SPEECH_ACTS_CONTEXT = "CxSpeechActs";
export const UNIVERSE_CONTEXT = "CxUniverse";
export const CORE_CONTEXT = "CxCore";
export const DISPUTES_CONTEXT = "CxDisputes";

/** The identity conventions live with the KB (one definition for daemon, channel and agents). */
export { isAgentId, contextFor } from "../kb/identity.js";

/** A string value as a sentence atom: str("Postgres 16") -> "\"Postgres 16\"". */
export const str = (value: string): string => JSON.stringify(value);
