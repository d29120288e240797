/**
 * The room in the KB (issue 9 item 4): a recorded multi-speaker room script, fed through the
 * loopback ingest endpoint with a manual clock, recorded by KbRoomRecorder over the wire in
 * a real daemon process; every assertion reads the KB back (readRoom, query, match), never
 * the in-memory floor.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { wire, query, type Medium } from "../../../src/channel/index.js";
import {
  FloorMachine,
  FloorSession,
  KbRoomRecorder,
  UTTERANCE_REORDER_GRACE_MS,
  joinRoom,
  readRoom,
  speakerId,
  startIngest,
  type Ingest,
  type Mouth,
  type MouthOutcome,
  type MouthTurn,
  type RoomHistory,
} from "../../../src/agents/floor/index.js";
import { spawnDaemon, type Daemon } from "../../channel/helpers.js";
import { ScriptedMouth } from "./doubles.js";
import { ManualTime, WALL_EPOCH_MS as W } from "./fake-time.js";
import { INGEST_SECRET, kbDecisions, kbOutcomes, post } from "./helpers.js";

const ROOM = "CxRoomStandup";
const AGENT = "AgentClankie";
const alice = speakerId("alice");

let daemon: Daemon;
const opened: Medium[] = [];
const open = (): Medium => {
  const m = wire({ url: daemon.url });
  opened.push(m);
  return m;
};

beforeAll(async () => {
  daemon = await spawnDaemon();
});
afterAll(async () => {
  for (const m of opened) await m.close();
  await daemon?.stop();
});

/** The floor agent in this process: manual time, a scripted mouth, the KB recorder over the wire, the ingest endpoint. */
async function floorRig(room: string, agent: string, mouth: Mouth) {
  const time = new ManualTime();
  const handle = await joinRoom(open(), room, agent);
  const recorder = await KbRoomRecorder.open({ handle, clock: time });
  const errors: unknown[] = [];
  const session = new FloorSession({
    machine: new FloorMachine({ names: ["clankie"], replyPolicy: "addressed", chattiness: "balanced" }),
    mouth,
    recorder,
    clock: time,
    scheduler: time,
    occupantName: (id) => ({ alice: "Alice", bob: "Bob" })[id as string],
    onError: (e) => errors.push(e),
  });
  const ingest: Ingest = await startIngest({ session, clock: time, secret: INGEST_SECRET, onError: (e) => errors.push(e) });
  /** Move the clock to `ms` (firing due timers), run `fn`, wait until turns settle and records reach the daemon. */
  async function at(ms: number, fn: () => unknown = () => {}): Promise<void> {
    time.advanceTo(ms);
    await fn();
    await session.idle();
  }
  const started = (who: string, t: number) => post(ingest.url, "/capture-started", { speakerId: who, startedAtMs: W + t });
  const say = (who: string, t: number, text: string, extra: Record<string, unknown> = {}) =>
    post(ingest.url, "/utterance", { speakerId: who, startedAtMs: W + t, text, ...extra });
  return { time, handle, recorder, session, ingest, at, started, say, errors };
}

const SCRIPT_REPLIES = {
  "hey clankie can you look up the deploy": "on it",
  "ask clankie about the weather": "it is sunny in the logs",
  "hey clankie": "hi frank",
};

const CAROL = 'Carol" (floorDecision AgentClankie (sentexHandle 1) Addressed) "';

