/**
 * The composer used when no model is configured (docs/decisions.md K10). It writes only from
 * what the request carries: it picks the recalled facts that share the most words with
 * the message and quotes them, says it is the bounded responder, and says a studio
 * session will follow up. It never echoes the message, never invents history, and never
 * promises anything; the same request always gives the same text.
 *
 * For a floor turn (`composeTurn`) it follows the floor's rules, since it has no judgement
 * of its own: it speaks when he was addressed, and on a mention only when the sentence
 * naming him puts a question to him; a nameless line from the person he is talking with
 * and an unprompted offer get nothing (it cannot tell a follow-up from a turn to someone
 * else, and silence is the cheap mistake).
 */
import { clampAtSentence, promiseIn } from "./guard.js";
import type { ComposeRequest, Composer, TurnAnswer, TurnComposer, TurnRequest } from "./types.js";

/** At most this many recalled facts are quoted. */
export const maxRecallQuoted = 2;
/** Each quoted fact is cut to this many characters. */
export const maxRecallFactChars = 240;

function words(text: string): Set<string> {
  return new Set(
    text
      .normalize("NFKC")
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter((w) => w.length > 3),
  );
}

/** The recalled facts worth quoting: most words in common with the message first, ties in recall order. */
export function relevantRecall(recall: readonly string[], message: string, max: number = maxRecallQuoted): string[] {
  const m = words(message);
  return recall
    .map((fact, i) => ({ fact: fact.replace(/\s+/gu, " ").trim(), i }))
    .filter((f) => f.fact.length > 0 && promiseIn(f.fact) === null)
    .map((f) => ({ ...f, score: [...words(f.fact)].filter((w) => m.has(w)).length }))
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, max)
    .map((f) => clampAtSentence(f.fact, maxRecallFactChars).replace(/[.!?…]+$/u, ""));
}

export class DeterministicComposer implements Composer, TurnComposer {
  readonly name = "deterministic";

  /**
   * @example await new DeterministicComposer().compose({ purpose: "dm-reply", system: "", recall: ["Rex likes jazz"],
   *   history: [], message: "any jazz lately?", maxChars: 500 })
   */
  async compose(request: ComposeRequest): Promise<string> {
    const facts = relevantRecall(request.recall, request.message);
    const parts = ["Thank you for your message, I have read it."];
    if (facts.length > 0) parts.push(`What I remember that seems related: ${facts.map((f) => `“${f}”`).join("; ")}.`);
    else parts.push("Nothing I remember speaks to it yet, so I will keep this short.");
    parts.push("I am the bounded responder, so I keep replies brief; a studio session will follow up on anything that needs more.");
    return clampAtSentence(parts.join(" "), request.maxChars);
  }

  /**
   * @example await new DeterministicComposer().composeTurn({ purpose: "floor-turn", offer: "mentioned", asksHim: false,
   *   system: "", recall: [], history: [], message: "I think clankie knows", maxChars: 400 }) // { kind: "nothing" }
   */
  async composeTurn(request: TurnRequest): Promise<TurnAnswer> {
    const speaks = request.offer === "addressed" || (request.offer === "mentioned" && request.asksHim);
    if (!speaks) return { kind: "nothing" };
    return { kind: "speak", text: clampAtSentence(spoken(relevantRecall(request.recall, request.message)), request.maxChars) };
  }
}

/** A spoken turn in a room: short, in the first person, and grounded only in recall. */
function spoken(facts: string[]): string {
  if (facts.length === 0) return "I heard you. I don't have anything on that yet.";
  return `I heard you. What I have on that: ${facts.map((f) => `“${f}”`).join("; ")}.`;
}
