/**
 * The room in the knowledge base (issue 9 item 4): `KbRoomRecorder` writes what the floor
 * heard and decided, over the channel library, into the floor agent's own context, which
 * `joinRoom` lifts under the room channel and roots in `CxFloorActs`
 * (contexts/CxFloorActs.kb). `readRoom` reads a room's history back, in application order.
 *
 * Shapes (docs/agents-floor.md "The room in the KB"):
 *
 *   (roomUtterance CxRoom Ord "utteranceId" "speakerId" "label"|Unlabeled "text" (capture StartedAtMs EndedAtMs AppliedAtMs))
 *   (floorDecision Agent (sentexHandle U) Addressed|Mentioned|None (decision Action [Reason] [Lapsed|OfferId]) Engaged|Dormant "holderId"|NoHolder)
 *   (answers Agent "reply text" (sentexHandle U))                 ; he spoke on U's turn
 *   (floorSilence Agent (sentexHandle U) Chosen|TurnQueueFull|MouthFailed)
 *   (floorChange Agent CxRoom Ord Engaged|Dormant "holderId"|NoHolder Utterance|Settle|Tick|Work AtMs)
 *   (floorNotice Agent CxRoom Ord TurnQueueFull|FloorWorkMax|ReorderQueueFull AtMs "details JSON")
 *
 * Every user-provided string (speaker id, display name, text, reply) is a quoted string, so
 * nothing a speaker says or calls himself can become a symbol, a context or a predicate.
 * Times in the KB are epoch milliseconds (the session's monotonic times, moved onto the
 * wall clock by the injected Clock's offset). `floorDecision`, `floorSilence` and `answers`
 * are target-following: retracting an utterance retracts its decision and its turn's outcome
 * in the same event.
 */
import { nanoid } from "nanoid";
import { terms } from "../../kb/index.js";
import { answer, coneOf, join, str, type AgentHandle, type ContextName, type Handle, type Medium, type SentexRecord } from "../../channel/index.js";
import type { AddressKind } from "./address.js";
import type { FloorDecision, FloorState, OfferId, SpeakerId } from "./machine.js";
import type { FloorNotice, LabeledUtterance, RoomRecorder, UtteranceSeq } from "./room.js";
import type { Clock } from "./time.js";

/** The floor's vocabulary context (contexts/CxFloorActs.kb); it sees CxSpeechActs. */
export const FLOOR_ACTS_CONTEXT = "CxFloorActs";
/** Utterance handles the recorder remembers for later decisions and turn outcomes. */
export const MAX_REMEMBERED_UTTERANCES = 1_024;
/** The symbol standing for "no display name" and for "no holder". */
export const UNLABELED = "Unlabeled";
export const NO_HOLDER = "NoHolder";

/**
 * Join the room channel as the floor agent: lifts the agent's own context under `room` and
 * roots it in CxFloorActs (one edit; re-joining stores nothing).
 *
 * @example const h = await joinRoom(wire({ url, token }), "CxRoomStandup", "AgentClankie");
 */
export function joinRoom(medium: Medium, room: ContextName, agentId: string): Promise<AgentHandle> {
  return join(medium, room, agentId, { speaks: FLOOR_ACTS_CONTEXT });
}

// ------------------------------------------------------------------ encoding

/** snake_case -> CapitalCamelCase: "reply_policy_all" -> "ReplyPolicyAll". */
export function symbolOf(word: string): string {
  return word
    .split("_")
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("");
}

/** CapitalCamelCase -> snake_case: "ReplyPolicyAll" -> "reply_policy_all". */
export function wordOf(symbol: string): string {
  return symbol.replace(/(?!^)([A-Z])/g, "_$1").toLowerCase();
}

/** The decision term: `(decision Offer Mentioned Lapsed)`, `(decision VolitionGateOpen 3)`, `(decision Listen)`. */
export function decisionTerm(d: FloorDecision): string {
  const parts = ["decision", symbolOf(d.action)];
  if (d.action === "volition_gate_open") parts.push(String(d.offerId));
  else if ("reason" in d) parts.push(symbolOf(d.reason));
  if ("lapsed" in d && d.lapsed) parts.push("Lapsed");
  return `(${parts.join(" ")})`;
}

