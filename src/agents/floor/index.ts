/** The floor agent's public surface (docs/agents-floor.md). */
export { FLOOR_ERROR_TYPES, FloorError, isFloorError, type FloorErrorType } from "./errors.js";
export {
  ABOUT_VERBS,
  THIRD_PERSON_AFTER_NAME,
  VOCATIVES,
  classifyAddress,
  isSpeech,
  nameCameUp,
  nameKeys,
  phoneticKey,
  type AddressKind,
} from "./address.js";
export { MAX_ALIASES, MAX_NAMES, MAX_NAME_CHARS, characterNames, parsePersona, personaSchema, type Persona } from "./persona.js";
export {
  DEFAULT_DECAY_WINDOW_MS,
  FloorMachine,
  HOUR_MS,
  VOLITION_DEFAULTS,
  floorOptionsFrom,
  isTurn,
  speakerId,
  type Chattiness,
  type FloorDecision,
  type FloorOptions,
  type FloorSnapshot,
  type FloorState,
  type IgnoreReason,
  type OfferId,
  type ReplyPolicy,
  type SpeakerId,
  type TurnDecision,
  type Utterance,
  type VolitionAccounting,
  type VolitionCap,
} from "./machine.js";
export { OFFER_NOTES, noteFor, offerFor, type OfferNote } from "./notes.js";
export { QUESTION_AUXILIARIES, QUESTION_WORDS, SECOND_PERSON, SUBJECT_OPENERS, asksHim } from "./question.js";
export { ComposerMouth, type Mouth, type MouthOutcome, type MouthTurn, type Recall } from "./mouth.js";
export {
  MAX_DISPLAY_NAME_CHARS,
  labelSpeaker,
  roomLine,
  type FloorNotice,
  type LabeledUtterance,
  type RoomRecorder,
  type SpeakerLabel,
  type TurnId,
  type UtteranceSeq,
} from "./room.js";
export {
  ENGAGED_HOLD_MS,
  ENGAGED_TICK_MS,
  FLOOR_WORK_HEARTBEAT_MS,
  FLOOR_WORK_MAX_MS,
  MAX_HISTORY_BYTES,
  MAX_HISTORY_LINES,
  MAX_QUEUED_TURNS,
  MAX_REORDER_QUEUE,
  UTTERANCE_REORDER_GRACE_MS,
  FloorSession,
  type CaptureFinal,
  type FloorSessionOptions,
} from "./session.js";
export { systemClock, systemScheduler, type Clock, type Scheduler, type TimerHandle } from "./time.js";
export {
  FLOOR_ACTS_CONTEXT,
  MAX_REMEMBERED_UTTERANCES,
  NO_HOLDER,
  UNLABELED,
  KbRoomRecorder,
  decisionFromTerm,
  decisionTerm,
  joinRoom,
  readRoom,
  symbolOf,
  wordOf,
  type KbRoomRecorderOptions,
  type RoomDecision,
  type RoomFloorChange,
  type RoomHistory,
  type RoomNotice,
  type RoomUtterance,
} from "./kbroom.js";
export {
  MAX_INGEST_BODY_BYTES,
  MAX_OPEN_WORK,
  MAX_SEEN_UTTERANCE_IDS,
  MAX_UTTERANCE_CHARS,
  startIngest,
  utteranceSchema,
  type Ingest,
  type IngestOptions,
  type UtteranceBody,
} from "./ingest.js";
export { startFloorAgent, type FloorAgent, type FloorAgentOptions } from "./agent.js";