describe("the room in the KB: a recorded room script through the ingest endpoint into a real daemon", () => {
  let room: RoomHistory;

  beforeAll(async () => {
    const r = await floorRig(ROOM, AGENT, new ScriptedMouth(SCRIPT_REPLIES));
    const { at, started, say, ingest, errors } = r;
    let workId = "";
    // Alice starts first but talks longer; Bob's earlier final waits for her (grace).
    await at(0, () => started("alice", 0));
    await at(200, () => started("bob", 200));
    await at(1_500, () => say("bob", 200, "so anyway the meeting moved", { utteranceId: "cap-bob-1", endedAtMs: W + 1_450 }));
    await at(1_700, () => say("alice", 0, "hey clankie can you look up the deploy", { utteranceId: "cap-alice-1" }));
    // The lookup runs 93 s, far past the 60 s decay window: it holds the floor for Alice.
    await at(2_000, async () => (workId = (await post(ingest.url, "/work/start", { speakerId: "alice" })).body.workId));
    // Carol mentions him under a display name that tries to be a sentence; Alice pivots to Bob; Bob answers her.
    await at(20_000, () => say("carol", 19_800, "clankie did you see that", { displayName: CAROL }));
    await at(30_000, () => say("alice", 29_000, "yeah thanks. Bob, did you finish that thing?"));
    await at(40_000, () => say("bob", 39_000, "almost, give me a sec"));
    await at(95_000, () => post(ingest.url, "/work/end", { workId }));
    await at(160_000);
    // Dormant: Erin finishes first, but Dave started first; Dave's line opens the volition gate.
    await at(200_000, () => started("dave", 200_000));
    await at(200_100, () => started("erin", 200_100));
    await at(201_000, () => say("erin", 200_100, "nice weather today"));
    await at(201_200, () => say("dave", 200_000, "ask clankie about the weather"));
    // Grace runs out: Gina's short line goes ahead of Frank, who is still talking.
    await at(300_000, () => started("frank", 300_000));
    await at(300_050, () => started("gina", 300_050));
    await at(300_500, () => say("gina", 300_050, "lol"));
    await at(302_000, () => say("frank", 300_000, "hey clankie"));
    // Addressed bypass: Jon's hail is applied at once although Ivy started earlier.
    await at(320_000, () => started("ivy", 320_000));
    await at(320_100, () => started("jon", 320_100));
    await at(320_600, () => say("jon", 320_100, "clankie what time is it"));
    await at(321_000, () => say("ivy", 320_000, "anyway as I was saying"));
    await at(1_000_000);
    await ingest.close();
    r.session.stop();
    expect(errors).toEqual([]);
    room = await readRoom(open(), ROOM); // a second connection: what the KB holds, not the recorder
  });

  it("the decisions, the holder after each and the order of application, read from the KB", () => {
    expect(kbDecisions(room)).toEqual([
      ["hey clankie can you look up the deploy", "wake(addressed)", "alice"],
      ["so anyway the meeting moved", "listen", "alice"],
      ["clankie did you see that", "offer(mentioned)", "alice"],
      ["yeah thanks. Bob, did you finish that thing?", "offer(holder)", "alice"],
      ["almost, give me a sec", "listen", "alice"],
      ["ask clankie about the weather", "volition_gate_open", undefined],
      ["nice weather today", "ignore(volition_interval)", undefined],
      ["lol", "ignore(volition_interval)", undefined],
      ["hey clankie", "wake(addressed)", "frank"],
      ["clankie what time is it", "hold", "jon"],
      ["anyway as I was saying", "listen", "jon"],
    ]);
    // Ord is the room's record order (floor changes take numbers too): strictly increasing.
    expect(room.utterances.every((u, i) => i === 0 || u.ord > room.utterances[i - 1].ord)).toBe(true);
    // Application times on the wall clock: reorder waits are visible in the KB.
    expect(room.utterances.map((u) => u.appliedAtMs - W)).toEqual([
      1_700, 1_700, 20_000, 30_000, 40_000, 201_200, 201_200, 300_500 + UTTERANCE_REORDER_GRACE_MS, 302_000, 320_600, 321_000,
    ]);
    expect(room.utterances.map((u) => u.startedAtMs - W)).toEqual([0, 200, 19_800, 29_000, 39_000, 200_000, 200_100, 300_050, 300_000, 320_100, 320_000]);
    // The pipeline's end where it gave one, else when the final arrived.
    expect(room.utterances[1]).toMatchObject({ utteranceId: "cap-bob-1", endedAtMs: W + 1_450 });
    expect(room.utterances[0]).toMatchObject({ utteranceId: "cap-alice-1", endedAtMs: W + 1_700 });
    expect(room.utterances.map((u) => u.decisions[0].address)).toEqual([
      "addressed", "none", "mentioned", "none", "none", "none", "none", "none", "addressed", "addressed", "none",
    ]);
    expect(room.utterances.every((u) => u.decisions.length === 1 && u.decisions[0].agent === AGENT)).toBe(true);
  });

  it("his replies and chosen silences are moves on the utterances that earned the turns", () => {
    expect(kbOutcomes(room)).toEqual(["on it", "(chosen)", "(chosen)", "it is sunny in the logs", "hi frank", "(chosen)"]);
    const withOutcome = room.utterances.filter((u) => u.replies.length + u.silences.length > 0).map((u) => u.text);
    expect(withOutcome).toEqual([
      "hey clankie can you look up the deploy",
      "clankie did you see that",
      "yeah thanks. Bob, did you finish that thing?",
      "ask clankie about the weather",
      "hey clankie",
      "clankie what time is it",
    ]);
  });

  it("the floor's changes (engage, holder moves, decay, a volition take) are in the KB, in room order", () => {
    expect(room.changes.map((c) => [c.state, c.holderId, c.cause, c.atMs - W])).toEqual([
      ["engaged", "alice", "utterance", 1_700],
      // The lookup's last hold was at 95 s; the tick finds the floor lapsed at 156.7 s.
      ["dormant", undefined, "tick", 156_700],
      ["engaged", "dave", "settle", 201_200],
      ["dormant", undefined, "tick", 266_200],
      ["engaged", "frank", "utterance", 302_000],
      ["engaged", "jon", "utterance", 320_600],
      ["dormant", undefined, "tick", 382_000],
    ]);
    // One Ord sequence for the room's records: each change sits after the line that caused it.
    const ordOf = (text: string) => room.utterances.find((u) => u.text === text)!.ord;
    expect(room.changes[0].ord).toBe(ordOf("hey clankie can you look up the deploy") + 1);
    expect(room.changes[0].ord).toBeLessThan(ordOf("so anyway the meeting moved"));
    expect(room.changes[5].ord).toBe(ordOf("clankie what time is it") + 1);
    expect(room.notices).toEqual([]);
  });

  it("labels are untrusted quoted strings; identity stays the speaker id (a cone-aware query over the room channel)", async () => {
    const h = await joinRoom(open(), ROOM, "AgentReader");
    const carol = await query(h, '(roomUtterance CxRoomStandup ?ord ?id "carol" ?label ?text ?capture)');
    expect(carol).toHaveLength(1);
    expect(JSON.parse(carol[0]["?label"])).toBe(CAROL.trim());
    expect(carol[0]["?text"]).toBe('"clankie did you see that"');
    // The label did not become a decision: exactly one decision per utterance, all by the floor agent.
    expect(await query(h, "(floorDecision ?agent ?u ?address ?decision ?state ?holder)")).toHaveLength(11);
    // A speaker with neither a supplied nor an occupant name is Unlabeled; Alice carries the gateway's name.
    expect(await query(h, '(roomUtterance CxRoomStandup ?ord ?id "dave" Unlabeled ?text ?capture)')).toHaveLength(1);
    expect(await query(h, '(roomUtterance CxRoomStandup ?ord ?id "alice" "Alice" ?text ?capture)')).toHaveLength(2);
    // The shapes can be queried directly: every mention he was offered.
    const mentions = await query(h, "(floorDecision AgentClankie ?u Mentioned (decision Offer Mentioned) ?state ?holder)");
    expect(mentions).toEqual([{ "?u": expect.stringMatching(/^\(sentexHandle \d+\)$/), "?state": "Engaged", "?holder": '"alice"' }]);
  });

  it("the room history replays in order from the KB: a fresh floor fed the recorded lines reaches the same decisions", async () => {
    // The mouth does what the KB says he did on each line.
    const did = new Map(room.utterances.map((u) => [u.text, u.replies[0]?.text]));
    const replayMouth: Mouth = {
      async respond(t: MouthTurn): Promise<MouthOutcome> {
        const text = did.get(t.utterance.text);
        return text === undefined ? { kind: "silent" } : { kind: "spoke", text };
      },
    };
    const r = await floorRig("CxRoomStandupReplay", "AgentClankieReplay", replayMouth);
    // Straight into the session, in Ord order, each at its recorded application time. Lines
    // applied at the same instant are fed in one synchronous batch, as the reorder released
    // them, so a turn settles after both, as it did.
    const byApplied = new Map<number, typeof room.utterances>();
    for (const u of room.utterances) byApplied.set(u.appliedAtMs, [...(byApplied.get(u.appliedAtMs) ?? []), u]);
    for (const [appliedAtMs, lines] of byApplied) {
      await r.at(appliedAtMs - W, () => {
        for (const u of lines) {
          r.session.captureFinal({
            speakerId: u.speakerId,
            startedAtMs: u.startedAtMs - W,
            endedAtMs: u.endedAtMs - W,
            text: u.text,
            utteranceId: u.utteranceId,
            ...(u.displayName === undefined ? {} : { displayName: u.displayName }),
          });
        }
      });
    }
    await r.at(1_000_000);
    await r.ingest.close();
    r.session.stop();
    expect(r.errors).toEqual([]);
    const replayed = await readRoom(open(), "CxRoomStandupReplay");
    expect(kbDecisions(replayed)).toEqual(kbDecisions(room));
    expect(kbOutcomes(replayed)).toEqual(kbOutcomes(room));
    const facts = (h: RoomHistory) => h.utterances.map((u) => [u.utteranceId, u.speakerId, u.displayName, u.startedAtMs, u.endedAtMs, u.appliedAtMs]);
    expect(facts(replayed)).toEqual(facts(room));
    // The two rooms do not see each other.
    expect((await readRoom(open(), ROOM)).utterances).toHaveLength(room.utterances.length);
  });

  it("retracting an utterance retracts its decision and his reply in the same event; the rest of the room stays", async () => {
    const m = open();
    const line = room.utterances.find((u) => u.text === "hey clankie can you look up the deploy")!;
    const { removed } = await m.retract(line.handle);
    expect(removed.sort((a, b) => a - b)).toEqual([line.handle, line.decisions[0].handle, line.replies[0].handle].sort((a, b) => a - b));
    expect(await m.match(`(floorDecision ?agent (sentexHandle ${line.handle}) ?address ?decision ?state ?holder)`, "?ctx")).toEqual([]);
    expect(await m.match(`(answers ?agent ?content (sentexHandle ${line.handle}))`, "?ctx")).toEqual([]);
    const silent = room.utterances.find((u) => u.text === "clankie did you see that")!;
    const gone = await m.retract(silent.handle);
    expect(gone.removed.sort((a, b) => a - b)).toEqual([silent.handle, silent.decisions[0].handle, silent.silences[0].handle].sort((a, b) => a - b));
    const after = await readRoom(m, ROOM);
    expect(after.utterances.map((u) => u.text)).toEqual(room.utterances.filter((u) => u !== line && u !== silent).map((u) => u.text));
    expect(after.utterances.every((u) => u.decisions.length === 1)).toBe(true);
  });

  it("a restarted recorder continues the room's order after what the KB holds", async () => {
    const time = new ManualTime();
    const rec = await KbRoomRecorder.open({ handle: await joinRoom(open(), ROOM, AGENT), clock: time });
    const maxOrd = Math.max(...room.utterances.map((u) => u.ord), ...room.changes.map((c) => c.ord));
    await rec.utterance({ speakerId: alice, seq: 1 as never, text: "back again", startedAtMs: 0, appliedAtMs: 0, occurredAt: "" });
    const after = await readRoom(open(), ROOM);
    expect(after.utterances.at(-1)).toMatchObject({ text: "back again", ord: maxOrd + 1, speakerId: alice, displayName: undefined });
  });
});