/** The inverse of `decisionTerm`. */
export function decisionFromTerm(t: terms.Term): FloorDecision {
  if (!terms.isList(t) || t[0] !== "decision" || typeof t[1] !== "string") throw new Error(`not a decision term: ${terms.printTerm(t)}`);
  const action = wordOf(t[1]);
  const rest = t.slice(2).map((x) => x as string);
  if (action === "volition_gate_open") return { action, offerId: Number(rest[0]) as OfferId };
  const d: Record<string, unknown> = { action };
  if (rest[0] !== undefined && rest[0] !== "Lapsed") d.reason = wordOf(rest[0]);
  if (rest.includes("Lapsed")) d.lapsed = true;
  return d as FloorDecision;
}

const holderTerm = (id: SpeakerId | undefined): string => (id === undefined ? NO_HOLDER : str(id));
const holderOf = (t: terms.Term): SpeakerId | undefined => (t === NO_HOLDER ? undefined : (terms.stringValue(t as string) as SpeakerId));
const stateTerm = (s: FloorState): string => symbolOf(s);
const stateOf = (t: terms.Term): FloorState => wordOf(t as string) as FloorState;
const sx = (h: Handle): string => `(sentexHandle ${h})`;

// ------------------------------------------------------------------ the recorder

export interface KbRoomRecorderOptions {
  /** From `joinRoom`: the floor agent's handle on the room channel. */
  handle: AgentHandle;
  /** The session's clock: monotonic times are moved to epoch ms with its wall offset. */
  clock: Clock;
  /** The first Ord to use; default: one past the room's highest Ord in the agent's context. */
  firstOrd?: number;
  /** Mints an utterance id when the capture pipeline gave none. */
  mintId?: () => string;
}

/**
 * A RoomRecorder over the channel library. Calls arrive one after another (the session
 * awaits each), so the seq -> handle map is always filled before a decision needs it.
 *
 * @example const rec = await KbRoomRecorder.open({ handle: await joinRoom(m, "CxRoomStandup", "AgentClankie"), clock: systemClock });
 */
export class KbRoomRecorder implements RoomRecorder {
  readonly #h: AgentHandle;
  readonly #clock: Clock;
  readonly #mintId: () => string;
  readonly #handles = new Map<UtteranceSeq, Handle>();
  #ord: number;

  constructor(o: KbRoomRecorderOptions) {
    this.#h = o.handle;
    this.#clock = o.clock;
    this.#ord = (o.firstOrd ?? 1) - 1;
    this.#mintId = o.mintId ?? (() => `u-${nanoid(16)}`);
  }

  /** A recorder whose Ord continues after what the agent already recorded in this room. */
  static async open(o: KbRoomRecorderOptions): Promise<KbRoomRecorder> {
    if (o.firstOrd !== undefined) return new KbRoomRecorder(o);
    const room = o.handle.channel;
    let max = 0;
    for (const pattern of [
      `(roomUtterance ${room} ?ord ?id ?speaker ?label ?text ?capture)`,
      `(floorChange ${o.handle.agent} ${room} ?ord ?state ?holder ?cause ?at)`,
      `(floorNotice ${o.handle.agent} ${room} ?ord ?kind ?at ?details)`,
    ]) {
      for (const r of await o.handle.medium.match(pattern, o.handle.context)) {
        const ord = Number((terms.parseTerm(r.sentence) as terms.List)[pattern.startsWith("(roomUtterance") ? 2 : 3]);
        if (ord > max) max = ord;
      }
    }
    return new KbRoomRecorder({ ...o, firstOrd: max + 1 });
  }

  get handle(): AgentHandle {
    return this.#h;
  }

  /** The KB handle of an applied utterance, while remembered. */
  handleOf(seq: UtteranceSeq): Handle | undefined {
    return this.#handles.get(seq);
  }

