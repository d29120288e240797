/**
 * The floor machine (ADR 0119): who he answers, and whether a line earns him a turn.
 *
 * Pure: no I/O, no timers, no clock. Time arrives as `atMs` on every call and must not go
 * backwards. Decay is judged lazily, on each transcript and on `tick`.
 *
 * Transitions of `observe` (F-numbers are cited in the code and in docs/agents-floor.md):
 *
 * | id  | state              | line (classifyAddress / speaker) | decision                 | effect                               |
 * |-----|--------------------|----------------------------------|--------------------------|--------------------------------------|
 * | F1  | any                | no letter or digit               | ignore(not_speech)       | none (after F2's lapse, if any)      |
 * | F2  | engaged, decayed   | anything                         | judged as dormant (F7-F10); if that gives no turn: release(decay) | dormant, holder cleared |
 * | F3  | engaged            | addressed                        | hold                     | holder := speaker, decay refreshed   |
 * | F4  | engaged            | mentioned                        | offer(mentioned)         | none                                 |
 * | F5  | engaged            | none, speaker is holder          | offer(holder)            | none (no refresh)                    |
 * | F6  | engaged            | none, anyone else                | listen                   | none (crosstalk lets the floor lapse)|
 * | F7  | dormant            | addressed                        | wake(addressed)          | engaged, holder := speaker           |
 * | F8  | dormant            | mentioned                        | offer(mentioned)         | stays dormant; not rate-capped       |
 * | F9  | dormant, policy all| none                             | offer(reply_policy_all)  | stays dormant; not rate-capped       |
 * | F10 | dormant            | none                             | volition gate: volition_gate_open or ignore(volition_*) | offer counted |
 *
 * Settlement (`settle`), per pending turn (ADR 0119 consequence "per pending turn"):
 *
 * | id  | turn                          | outcome | effect                                                         |
 * |-----|-------------------------------|---------|----------------------------------------------------------------|
 * | S1  | volition_gate_open            | silent  | suppressed++                                                   |
 * | S2  | volition_gate_open            | spoke   | taken++; dormant -> engaged on the provoking speaker, wake(volition) |
 * | S3  | offer(mentioned|reply_policy_all) | spoke | holder := speaker (engaging from dormant: wake(mentioned|reply_policy_all)) |
 * | S4  | wake(addressed), hold, offer(holder) | spoke | decay refreshed while engaged; holder unchanged              |
 * | S5  | any non-volition turn         | silent  | nothing: a silent offer manufactures no conversation           |
 */
import { classifyAddress, isSpeech, type AddressKind } from "./address.js";
import { FloorError } from "./errors.js";
import type { Persona } from "./persona.js";

export type FloorState = "dormant" | "engaged";
export type ReplyPolicy = "addressed" | "all";
export type Chattiness = "quiet" | "balanced" | "chatty";

/** A gateway-authenticated speaker id; never inferred from audio or from a display name. */
export type SpeakerId = string & { readonly __brand: "SpeakerId" };
/** Names one volition offer, so its outcome settles that offer and no other. */
export type OfferId = number & { readonly __brand: "OfferId" };

export function speakerId(id: string): SpeakerId {
  return id as SpeakerId;
}

export type FloorDecision =
  | { action: "wake"; reason: "addressed" | "mentioned" | "reply_policy_all" | "volition"; lapsed?: true }
  | { action: "hold" }
  | { action: "offer"; reason: "mentioned" | "holder" | "reply_policy_all"; lapsed?: true }
  | { action: "listen" }
  | { action: "release"; reason: "decay" }
  | { action: "volition_gate_open"; offerId: OfferId }
  | { action: "ignore"; reason: IgnoreReason };

/** Why nothing happened; a limit that is hit is said out loud (style.md). */
export type IgnoreReason =
  | "not_speech"
  | "volition_disabled"
  | "volition_interval"
  | "volition_hour_cap"
  | "idle"
  | "settled"
  | "no_pending_offer";

/** The decisions that offer him a turn: the session asks the mouth and settles each one. */
export type TurnDecision = Extract<FloorDecision, { action: "wake" | "hold" | "offer" | "volition_gate_open" }>;

export function isTurn(d: FloorDecision): d is TurnDecision {
  // A volition wake comes only from settle(), never from observe(); it is not a new turn.
  if (d.action === "wake") return d.reason === "addressed";
  return d.action === "hold" || d.action === "offer" || d.action === "volition_gate_open";
}

export interface Utterance {
  speakerId: SpeakerId;
  text: string;
  atMs: number;
}

