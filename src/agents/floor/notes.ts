/**
 * The three offer notes (ADR 0119 §1; reference §3.5). Every turn carries one, so he may
 * decline every turn, a clean hail included. Worded for this port; each is marked as coming
 * from no one in the room.
 */
import type { TurnOffer } from "../composer/types.js";
import type { TurnDecision } from "./machine.js";

export type OfferNote = "name-came-up" | "nobody-named-you" | "unprompted";

export const OFFER_NOTES: Readonly<Record<OfferNote, string>> = {
  "name-came-up":
    "[floor note, not said by anyone in the room] Your name came up. If they are talking to you, answer. " +
    "If they only mentioned you while talking to someone else, reply with nothing at all.",
  "nobody-named-you":
    "[floor note, not said by anyone in the room] The person you were talking with spoke again without naming you. " +
    "Answer only if this clearly follows up on what you just said; otherwise reply with nothing at all.",
  unprompted:
    "[floor note, not said by anyone in the room] Nobody addressed you. Say something only if it is worth saying; " +
    "staying silent is normal and usually right.",
};

/**
 * Why a turn was offered, as the composer is told. An all-policy offer is unprompted:
 * nobody named him and he holds no conversation (an open question in docs/agents-floor.md).
 */
export function offerFor(turn: TurnDecision): TurnOffer {
  switch (turn.action) {
    case "wake":
    case "hold":
      return "addressed";
    case "offer":
      if (turn.reason === "mentioned") return "mentioned";
      if (turn.reason === "holder") return "holder";
      return "unprompted";
    case "volition_gate_open":
      return "unprompted";
  }
}

const NOTE_FOR_OFFER: Readonly<Record<TurnOffer, OfferNote>> = {
  addressed: "name-came-up",
  mentioned: "name-came-up",
  holder: "nobody-named-you",
  unprompted: "unprompted",
};

/** Which note a turn carries: a hail and a mention both say his name came up. */
export function noteFor(turn: TurnDecision): OfferNote {
  return NOTE_FOR_OFFER[offerFor(turn)];
}