  async utterance(u: LabeledUtterance): Promise<void> {
    const h = this.#h;
    const id = u.utteranceId ?? this.#mintId();
    const label = u.displayName === undefined ? UNLABELED : str(u.displayName);
    const capture = `(capture ${this.#wall(u.startedAtMs)} ${this.#wall(u.endedAtMs ?? u.appliedAtMs)} ${this.#wall(u.appliedAtMs)})`;
    const sentence = `(roomUtterance ${h.channel} ${++this.#ord} ${str(id)} ${str(u.speakerId)} ${label} ${str(u.text)} ${capture})`;
    const handle = (await h.medium.assert(sentence, h.context, { creator: h.agent })).handle;
    this.#handles.set(u.seq, handle);
    if (this.#handles.size > MAX_REMEMBERED_UTTERANCES) this.#handles.delete(this.#handles.keys().next().value!);
  }

  async decision(d: Parameters<RoomRecorder["decision"]>[0]): Promise<void> {
    const u = this.#target(d.utteranceSeq);
    const sentence = `(floorDecision ${this.#h.agent} ${sx(u)} ${symbolOf(d.address)} ${decisionTerm(d.decision)} ${stateTerm(d.state)} ${holderTerm(d.holderId)})`;
    await this.#assert(sentence);
  }

  async reply(r: Parameters<RoomRecorder["reply"]>[0]): Promise<void> {
    await answer(this.#h, str(r.text), this.#target(r.utteranceSeq));
  }

  async silence(r: Parameters<RoomRecorder["silence"]>[0]): Promise<void> {
    await this.#assert(`(floorSilence ${this.#h.agent} ${sx(this.#target(r.utteranceSeq))} ${symbolOf(r.why.replaceAll("-", "_"))})`);
  }

  async floorChange(c: Parameters<RoomRecorder["floorChange"]>[0]): Promise<void> {
    const h = this.#h;
    await this.#assert(
      `(floorChange ${h.agent} ${h.channel} ${++this.#ord} ${stateTerm(c.state)} ${holderTerm(c.holderId)} ${symbolOf(c.cause)} ${this.#wall(c.atMs)})`,
    );
  }

  async notice(n: FloorNotice): Promise<void> {
    const h = this.#h;
    const kind = symbolOf(n.kind.replaceAll("-", "_"));
    await this.#assert(`(floorNotice ${h.agent} ${h.channel} ${++this.#ord} ${kind} ${this.#wall(n.atMs)} ${str(JSON.stringify(n.details))})`);
  }

  #target(seq: UtteranceSeq): Handle {
    const u = this.#handles.get(seq);
    if (u === undefined) throw new Error(`utterance ${seq} was not recorded (its write failed, or it is older than the last ${MAX_REMEMBERED_UTTERANCES})`);
    return u;
  }

  async #assert(sentence: string): Promise<void> {
    await this.#h.medium.assert(sentence, this.#h.context, { creator: this.#h.agent });
  }

  /** Monotonic ms -> epoch ms, by the clock's current offset. */
  #wall(monoMs: number): number {
    return Math.round(monoMs + this.#clock.wallMs() - this.#clock.monotonicMs());
  }
}

// ------------------------------------------------------------------ reading the room back

export interface RoomDecision {
  handle: Handle;
  agent: string;
  address: AddressKind;
  decision: FloorDecision;
  state: FloorState;
  holderId: SpeakerId | undefined;
}

export interface RoomUtterance {
  handle: Handle;
  /** Who recorded it (the floor agent's context). */
  context: ContextName;
  ord: number;
  utteranceId: string;
  speakerId: SpeakerId;
  displayName: string | undefined;
  text: string;
  startedAtMs: number;
  endedAtMs: number;
  appliedAtMs: number;
  decisions: RoomDecision[];
  replies: { handle: Handle; agent: string; text: string }[];
  silences: { handle: Handle; agent: string; why: "chosen" | "turn-queue-full" | "mouth-failed" }[];
}

export interface RoomFloorChange {
  handle: Handle;
  agent: string;
  ord: number;
  state: FloorState;
  holderId: SpeakerId | undefined;
  cause: "utterance" | "settle" | "tick" | "work";
  atMs: number;
}

export interface RoomNotice {
  handle: Handle;
  agent: string;
  ord: number;
  kind: FloorNotice["kind"];
  atMs: number;
  details: Record<string, unknown>;
}

export interface RoomHistory {
  /** Believed utterances the room sees, by Ord (application order). */
  utterances: RoomUtterance[];
  changes: RoomFloorChange[];
  notices: RoomNotice[];
}

const list = (r: SentexRecord): terms.List => terms.parseTerm(r.sentence) as terms.List;
const num = (t: terms.Term | undefined): number => Number(t as string);
const text = (t: terms.Term | undefined): string => terms.stringValue(t as string);

