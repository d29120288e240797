/**
 * The mouth: whatever turns an offered turn into speech or silence. The realtime voice
 * model lives outside this folder behind this interface; the default implementation writes
 * a text reply through the composer seam (design.md K10).
 */
import type { Composer, ComposeRequest } from "../composer/types.js";
import type { TurnDecision } from "./machine.js";
import { OFFER_NOTES, type OfferNote } from "./notes.js";
import type { Persona } from "./persona.js";
import { roomLine, type LabeledUtterance, type TurnId } from "./room.js";

export interface MouthTurn {
  turnId: TurnId;
  turn: TurnDecision;
  note: OfferNote;
  /** The line that earned the turn. */
  utterance: LabeledUtterance;
  /** What the room said before it, oldest first (bounded by the session's ring). */
  history: readonly LabeledUtterance[];
}

/** Silence is a real outcome (ADR 0119 §1), not an error. */
export type MouthOutcome = { kind: "spoke"; text: string } | { kind: "silent" };

export interface Mouth {
  /** Offer one turn. Turns arrive one at a time; a rejection counts as silence. */
  respond(turn: MouthTurn): Promise<MouthOutcome>;
  /** The hold window ran out with the floor dormant: drop any open session. */
  close?(): void;
}

/** Recall for a turn: facts the KB holds about the speaker and the topic, one per line. */
export type Recall = (utterance: LabeledUtterance) => Promise<string[]>;

/**
 * A mouth that writes text through a Composer. The persona's voice and the offer note are
 * the system text (both trusted); room lines, display names included, go only into
 * `history` and `message`, JSON-quoted by `roomLine`. A blank answer is silence.
 *
 * @example new ComposerMouth(composer, persona).respond(turn) // { kind: "silent" } or { kind: "spoke", text }
 */
export class ComposerMouth implements Mouth {
  readonly #composer: Composer;
  readonly #persona: Persona;
  readonly #recall: Recall;

  constructor(composer: Composer, persona: Persona, recall: Recall = async () => []) {
    this.#composer = composer;
    this.#persona = persona;
    this.#recall = recall;
  }

  async respond(t: MouthTurn): Promise<MouthOutcome> {
    const request: ComposeRequest = {
      purpose: "floor-reply",
      system: [this.#persona.voice, `You are ${this.#persona.names[0]}.`, OFFER_NOTES[t.note]]
        .filter((s) => s !== "")
        .join("\n\n"),
      recall: await this.#recall(t.utterance),
      history: t.history.map((u) => ({ from: u.speakerId, text: roomLine(u) })),
      message: roomLine(t.utterance),
      maxChars: this.#persona.maxReplyChars,
    };
    const text = (await this.#composer.compose(request)).trim().slice(0, this.#persona.maxReplyChars).trim();
    return text === "" ? { kind: "silent" } : { kind: "spoke", text };
  }
}
