/**
 * The mouth: whatever turns an offered turn into speech or silence. The realtime voice
 * model lives outside this folder behind this interface; the default implementation writes
 * a text reply through the composer seam (docs/decisions.md K10).
 */
import { ComposeError } from "../composer/anthropic.js";
import type { TurnComposer, TurnRequest } from "../composer/types.js";
import type { TurnDecision } from "./machine.js";
import { OFFER_NOTES, offerFor, type OfferNote } from "./notes.js";
import { characterNames, type Persona } from "./persona.js";
import { asksHim } from "./question.js";
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
 * A mouth that asks a TurnComposer for each turn. The persona's voice and the offer note are
 * the system text (both trusted); room lines, display names included, go only into
 * `history` and `message`, JSON-quoted by `roomLine`. The composer's `nothing` is chosen
 * silence; a rejection, or `speak` with no words, is a failure (recorded as such).
 *
 * @example new ComposerMouth(composer, persona).respond(turn) // { kind: "silent" } or { kind: "spoke", text }
 */
export class ComposerMouth implements Mouth {
  readonly #composer: TurnComposer;
  readonly #persona: Persona;
  readonly #names: readonly string[];
  readonly #recall: Recall;

  constructor(composer: TurnComposer, persona: Persona, recall: Recall = async () => []) {
    this.#composer = composer;
    this.#persona = persona;
    this.#names = characterNames(persona);
    this.#recall = recall;
  }

  async respond(t: MouthTurn): Promise<MouthOutcome> {
    const request: TurnRequest = {
      purpose: "floor-turn",
      offer: offerFor(t.turn),
      asksHim: asksHim(t.utterance.text, this.#names),
      system: [this.#persona.voice, `You are ${this.#persona.names[0]}.`, OFFER_NOTES[t.note]]
        .filter((s) => s !== "")
        .join("\n\n"),
      recall: await this.#recall(t.utterance),
      history: t.history.map((u) => ({ from: u.speakerId, text: roomLine(u) })),
      message: roomLine(t.utterance),
      maxChars: this.#persona.maxReplyChars,
    };
    const answer = await this.#composer.composeTurn(request);
    if (answer.kind === "nothing") return { kind: "silent" };
    const text = answer.text.trim().slice(0, this.#persona.maxReplyChars).trim();
    if (text === "") throw new ComposeError(`${this.#composer.name} answered a turn with speech but no words`);
    return { kind: "spoke", text };
  }
}
