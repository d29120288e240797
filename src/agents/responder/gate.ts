/**
 * The responder's pure rails: the DM shape, the rate state, and `gateDecision`, which
 * alone decides reply / escalate / drop for one DM (ADR-0014). Nothing here does I/O or
 * reads a clock; time is passed in as epoch milliseconds.
 */
import { z } from "zod";
import { clampAtSentence } from "../composer/guard.js";
import { type Charter, findEscalationKeyword } from "./charter.js";

/** A direct message as the responder sees it. */
export interface Dm {
  readonly senderId: string;
  readonly senderName: string;
  readonly conversationId: string;
  /** The platform's id for this message; null when the event carried none (R9). */
  readonly messageId: string | null;
  readonly text: string;
}

const nonEmpty = z.string().min(1);
const DmEventSchema = z.object({
  obc: z.object({
    eventType: z.literal("dm_message"),
    from: z.object({ id: nonEmpty, name: z.string().optional() }),
    metadata: z.object({
      conversation_id: nonEmpty.optional(),
      conversationId: nonEmpty.optional(),
      messageId: nonEmpty.optional(),
      message_id: nonEmpty.optional(),
    }),
    text: z.string(),
  }),
});

/**
 * The DM inside a presence-daemon event (`{obc: {eventType: "dm_message", from, metadata, text}}`),
 * or null for anything else or anything malformed.
 *
 * @example extractDm({ obc: { eventType: "dm_message", from: { id: "b1", name: "Rex" },
 *   metadata: { conversation_id: "c1", messageId: "m1" }, text: "hi" } })?.conversationId // "c1"
 */
export function extractDm(event: unknown): Dm | null {
  const r = DmEventSchema.safeParse(event);
  if (!r.success) return null;
  const { from, metadata, text } = r.data.obc;
  const conversationId = metadata.conversation_id ?? metadata.conversationId;
  if (conversationId === undefined) return null;
  return {
    senderId: from.id,
    senderName: from.name ?? "?",
    conversationId,
    messageId: metadata.messageId ?? metadata.message_id ?? null,
    text,
  };
}

/** Today's counters. Maps, not objects, so a conversation id can never reach a prototype. */
export interface RateState {
  /** The UTC day the counters belong to, `YYYY-MM-DD`. */
  readonly day: string;
  readonly repliesToday: number;
  readonly perConversationToday: ReadonlyMap<string, number>;
  /** Epoch ms of the last reply per conversation. Carried across days, so min-gap holds over midnight. */
  readonly lastReplyAtMs: ReadonlyMap<string, number>;
}

/** The UTC day key of an epoch-ms instant. */
export function utcDay(nowMs: number): string {
  return new Date(nowMs).toISOString().slice(0, 10);
}

export function emptyRateState(nowMs: number): RateState {
  return { day: utcDay(nowMs), repliesToday: 0, perConversationToday: new Map(), lastReplyAtMs: new Map() };
}

/**
 * Move the counters to `nowMs`'s UTC day. Same day: returns `state` itself. New day:
 * zeroed counters, `lastReplyAtMs` carried over.
 */
export function rollDay(state: RateState, nowMs: number): RateState {
  const day = utcDay(nowMs);
  if (day === state.day) return state;
  return { day, repliesToday: 0, perConversationToday: new Map(), lastReplyAtMs: state.lastReplyAtMs };
}

/** Count one reply in `dm`'s conversation at `nowMs` (rolling the day first). Pure: returns new state. */
export function recordReply(state: RateState, conversationId: string, nowMs: number): RateState {
  const s = rollDay(state, nowMs);
  const perConversationToday = new Map(s.perConversationToday);
  perConversationToday.set(conversationId, (perConversationToday.get(conversationId) ?? 0) + 1);
  const lastReplyAtMs = new Map(s.lastReplyAtMs);
  lastReplyAtMs.set(conversationId, nowMs);
  return { day: s.day, repliesToday: s.repliesToday + 1, perConversationToday, lastReplyAtMs };
}

export type DropReason = "charter_disabled" | "not_a_dm";
export type GateEscalation =
  | "sender_not_allowlisted"
  | `keyword:${string}`
  | "daily_cap"
  | "conversation_cap"
  | "min_gap";

/** The gate's answer. `drop` carries no signal worth a human's time; every other refusal escalates. */
export type GateVerdict =
  | { action: "reply"; reason: "allowlisted" }
  | { action: "escalate"; reason: GateEscalation }
  | { action: "drop"; reason: DropReason };

/**
 * Decide what to do with one DM. First match wins, in the original's order:
 *
 * | # | when | verdict |
 * |---|---|---|
 * | 1 | charter missing or not enabled | drop `charter_disabled` |
 * | 2 | `dm` is null | drop `not_a_dm` |
 * | 3 | sender not on the allowlist | escalate `sender_not_allowlisted` |
 * | 4 | an escalation keyword in the text (whole word, any case) | escalate `keyword:<kw>` |
 * | 5 | replies today >= daily cap | escalate `daily_cap` |
 * | 6 | replies in this conversation today >= its cap | escalate `conversation_cap` |
 * | 7 | less than the minimum gap since this conversation's last reply (or the clock went back) | escalate `min_gap` |
 * | 8 | otherwise | reply `allowlisted` |
 *
 * The state is rolled to `nowMs`'s day first, so a caller that forgot to roll cannot be
 * held to yesterday's counters. Dedup and self-echo are the caller's checks.
 *
 * @example gateDecision(charter, dm, emptyRateState(now), now) // { action: "reply", reason: "allowlisted" }
 */
export function gateDecision(charter: Charter | null, dm: Dm | null, state: RateState, nowMs: number): GateVerdict {
  if (charter === null || charter.enabled !== true) return { action: "drop", reason: "charter_disabled" };
  if (dm === null) return { action: "drop", reason: "not_a_dm" };
  if (!charter.allowlist.has(dm.senderId)) return { action: "escalate", reason: "sender_not_allowlisted" };
  const kw = findEscalationKeyword(charter, dm.text);
  if (kw !== null) return { action: "escalate", reason: `keyword:${kw}` };
  const s = rollDay(state, nowMs);
  const { limits } = charter;
  if (s.repliesToday >= limits.maxRepliesPerDay) return { action: "escalate", reason: "daily_cap" };
  if ((s.perConversationToday.get(dm.conversationId) ?? 0) >= limits.maxRepliesPerConversationPerDay) {
    return { action: "escalate", reason: "conversation_cap" };
  }
  const last = s.lastReplyAtMs.get(dm.conversationId);
  if (last !== undefined && (nowMs < last || nowMs - last < limits.minGapMsPerConversation)) {
    return { action: "escalate", reason: "min_gap" };
  }
  return { action: "reply", reason: "allowlisted" };
}

/**
 * Clamp an outgoing reply to `maxChars` code points at a sentence boundary when one lies
 * past half (see `clampAtSentence`, shared with the composer guard).
 *
 * @example clampReply("Hello there. How are you today?", 20) // "Hello there."
 */
export const clampReply: (text: string, maxChars: number) => string = clampAtSentence;
