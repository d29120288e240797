/**
 * The composer seam (design.md K10): every agent that writes prose (the responder's DM
 * replies, the mail agent's drafts and commitment proposals, the floor agent's spoken
 * replies) asks a Composer. The Anthropic-backed composer is used when a key is
 * configured; a deterministic composer grounded in the same recall is used otherwise.
 */
export interface ComposeRequest {
  /** What the text is for; a composer may adapt its instructions to it. */
  purpose: "dm-reply" | "mail-reply" | "floor-reply" | "commitment-proposal";
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
