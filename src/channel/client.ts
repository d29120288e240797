/**
 * The light client (package entry `koinii` and `koinii/client`): the channel library over the
 * `wire` medium, with the pure term module (parse, print, canonical form) and nothing of the
 * engine: importing it loads neither better-sqlite3 nor the KB. `koinii/channel` adds the
 * in-process `local` medium; `koinii/kb` is the engine itself.
 */
export { wire, WireMedium, DEFAULT_TIMEOUT_MS, DEFAULT_FAILOVER_MS, DEFAULT_MAX_RETRY_AFTER_MS, MAX_WAIT_MS, WRITE_PATHS, KEYLESS_PATHS } from "./wire.js";
export { daemonOrigins, splitDaemonUrls } from "./nodes.js";
export type { WireConnection } from "./wire.js";
export type {
  Medium, Handle, Seq, ContextName, AgentId, SentexRecord, RemovedEntry, Problem, Strength, FeedEvent, FeedAdded, FeedRemoved,
  AddEntry, EditBatch, AssertAnswer, EditAnswer, QueryAnswer, WatchSpec, FeedOpenAnswer, FeedPollOptions, FeedPollAnswer,
  AgentRegistration, AgentInfo, SubscribeOptions, EventCallback, Subscription,
  DisputeMedium, Dispute, DisputeState, ClashSide, RulingAnswer, WhoRuled, Tally, MajorityOutcome, BeliefAnswer, Disagreement,
} from "./medium.js";
export * as terms from "../kb/term.js";
export { ChannelError, isChannelError, CHANNEL_ERROR_TYPES } from "./errors.js";
export type { ChannelErrorType } from "./errors.js";
export { contextFor, isAgentId, str, REGISTRY_CONTEXT, SPEECH_ACTS_CONTEXT, DISPUTES_CONTEXT } from "./names.js";
export {
  join, assert, poseQuery, answer, endorse, justify, notUnderstood, refuse, vote, dispute, negationOf, retract, replyMany,
  speakerOf, answerContent, answersTo, endorsementsOf, query, coneOf, openQueries, claim, release, claimOf,
} from "./channel.js";
export type { AgentHandle, OpenQuery, ClaimStatus } from "./channel.js";
export { registerAgent, agents, setTrust, setDisplayName, trustOf, displayNameOf } from "./identity.js";
export { subscribe, unsubscribe } from "./subscribe.js";
export { DEFAULT_WAIT_MS, MAX_POLL_FAILURES, TRANSIENT_TYPES, NODE_LOST_TYPES } from "./pollloop.js";
export { DEFAULT_MAX_QUEUED_EVENTS } from "./delivery.js";
export { openConsumer, sync, viewOf, snapshot, closeConsumer, memoryCursorStore, fileCursorStore, MAX_RESNAPSHOTS_PER_SYNC, MAX_REOPENS_PER_SYNC } from "./catchup.js";
export type { Consumer, CursorStore, CursorPosition, SyncOptions, SyncResult, ResnapshotReason } from "./catchup.js";
export {
  disputesIn, disputed, disputeState, notifyDisputes, sweepStale, reopenDispute, rule, withdrawRulings, standingRulings, whoRuled,
  tally, resolveByMajority, contestedPremises, restsOnContested, quarantine, unquarantine, quarantined, believes, convene,
  disagreements, disregard, restore, disregards, watchDisputes,
} from "./disputes.js";
export type { DisputeChange, DisputeWatch } from "./disputes.js";
