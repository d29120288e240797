/**
 * Session wiring around the floor machine (reference §3.5), still free of I/O: captures
 * are reordered, applied, judged, recorded and offered to the mouth; the engaged tick, the
 * reorder grace, the floor-work heartbeat and the hold window run on an injected
 * Scheduler and read an injected Clock.
 */
import { classifyAddress, nameCameUp } from "./address.js";
import { FloorError } from "./errors.js";
import { isTurn, type FloorDecision, type FloorMachine, type FloorState, type SpeakerId, type TurnDecision } from "./machine.js";
import type { Mouth, MouthOutcome } from "./mouth.js";
import { noteFor } from "./notes.js";
import {
  labelSpeaker,
  type FloorNotice,
  type LabeledUtterance,
  type RoomRecorder,
  type TurnId,
  type UtteranceSeq,
} from "./room.js";
import type { Clock, Scheduler, TimerHandle } from "./time.js";

/** A non-addressed final waits at most this long for an earlier-started capture (ADR 0119). */
export const UTTERANCE_REORDER_GRACE_MS = 400;
/** Decay-tick cadence while engaged (reference §3.5). */
export const ENGAGED_TICK_MS = 5_000;
/** A released session stays open this long so a resumed conversation wakes instantly. */
export const ENGAGED_HOLD_MS = 300_000;
/** A running lookup refreshes the floor this often (reference §3.5). */
export const FLOOR_WORK_HEARTBEAT_MS = 15_000;
/** ...and stops refreshing this long after it started: matched to the captain's stall watchdog. */
export const FLOOR_WORK_MAX_MS = 300_000;
/** The room history handed to the mouth: at most this many lines... */
export const MAX_HISTORY_LINES = 30;
/** ...and at most this many bytes of JSON (reference §3.5: 30 lines / 4,000 bytes). */
export const MAX_HISTORY_BYTES = 4_000;
/** Turns waiting for the mouth (port's own bound; the original queues without one). */
export const MAX_QUEUED_TURNS = 4;
/** Finals waiting for reorder; past it the head is applied without waiting (port's own bound). */
export const MAX_REORDER_QUEUE = 64;

export interface CaptureFinal {
  speakerId: SpeakerId;
  /** When this capture started (same monotonic clock as the session's). */
  startedAtMs: number;
  text: string;
  /** A name the capture pipeline supplied; untrusted. */
  displayName?: string;
  /** When the capture ended (same clock), if the pipeline said. Recorded, never judged. */
  endedAtMs?: number;
  /** The capture pipeline's id for this utterance, if any (the recorder's idempotency key). */
  utteranceId?: string;
}

export interface FloorSessionOptions {
  machine: FloorMachine;
  mouth: Mouth;
  recorder: RoomRecorder;
  clock: Clock;
  scheduler: Scheduler;
  /** The occupant name the gateway has for a speaker, if any. Untrusted. */
  occupantName?: (id: SpeakerId) => string | undefined;
  /** Where a recorder or mouth failure goes; the floor keeps running. */
  onError?: (e: unknown) => void;
  reorderGraceMs?: number;
  tickMs?: number;
  holdMs?: number;
  workHeartbeatMs?: number;
  workMaxMs?: number;
  maxQueuedTurns?: number;
}

interface Queued extends CaptureFinal {
  finalizedAtMs: number;
  /** Addressed or mentioned: never held for reorder. */
  named: boolean;
}

/**
 * One room's floor. Call `captureStarted` when a speaker starts talking and `captureFinal`
 * with the transcript; wrap a lookup in `runFloorWork`. `idle()` resolves once every
 * queued turn is settled and every record written.
 *
 * @example
 *   const s = new FloorSession({ machine, mouth, recorder, clock, scheduler });
 *   s.captureStarted(alice, 0); s.captureFinal({ speakerId: alice, startedAtMs: 0, text: "hey clankie" });
 */
export class FloorSession {
  readonly #o: Required<Omit<FloorSessionOptions, "occupantName" | "onError">> & Pick<FloorSessionOptions, "occupantName">;
  readonly #onError: (e: unknown) => void;

