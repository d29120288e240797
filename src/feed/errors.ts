/**
 * Every refusal the feed can answer, as a value with a stable `type`. The daemon maps each
 * type to its HTTP status in daemon/errors.ts; the feed only knows the names.
 */
export const FEED_ERROR_TYPES = [
  "not-watchable",
  "unknown-subscription",
  "bad-cursor",
  "bad-request",
  "too-many-subscriptions",
  "too-many-waiters",
  "shutting-down",
] as const;

export type FeedErrorType = (typeof FEED_ERROR_TYPES)[number];

export class FeedError extends Error {
  readonly type: FeedErrorType;

  constructor(type: FeedErrorType, message: string) {
    super(message);
    this.name = "FeedError";
    this.type = type;
  }
}