export interface VolitionCap {
  /** Quiet time since the last volition offer before the gate opens again. */
  minIntervalMs: number;
  /** Volition offers in any sliding hour. Zero turns volition off. */
  maxPerHour: number;
}

/** Caps on volition *offers* (not on speech), by chattiness (reference §3.4). */
export const VOLITION_DEFAULTS: Readonly<Record<Chattiness, VolitionCap>> = {
  quiet: { minIntervalMs: 600_000, maxPerHour: 2 },
  balanced: { minIntervalMs: 240_000, maxPerHour: 6 },
  chatty: { minIntervalMs: 90_000, maxPerHour: 15 },
};

/** How long an engagement survives without a reason to keep it (reference §3.4). */
export const DEFAULT_DECAY_WINDOW_MS = 60_000;
/** The sliding window of `maxPerHour`. */
export const HOUR_MS = 3_600_000;

export interface FloorOptions {
  /** Lowercased names he answers to (persona.ts characterNames). */
  names: readonly string[];
  replyPolicy: ReplyPolicy;
  chattiness: Chattiness;
  decayWindowMs?: number;
  volition?: Partial<VolitionCap>;
}

export interface VolitionAccounting {
  offered: number;
  taken: number;
  suppressed: number;
}

export interface FloorSnapshot {
  state: FloorState;
  holderId: SpeakerId | undefined;
  lastRelevantAtMs: number | undefined;
  accounting: VolitionAccounting;
}

/** Options from a parsed persona. */
export function floorOptionsFrom(persona: Persona, names: readonly string[]): FloorOptions {
  const options: FloorOptions = { names, replyPolicy: persona.replyPolicy, chattiness: persona.chattiness };
  if (persona.decayWindowMs !== undefined) options.decayWindowMs = persona.decayWindowMs;
  if (persona.volition !== undefined) options.volition = persona.volition;
  return options;
}

/**
 * The dormant/engaged floor machine. Construct once per room; feed it every consented
 * final transcript in time order; settle every turn it offers.
 *
 * @example
 *   const floor = new FloorMachine({ names: ["clankie"], replyPolicy: "addressed", chattiness: "balanced" });
 *   floor.observe({ speakerId: speakerId("alice"), text: "hey clankie", atMs: 0 }); // wake(addressed)
 */
export class FloorMachine {
  readonly names: readonly string[];
  readonly replyPolicy: ReplyPolicy;
  readonly decayWindowMs: number;
  readonly cap: Readonly<VolitionCap>;

  #state: FloorState = "dormant";
  #holderId: SpeakerId | undefined;
  #lastRelevantAtMs: number | undefined;
  #lastSeenAtMs = Number.NEGATIVE_INFINITY;

  /** Volition offer times inside the last hour; never longer than `cap.maxPerHour`. */
  #offerTimesMs: number[] = [];
  #lastOfferAtMs: number | undefined;
  /** Unsettled volition offers, oldest first; bounded by `cap.maxPerHour` (oldest evicted). */
  #pending = new Map<OfferId, { speakerId: SpeakerId; atMs: number }>();
  #nextOfferId = 1;
  #offered = 0;
  #taken = 0;
  #suppressed = 0;

  constructor(options: FloorOptions) {
    const defaults = VOLITION_DEFAULTS[options.chattiness];
    if (defaults === undefined) {
      throw new FloorError("floor-options", `unknown chattiness ${JSON.stringify(options.chattiness)}`);
    }
    if (options.replyPolicy !== "addressed" && options.replyPolicy !== "all") {
      throw new FloorError("floor-options", `unknown replyPolicy ${JSON.stringify(options.replyPolicy)}`);
    }
    const decayWindowMs = options.decayWindowMs ?? DEFAULT_DECAY_WINDOW_MS;
    const minIntervalMs = options.volition?.minIntervalMs ?? defaults.minIntervalMs;
    const maxPerHour = options.volition?.maxPerHour ?? defaults.maxPerHour;
    if (!Number.isFinite(decayWindowMs) || decayWindowMs <= 0) {
      throw new FloorError("floor-options", "decayWindowMs must be a positive, finite number of ms", { decayWindowMs });
    }
    if (!Number.isFinite(minIntervalMs) || minIntervalMs < 0) {
      throw new FloorError("floor-options", "volition.minIntervalMs must be a non-negative, finite number of ms", {
        minIntervalMs,
      });
    }
    if (!Number.isInteger(maxPerHour) || maxPerHour < 0) {
      throw new FloorError("floor-options", "volition.maxPerHour must be a non-negative integer", { maxPerHour });
    }
    this.names = [...options.names];
    this.replyPolicy = options.replyPolicy;
    this.decayWindowMs = decayWindowMs;
    this.cap = { minIntervalMs, maxPerHour };
  }