/**
 * A room's history as the KB holds it: every utterance the room channel's cone sees, in
 * Ord order, with the decisions, replies and silences on it, and the floor changes and
 * notices. Six reads whatever the room's length (the cone, then one match per shape).
 *
 * @example const { utterances } = await readRoom(wire({ url }), "CxRoomStandup");
 */
export async function readRoom(medium: Medium, room: ContextName): Promise<RoomHistory> {
  const [cone, us, ds, as, ss, cs, ns] = await Promise.all([
    coneOf(medium, room),
    medium.match(`(roomUtterance ${room} ?ord ?id ?speaker ?label ?text ?capture)`, "?ctx"),
    medium.match("(floorDecision ?agent ?u ?address ?decision ?state ?holder)", "?ctx"),
    medium.match("(answers ?agent ?content ?u)", "?ctx"),
    medium.match("(floorSilence ?agent ?u ?why)", "?ctx"),
    medium.match(`(floorChange ?agent ${room} ?ord ?state ?holder ?cause ?at)`, "?ctx"),
    medium.match(`(floorNotice ?agent ${room} ?ord ?kind ?at ?details)`, "?ctx"),
  ]);
  const seen = (r: SentexRecord): boolean => r.believed && cone.has(r.context);
  const byHandle = new Map<Handle, RoomUtterance>();
  for (const r of us.filter(seen)) {
    const t = list(r);
    const cap = t[7] as terms.List;
    byHandle.set(r.handle, {
      handle: r.handle,
      context: r.context,
      ord: num(t[2]),
      utteranceId: text(t[3]),
      speakerId: text(t[4]) as SpeakerId,
      displayName: t[5] === UNLABELED ? undefined : text(t[5]),
      text: text(t[6]),
      startedAtMs: num(cap[1]),
      endedAtMs: num(cap[2]),
      appliedAtMs: num(cap[3]),
      decisions: [],
      replies: [],
      silences: [],
    });
  }
  const on = (t: terms.List, i: number): RoomUtterance | undefined => {
    const h = terms.handleOfTerm(t[i]!);
    return h === undefined ? undefined : byHandle.get(h);
  };
  for (const r of ds.filter(seen)) {
    const t = list(r);
    on(t, 2)?.decisions.push({
      handle: r.handle,
      agent: t[1] as string,
      address: wordOf(t[3] as string) as AddressKind,
      decision: decisionFromTerm(t[4]!),
      state: stateOf(t[5]!),
      holderId: holderOf(t[6]!),
    });
  }
  for (const r of as.filter(seen)) {
    const t = list(r);
    const u = on(t, 3);
    if (u && terms.isString(t[2]!)) u.replies.push({ handle: r.handle, agent: t[1] as string, text: text(t[2]) });
  }
  for (const r of ss.filter(seen)) {
    const t = list(r);
    on(t, 2)?.silences.push({ handle: r.handle, agent: t[1] as string, why: wordOf(t[3] as string).replaceAll("_", "-") as RoomUtterance["silences"][number]["why"] });
  }
  const changes: RoomFloorChange[] = cs.filter(seen).map((r) => {
    const t = list(r);
    return {
      handle: r.handle,
      agent: t[1] as string,
      ord: num(t[3]),
      state: stateOf(t[4]!),
      holderId: holderOf(t[5]!),
      cause: wordOf(t[6] as string) as RoomFloorChange["cause"],
      atMs: num(t[7]),
    };
  });
  const notices: RoomNotice[] = ns.filter(seen).map((r) => {
    const t = list(r);
    return {
      handle: r.handle,
      agent: t[1] as string,
      ord: num(t[3]),
      kind: wordOf(t[4] as string).replaceAll("_", "-") as FloorNotice["kind"],
      atMs: num(t[5]),
      details: JSON.parse(text(t[6])) as Record<string, unknown>,
    };
  });
  const byOrd = <T extends { ord: number; handle: Handle }>(a: T, b: T): number => a.ord - b.ord || a.handle - b.handle;
  return { utterances: [...byHandle.values()].sort(byOrd), changes: changes.sort(byOrd), notices: notices.sort(byOrd) };
}
