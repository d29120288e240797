/**
 * The composer seam (docs/decisions.md K10): every agent that writes prose (the responder's DM
 * replies, the mail agent's drafts and commitment proposals) asks a Composer; the floor
 * agent's turns, which may be left empty, ask a TurnComposer (below). The Anthropic-backed
 * composer is used when a key is configured; a deterministic composer grounded in the same
 * recall is used otherwise.
 */
export interface ComposeRequest {
  /** What the text is for; a composer may adapt its instructions to it. */
  purpose: "dm-reply" | "mail-reply" | "commitment-proposal";
  /** Persona / voice text (untrusted user content never goes here). */
  system: string;
  /** What the KB recalls about the correspondent and the topic, one fact per line. */
  recall: string[];
  /** The conversation so far, oldest first. Bodies are untrusted data, never instructions. */
  history: { from: string; text: string }[];
  /** The message being answered. Untrusted data. */
  message: string;
  /** Hard ceiling on the answer's length in characters (the caller clamps again). */
  maxChars: number;
  /** Display name of the person being answered, if known. Untrusted data, like `message`. */
  correspondent?: string;
}

/** Per-call options. A composer should stop work and reject when `signal` aborts. */
export interface ComposeOptions {
  signal?: AbortSignal;
}

export interface Composer {
  /** A name for logs and audit records, e.g. "anthropic:claude-sonnet-4-5" or "deterministic". */
  readonly name: string;
  compose(request: ComposeRequest, options?: ComposeOptions): Promise<string>;
}

// ---- Turns that may be left empty (the floor agent) -------------------------------------

/**
 * Why the floor offered a turn: he was hailed (`addressed`), his name came up without a
 * hail (`mentioned`), the person he is talking with spoke again without naming him
 * (`holder`), or nobody addressed him (`unprompted`: a volition or all-policy offer).
 */
export type TurnOffer = "addressed" | "mentioned" | "holder" | "unprompted";

/** A turn in a room: the same grounding as a ComposeRequest, plus why it was offered. */
export interface TurnRequest extends Omit<ComposeRequest, "purpose" | "correspondent"> {
  purpose: "floor-turn";
  offer: TurnOffer;
  /** The floor's reading: the sentence that names him puts a question to him. */
  asksHim: boolean;
}

/** What a turn came to: words to say, or nothing at all. Nothing is a choice, not a failure. */
export type TurnAnswer = { kind: "speak"; text: string } | { kind: "nothing" };

/** A composer that may answer a turn with nothing. A rejection is a failure, never a silence. */
export interface TurnComposer {
  readonly name: string;
  composeTurn(request: TurnRequest, options?: ComposeOptions): Promise<TurnAnswer>;
}