  get state(): FloorState {
    return this.#state;
  }

  /** Who may barge in. Undefined while dormant. It does not force him to speak. */
  get holderId(): SpeakerId | undefined {
    return this.#holderId;
  }

  snapshot(): FloorSnapshot {
    return {
      state: this.#state,
      holderId: this.#holderId,
      lastRelevantAtMs: this.#lastRelevantAtMs,
      accounting: this.accounting(),
    };
  }

  accounting(): VolitionAccounting {
    return { offered: this.#offered, taken: this.#taken, suppressed: this.#suppressed };
  }

  /** Judge one final transcript (the table above). */
  observe(u: Utterance): FloorDecision {
    this.#advance(u.atMs);
    let lapsed = false;
    if (this.#state === "engaged" && this.#decayed(u.atMs)) {
      this.#drop(); // F2
      lapsed = true;
    }
    const decision = lapsed ? this.#observeLapsed(u) : this.#state === "engaged" ? this.#observeEngaged(u) : this.#observeDormant(u);
    this.#check();
    return decision;
  }

  /** Silence check, called on a timer by the session. Never opens the volition gate. */
  tick(atMs: number): FloorDecision {
    this.#advance(atMs);
    if (this.#state === "engaged" && this.#decayed(atMs)) {
      this.#drop();
      this.#check();
      return { action: "release", reason: "decay" };
    }
    return { action: "ignore", reason: "idle" };
  }

  /** His own speech (playback) is a reason to keep the floor: refresh decay while engaged. */
  noteAssistantSpokeAt(atMs: number): void {
    this.#advance(atMs);
    if (this.#state === "engaged") this.#lastRelevantAtMs = atMs;
  }

  /**
   * A running lookup for `speaker` holds the floor (ADR 0119 §7): refresh decay while
   * engaged (holder unchanged), otherwise engage on the asker.
   */
  holdForWork(speaker: SpeakerId, atMs: number): void {
    this.#advance(atMs);
    if (this.#state === "engaged") this.#lastRelevantAtMs = atMs;
    else this.#engage(speaker, atMs);
    this.#check();
  }

  /**
   * What he did with one turn this machine offered (S1-S5). Each turn settles alone, so two
   * quick offers cannot take each other's outcome.
   */
  settle(turn: TurnDecision, speaker: SpeakerId, outcome: "spoke" | "silent", atMs: number): FloorDecision {
    this.#advance(atMs);
    const decision = this.#settle(turn, speaker, outcome, atMs);
    this.#check();
    return decision;
  }

  #settle(turn: TurnDecision, speaker: SpeakerId, outcome: "spoke" | "silent", atMs: number): FloorDecision {
    if (turn.action === "volition_gate_open") {
      const pending = this.#pending.get(turn.offerId);
      if (pending === undefined) return { action: "ignore", reason: "no_pending_offer" };
      this.#pending.delete(turn.offerId);
      if (outcome === "silent") {
        this.#suppressed += 1; // S1
        return { action: "ignore", reason: "settled" };
      }
      this.#taken += 1; // S2
      if (this.#state === "engaged") {
        // An address won the race: the offer is counted, the floor does not move.
        this.#lastRelevantAtMs = atMs;
        return { action: "ignore", reason: "settled" };
      }
      this.#engage(pending.speakerId, atMs);
      return { action: "wake", reason: "volition" };
    }
    if (outcome === "silent") return { action: "ignore", reason: "settled" }; // S5
    if (turn.action === "offer" && (turn.reason === "mentioned" || turn.reason === "reply_policy_all")) {
      // S3: he took a mention or an all-policy offer, so that speaker takes the floor.
      const wasDormant = this.#state === "dormant";
      this.#engage(speaker, atMs);
      return wasDormant ? { action: "wake", reason: turn.reason } : { action: "ignore", reason: "settled" };
    }
    if (this.#state === "engaged") this.#lastRelevantAtMs = atMs; // S4
    return { action: "ignore", reason: "settled" };
  }

  #observeEngaged(u: Utterance): FloorDecision {
    if (!isSpeech(u.text)) return { action: "ignore", reason: "not_speech" }; // F1
    const kind = classifyAddress(u.text, this.names);
    if (kind === "addressed") {
      this.#holderId = u.speakerId; // F3
      this.#lastRelevantAtMs = u.atMs;
      return { action: "hold" };
    }
    if (kind === "mentioned") return { action: "offer", reason: "mentioned" }; // F4
    if (u.speakerId === this.#holderId) return { action: "offer", reason: "holder" }; // F5
    return { action: "listen" }; // F6
  }

  #observeDormant(u: Utterance): FloorDecision {
    if (!isSpeech(u.text)) return { action: "ignore", reason: "not_speech" }; // F1
    const turn = this.#dormantTurn(u, classifyAddress(u.text, this.names));
    return turn ?? this.#volitionGate(u); // F10
  }

  /** F2: the engagement ended before this line; a line that earns a turn subsumes the release. */
  #observeLapsed(u: Utterance): FloorDecision {
    const turn = isSpeech(u.text) ? this.#dormantTurn(u, classifyAddress(u.text, this.names)) : undefined;
    return turn === undefined ? { action: "release", reason: "decay" } : { ...turn, lapsed: true };
  }

  /** F7-F9: what a dormant floor offers without consulting the volition gate. */
  #dormantTurn(
    u: Utterance,
    kind: AddressKind,
  ): Extract<FloorDecision, { action: "wake" | "offer" }> | undefined {
    if (kind === "addressed") {
      this.#engage(u.speakerId, u.atMs); // F7
      return { action: "wake", reason: "addressed" };
    }
    if (kind === "mentioned") return { action: "offer", reason: "mentioned" }; // F8
    if (this.replyPolicy === "all") return { action: "offer", reason: "reply_policy_all" }; // F9
    return undefined;
  }

