/**
 * The bounded responder's public surface (ADR-0014, docs/agents-responder.md). The daemon
 * wiring (channel KB port, HTTP ingest, NATS, GET /status, CLI) is exported here too.
 */
export { type Charter, CharterError, type CharterFile, CharterFileSchema, type LoadedCharter, charterBounds, charterSha256, compileKeyword, defaultLimits, envEnabled, findEscalationKeyword, loadCharter, normaliseForMatch, parseCharter } from "./charter.js";
export { type Dm, type DropReason, type GateEscalation, type GateVerdict, type RateState, clampReply, emptyRateState, extractDm, gateDecision, recordReply, rollDay, utcDay } from "./gate.js";
export { type AuditBreak, type AuditDetail, AuditChainError, AuditLog, type AuditRecord, type AuditSink, type AuditVerdict, bootAction, chainHash, maxAuditLineBytes, verifyAudit } from "./audit.js";
export { DedupStore, defaultMaxIds } from "./dedup.js";
export { PlatformClient, type PlatformClientOptions, PlatformError, type PlatformErrorCode, type PlatformPort, type ThreadMessage, parseTokenFile } from "./platform.js";
export { AuditReplay, answerableHistory, type Clock, type DmRef, type EscalationNotice, type KbPort, type Outcome, type ProcessedIds, Responder, type ResponderDrop, type ResponderEscalation, type ResponderOptions, type ResponderPorts, type ResponderStatus, type UnrecordedOutcome, responderDefaults } from "./responder.js";
export { type BootOptions, type Booted, bootResponder } from "./boot.js";
export { type DmNode, ChannelKb, type ChannelKbOptions, KbUnavailableError, defaultRecallPredicates, escalationPredicate, recallBounds } from "./channelkb.js";
export { type IngestParse, FlatDmSchema, dmPredicate, dmQueryGoal, dmQuestion, maxDmFieldChars, maxDmTextChars, parseDmNode, parseDmQuestion, parseIngest } from "./dmnode.js";
export { type CatchupLimits, type IngestResult, ResponderService, type ServiceOptions, type ServiceStatus, type Via, defaultCatchupLimits, reconnectBackoffMs } from "./service.js";
export { type HttpOptions, type HttpSurface, isLoopbackAddress, isLoopbackBind, maxIngestBodyBytes, startHttp } from "./http.js";
export { NatsBus, type NatsOptions, defaultDmSubject, defaultEscalationSubject, escalationAgentId, escalationEvent, maxNatsPayloadBytes } from "./nats.js";
export { defaultResponderAgent, defaultResponderChannel, defaultResponderPort, registerResponderCommand } from "./cli.js";
export { type KillSwitch, type OffWindow, type SwitchedOff, clearSwitchedOff, inWindow, noteSwitchedOff, readSwitchedOff, switchedOffFile, windowAction } from "./killswitch.js";
