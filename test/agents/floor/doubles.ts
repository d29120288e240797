/** Test doubles for the floor session: an in-memory RoomRecorder and a scripted Mouth. */
import type {
  FloorDecision,
  FloorNotice,
  LabeledUtterance,
  Mouth,
  MouthOutcome,
  MouthTurn,
  RoomRecorder,
  SpeakerId,
} from "../../../src/agents/floor/index.js";

export type Entry =
  | { kind: "utterance"; u: LabeledUtterance }
  | { kind: "decision"; seq: number; decision: FloorDecision; state: string; holderId: SpeakerId | undefined }
  | { kind: "reply"; seq: number; text: string; atMs: number }
  | { kind: "silence"; seq: number; why: string; atMs: number }
  | { kind: "floor"; state: string; holderId: SpeakerId | undefined; cause: string; atMs: number }
  | { kind: "notice"; n: FloorNotice };

export class MemoryRecorder implements RoomRecorder {
  readonly entries: Entry[] = [];

  utterance(u: LabeledUtterance): void {
    this.entries.push({ kind: "utterance", u });
  }
  decision(d: Parameters<RoomRecorder["decision"]>[0]): void {
    this.entries.push({ kind: "decision", seq: d.utteranceSeq, decision: d.decision, state: d.state, holderId: d.holderId });
  }
  reply(r: Parameters<RoomRecorder["reply"]>[0]): void {
    this.entries.push({ kind: "reply", seq: r.utteranceSeq, text: r.text, atMs: r.atMs });
  }
  silence(r: Parameters<RoomRecorder["silence"]>[0]): void {
    this.entries.push({ kind: "silence", seq: r.utteranceSeq, why: r.why, atMs: r.atMs });
  }
  floorChange(c: Parameters<RoomRecorder["floorChange"]>[0]): void {
    this.entries.push({ kind: "floor", ...c });
  }
  notice(n: FloorNotice): void {
    this.entries.push({ kind: "notice", n });
  }

  utterances(): LabeledUtterance[] {
    return this.entries.flatMap((e) => (e.kind === "utterance" ? [e.u] : []));
  }
  /** [text, decision action(reason), holder after] per applied utterance, in order. */
  decisions(): [string, string, string | undefined][] {
    const bySeq = new Map(this.utterances().map((u) => [u.seq as number, u.text]));
    return this.entries.flatMap((e) => {
      if (e.kind !== "decision") return [];
      const d = e.decision;
      const reason = "reason" in d ? `(${d.reason})` : "";
      return [[bySeq.get(e.seq) ?? "?", `${d.action}${reason}`, e.holderId] as [string, string, string | undefined]];
    });
  }
  floorChanges(): { state: string; holderId: string | undefined; cause: string; atMs: number }[] {
    return this.entries.flatMap((e) => (e.kind === "floor" ? [{ state: e.state, holderId: e.holderId, cause: e.cause, atMs: e.atMs }] : []));
  }
}

/** Speaks the scripted reply for a line's text; silent for anything not scripted. */
export class ScriptedMouth implements Mouth {
  readonly turns: MouthTurn[] = [];
  closed = 0;
  constructor(private readonly replies: Record<string, string> = {}) {}

  async respond(turn: MouthTurn): Promise<MouthOutcome> {
    this.turns.push(turn);
    const text = this.replies[turn.utterance.text];
    return text === undefined ? { kind: "silent" } : { kind: "spoke", text };
  }

  close(): void {
    this.closed += 1;
  }
}
