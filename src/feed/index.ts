/** The change feed's public surface: subscriptions, rings, long poll and streams over the KB's events. */
export { FeedHub, DEFAULT_FEED_LIMITS, eventJson, pollAnswerBody } from "./hub.js";
export type { FeedLimits, FeedPrincipal, WatchRequest, WatchAnswer, PollRequest, PollAnswer, WatcherInfo, FeedHooks, StreamSink, PreparedStream } from "./hub.js";
export { FeedError, FEED_ERROR_TYPES } from "./errors.js";
export type { FeedErrorType } from "./errors.js";
export { compileWatch, filterEvent, EventView } from "./filter.js";
export type { WatchSpec, CompiledWatch, WireEvent, WireAdded, WireRemoved } from "./filter.js";
export { Ring } from "./ring.js";