  /** Captures in flight: speaker -> startedAtMs (one capture per speaker at a time). */
  #inFlight = new Map<SpeakerId, number>();
  #queue: Queued[] = [];
  #history: { u: LabeledUtterance; bytes: number }[] = [];
  #historyBytes = 0;
  #seq = 0;
  #turnSeq = 0;
  #queuedTurns = 0;
  #lastState: FloorState;
  #lastHolder: SpeakerId | undefined;
  /** Bumped when the hold window closes the mouth; stale floor work stops refreshing. */
  #generation = 0;
  #mouthOpen = false;

  #reorderTimer: TimerHandle | undefined;
  #tickTimer: TimerHandle | undefined;
  #holdTimer: TimerHandle | undefined;
  #turns: Promise<void> = Promise.resolve();
  #records: Promise<void> = Promise.resolve();

  constructor(options: FloorSessionOptions) {
    this.#o = {
      machine: options.machine,
      mouth: options.mouth,
      recorder: options.recorder,
      clock: options.clock,
      scheduler: options.scheduler,
      occupantName: options.occupantName,
      reorderGraceMs: options.reorderGraceMs ?? UTTERANCE_REORDER_GRACE_MS,
      tickMs: options.tickMs ?? ENGAGED_TICK_MS,
      holdMs: options.holdMs ?? ENGAGED_HOLD_MS,
      workHeartbeatMs: options.workHeartbeatMs ?? FLOOR_WORK_HEARTBEAT_MS,
      workMaxMs: options.workMaxMs ?? FLOOR_WORK_MAX_MS,
      maxQueuedTurns: options.maxQueuedTurns ?? MAX_QUEUED_TURNS,
    };
    for (const key of ["reorderGraceMs", "tickMs", "holdMs", "workHeartbeatMs", "workMaxMs", "maxQueuedTurns"] as const) {
      const v = this.#o[key];
      if (!Number.isFinite(v) || v < 0 || (key !== "reorderGraceMs" && v === 0)) {
        throw new FloorError("floor-session-options", `${key} must be a positive, finite number`, { [key]: v });
      }
    }
    this.#onError = options.onError ?? (() => {});
    this.#lastState = options.machine.state;
    this.#lastHolder = options.machine.holderId;
  }

  get machine(): FloorMachine {
    return this.#o.machine;
  }

  /** A speaker started talking; their capture is in flight until its final arrives. */
  captureStarted(speaker: SpeakerId, startedAtMs: number): void {
    this.#inFlight.set(speaker, startedAtMs);
  }

  /**
   * A capture's final transcript. Named speech is never held; other finals wait at most
   * the grace for an earlier-started capture by someone else. An empty final applies
   * nothing and only lets the queue move.
   */
  captureFinal(final: CaptureFinal): void {
    if (this.#inFlight.get(final.speakerId) === final.startedAtMs) this.#inFlight.delete(final.speakerId);
    const text = final.text.trim();
    if (text !== "") {
      this.#queue.push({
        ...final,
        text,
        finalizedAtMs: this.#o.clock.monotonicMs(),
        named: nameCameUp(text, this.#o.machine.names),
      });
    }
    this.#flush();
  }

  /**
   * Run a lookup for `speaker` while holding the floor for work (ADR 0119 §7): a heartbeat
   * refreshes the floor every 15 s and stops re-arming 5 min after the start; the stop runs
   * in a `finally`. A lookup that never settles therefore lets the floor decay after the
   * cap, which is the only self-heal there is.
   */
  async runFloorWork<T>(speaker: SpeakerId, work: () => Promise<T>): Promise<T> {
    const generation = this.#generation;
    const stop = this.#startFloorWork(speaker, generation);
    try {
      const result = await work();
      if (generation === this.#generation) this.#holdForWork(speaker);
      return result;
    } finally {
      stop();
    }
  }

  /** Resolves when queued turns are settled and records written (for tests and shutdown). */
  async idle(): Promise<void> {
    for (;;) {
      const turns = this.#turns;
      const records = this.#records;
      await turns;
      await records;
      if (turns === this.#turns && records === this.#records) return;
    }
  }

  /** Cancel every timer; the machine keeps its state. */
  stop(): void {
    for (const t of [this.#reorderTimer, this.#tickTimer, this.#holdTimer]) t?.cancel();
    this.#reorderTimer = this.#tickTimer = this.#holdTimer = undefined;
  }

  #flush(): void {
    this.#reorderTimer?.cancel();
    this.#reorderTimer = undefined;
    this.#queue.sort((a, b) => a.startedAtMs - b.startedAtMs);
    while (this.#queue.length > 0) {
      const head = this.#queue[0];
      const wait = this.#reorderWait(head);
      if (wait > 0 && this.#queue.length <= MAX_REORDER_QUEUE) {
        this.#reorderTimer = this.#o.scheduler.schedule(wait, () => this.#flush());
        return;
      }
      if (wait > 0) {
        this.#notice({ kind: "reorder-queue-full", atMs: this.#now(), details: { queued: this.#queue.length } });
      }
      this.#queue.shift();
      this.#apply(head);
    }
  }

  /** How long `head` must still wait for an earlier-started capture by another speaker; 0 = apply now. */
  #reorderWait(head: Queued): number {
    if (head.named) return 0;
    let earlier = false;
    for (const [speaker, startedAtMs] of this.#inFlight) {
      if (speaker !== head.speakerId && startedAtMs < head.startedAtMs) earlier = true;
    }
    if (!earlier) return 0;
    return Math.max(0, this.#o.reorderGraceMs - (this.#now() - head.finalizedAtMs));
  }

  #apply(q: Queued): void {
    const now = this.#now();
    const label = labelSpeaker(q.speakerId, q.displayName, this.#o.occupantName?.(q.speakerId));
    const u: LabeledUtterance = {
      ...label,
      seq: ++this.#seq as UtteranceSeq,
      text: q.text,
      startedAtMs: q.startedAtMs,
      appliedAtMs: now,
      occurredAt: new Date(this.#o.clock.wallMs()).toISOString(),
    };
    u.endedAtMs = q.endedAtMs ?? q.finalizedAtMs; // the final's arrival, when the pipeline gave no end
    if (q.utteranceId !== undefined) u.utteranceId = q.utteranceId;
    const history = this.#history.map((h) => h.u);
    this.#remember(u);
    this.#record((r) => r.utterance(u));
    const decision = this.#o.machine.observe({ speakerId: q.speakerId, text: q.text, atMs: now });
    const address = classifyAddress(q.text, this.#o.machine.names);
    const record = { utteranceSeq: u.seq, address, decision, state: this.#o.machine.state, holderId: this.#o.machine.holderId };
    this.#record((r) => r.decision(record));
    this.#sync("utterance");
    if (isTurn(decision)) this.#offer(decision, u, history);
  }

  #offer(turn: TurnDecision, u: LabeledUtterance, history: LabeledUtterance[]): void {
    const turnId = ++this.#turnSeq as TurnId;
    if (this.#queuedTurns >= this.#o.maxQueuedTurns) {
      const atMs = this.#now();
      this.#notice({ kind: "turn-queue-full", atMs, details: { turnId, queued: this.#queuedTurns } });
      this.#record((r) => r.silence({ turnId, utteranceSeq: u.seq, turn, why: "turn-queue-full", atMs }));
      this.#o.machine.settle(turn, u.speakerId, "silent", atMs);
      this.#sync("settle");
      return;
    }
    this.#queuedTurns += 1;
    this.#mouthOpen = true;
    this.#holdTimer?.cancel();
    this.#holdTimer = undefined;
    const note = noteFor(turn);
    this.#turns = this.#turns.then(async () => {
      let outcome: MouthOutcome;
      let failed = false;
      try {
        outcome = await this.#o.mouth.respond({ turnId, turn, note, utterance: u, history });
      } catch (e) {
        this.#onError(e);
        outcome = { kind: "silent" };
        failed = true;
      }
      const atMs = this.#now();
      this.#queuedTurns -= 1;
      if (outcome.kind === "spoke") {
        this.#o.machine.noteAssistantSpokeAt(atMs);
        const text = outcome.text;
        this.#record((r) => r.reply({ turnId, utteranceSeq: u.seq, turn, text, atMs }));
      } else {
        this.#record((r) => r.silence({ turnId, utteranceSeq: u.seq, turn, why: failed ? "mouth-failed" : "chosen", atMs }));
      }
      this.#o.machine.settle(turn, u.speakerId, outcome.kind, atMs);
      this.#sync("settle");
    });
  }

  #startFloorWork(speaker: SpeakerId, generation: number): () => void {
    const startedAtMs = this.#now();
    this.#holdForWork(speaker);
    let beat: TimerHandle | undefined;
    const onBeat = (): void => {
      beat = undefined;
      if (generation !== this.#generation) return; // the session it held for is gone
      const atMs = this.#now();
      if (atMs - startedAtMs >= this.#o.workMaxMs) {
        this.#notice({ kind: "floor-work-max", atMs, details: { speakerId: speaker, startedAtMs } });
        return;
      }
      this.#holdForWork(speaker);
      beat = this.#o.scheduler.schedule(this.#o.workHeartbeatMs, onBeat);
    };
    beat = this.#o.scheduler.schedule(this.#o.workHeartbeatMs, onBeat);
    return () => {
      beat?.cancel();
      beat = undefined;
    };
  }

  #holdForWork(speaker: SpeakerId): void {
    this.#o.machine.holdForWork(speaker, this.#now());
    this.#sync("work");
  }

  #onTick(): void {
    this.#tickTimer = undefined;
    const decision: FloorDecision = this.#o.machine.tick(this.#now());
    if (decision.action === "release") this.#sync("tick");
    else this.#armTimers();
  }

  /** Record a change of state or holder, then arm or cancel the tick and the hold window to match. */
  #sync(cause: "utterance" | "settle" | "tick" | "work"): void {
    const m = this.#o.machine;
    if (m.state !== this.#lastState || m.holderId !== this.#lastHolder) {
      this.#lastState = m.state;
      this.#lastHolder = m.holderId;
      const change = { state: m.state, holderId: m.holderId, cause, atMs: this.#now() };
      this.#record((r) => r.floorChange(change));
    }
    this.#armTimers();
  }

  #armTimers(): void {
    const engaged = this.#o.machine.state === "engaged";
    if (engaged && this.#tickTimer === undefined) {
      this.#tickTimer = this.#o.scheduler.schedule(this.#o.tickMs, () => this.#onTick());
    } else if (!engaged && this.#tickTimer !== undefined) {
      this.#tickTimer.cancel();
      this.#tickTimer = undefined;
    }
    const idleOpen = !engaged && this.#mouthOpen && this.#queuedTurns === 0;
    if (idleOpen && this.#holdTimer === undefined) {
      this.#holdTimer = this.#o.scheduler.schedule(this.#o.holdMs, () => {
        this.#holdTimer = undefined;
        this.#mouthOpen = false;
        this.#generation += 1;
        this.#o.mouth.close?.();
      });
    } else if (!idleOpen && this.#holdTimer !== undefined) {
      this.#holdTimer.cancel();
      this.#holdTimer = undefined;
    }
  }

  #remember(u: LabeledUtterance): void {
    const bytes = Buffer.byteLength(JSON.stringify(u));
    this.#history.push({ u, bytes });
    this.#historyBytes += bytes;
    while (
      this.#history.length > MAX_HISTORY_LINES ||
      (this.#history.length > 1 && this.#historyBytes > MAX_HISTORY_BYTES)
    ) {
      this.#historyBytes -= this.#history.shift()!.bytes;
    }
  }

  #notice(n: FloorNotice): void {
    this.#record((r) => r.notice(n));
  }

  /** Records are written one after another, in the order the floor produced them. */
  #record(write: (r: RoomRecorder) => void | Promise<void>): void {
    this.#records = this.#records.then(() => write(this.#o.recorder)).catch((e: unknown) => this.#onError(e));
  }

  #now(): number {
    return this.#o.clock.monotonicMs();
  }
}