  #volitionGate(u: Utterance): FloorDecision {
    if (this.cap.maxPerHour === 0) return { action: "ignore", reason: "volition_disabled" };
    this.#offerTimesMs = this.#offerTimesMs.filter((t) => t > u.atMs - HOUR_MS);
    if (this.#lastOfferAtMs !== undefined && u.atMs - this.#lastOfferAtMs < this.cap.minIntervalMs) {
      return { action: "ignore", reason: "volition_interval" };
    }
    if (this.#offerTimesMs.length >= this.cap.maxPerHour) return { action: "ignore", reason: "volition_hour_cap" };
    const offerId = this.#nextOfferId++ as OfferId;
    this.#offered += 1;
    this.#offerTimesMs.push(u.atMs);
    this.#lastOfferAtMs = u.atMs;
    this.#pending.set(offerId, { speakerId: u.speakerId, atMs: u.atMs });
    // An offer nobody ever settles is forgotten, oldest first, rather than kept forever.
    while (this.#pending.size > this.cap.maxPerHour) {
      const oldest = this.#pending.keys().next().value as OfferId;
      this.#pending.delete(oldest);
    }
    return { action: "volition_gate_open", offerId };
  }

  #engage(speaker: SpeakerId, atMs: number): void {
    this.#state = "engaged";
    this.#holderId = speaker;
    this.#lastRelevantAtMs = atMs;
  }

  #drop(): void {
    this.#state = "dormant";
    this.#holderId = undefined;
    this.#lastRelevantAtMs = undefined;
  }

  #decayed(atMs: number): boolean {
    return this.#lastRelevantAtMs !== undefined && atMs - this.#lastRelevantAtMs > this.decayWindowMs;
  }

  #advance(atMs: number): void {
    if (!Number.isFinite(atMs) || atMs < this.#lastSeenAtMs) {
      throw new FloorError("floor-time", "the floor's clock went backwards or is not finite", {
        atMs,
        lastSeenAtMs: this.#lastSeenAtMs,
      });
    }
    this.#lastSeenAtMs = atMs;
  }

  #check(): void {
    const engaged = this.#state === "engaged";
    if (engaged !== (this.#holderId !== undefined) || engaged !== (this.#lastRelevantAtMs !== undefined)) {
      throw new FloorError("floor-invariant", "holder and decay clock must be set exactly while engaged", {
        state: this.#state,
      });
    }
    if (this.#taken + this.#suppressed > this.#offered) {
      throw new FloorError("floor-invariant", "taken + suppressed exceeds offered", { ...this.accounting() });
    }
    if (this.#offerTimesMs.length > this.cap.maxPerHour || this.#pending.size > this.cap.maxPerHour) {
      throw new FloorError("floor-invariant", "volition offers exceed the hourly cap", {
        offers: this.#offerTimesMs.length,
        pending: this.#pending.size,
      });
    }
  }
}
