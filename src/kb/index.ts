/** The knowledge-base core's public surface. */
export { openKb, Kb, clashId } from "./kb.js";
export type { KbOptions, KbFailure, ReadAt, SentexRecord, RemovedEntry, FeedEvent, AssertResult, EditBatch, EditResult, WhyResult, ClashEntry, ClashSide, EventListener } from "./kb.js";
export { DEFAULT_READ_LIMITS, type ReadLimits } from "./query.js";
export type { AddEntry, Strength, RemovalReason, EngineLimits, Bounded } from "./engine.js";
export { DEFAULT_ENGINE_LIMITS } from "./engine.js";
export type { Durability, FsyncFn } from "./store.js";
export { KbError, isKbError, KB_ERROR_TYPES } from "./errors.js";
export type { KbErrorType, Problem } from "./errors.js";
export * as terms from "./term.js";
export { goalShape, literalShape, sentenceShape, isContextName } from "./sentence.js";
export type { Goal, Literal } from "./sentence.js";
export { splitSentences, loadContextFile, loadContextsDir } from "./loader.js";
export { contextFor, agentFor, isAgentId } from "./identity.js";
export * as disputes from "./disputes.js";
export * as adjudication from "./adjudication.js";
export * as belief from "./belief.js";
export * as registry from "./registry.js";
export type { Dispute, DisputeState } from "./disputes.js";
