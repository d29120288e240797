import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  FLOOR_WORK_MAX_MS,
  FloorMachine,
  FloorSession,
  UTTERANCE_REORDER_GRACE_MS,
  speakerId,
  type FloorOptions,
  type SpeakerId,
} from "../../../src/agents/floor/index.js";
import { MemoryRecorder, ScriptedMouth } from "./doubles.js";
import { ManualTime, WALL_EPOCH_MS } from "./fake-time.js";

const [alice, bob, carol, dave, erin, frank, gina, ivy, jon] = ["alice", "bob", "carol", "dave", "erin", "frank", "gina", "ivy", "jon"].map(speakerId);

function rig(replies: Record<string, string> = {}, machine: Partial<FloorOptions> = {}) {
  const time = new ManualTime();
  const recorder = new MemoryRecorder();
  const mouth = new ScriptedMouth(replies);
  const occupants: Record<string, string> = { alice: "Alice", bob: "Bob" };
  const errors: unknown[] = [];
  const session = new FloorSession({
    machine: new FloorMachine({ names: ["clankie"], replyPolicy: "addressed", chattiness: "balanced", ...machine }),
    mouth,
    recorder,
    clock: time,
    scheduler: time,
    occupantName: (id) => occupants[id],
    onError: (e) => errors.push(e),
  });
  /** Move the clock to `ms` (firing due timers), run `fn`, let turns and records settle. */
  async function at(ms: number, fn: () => void | Promise<unknown> = () => {}): Promise<void> {
    time.advanceTo(ms);
    await fn();
    await session.idle();
  }
  function say(who: SpeakerId, startedAtMs: number, text: string, displayName?: string): void {
    session.captureFinal(displayName === undefined ? { speakerId: who, startedAtMs, text } : { speakerId: who, startedAtMs, text, displayName });
  }
  return { time, recorder, mouth, session, at, say, errors };
}

describe("replay: a multi-speaker room", () => {
  it("applies overlapping captures in start order, keeps the holder through pivots and mentions, and holds the floor for a long lookup", async () => {
    const { recorder, mouth, session, at, say, errors } = rig({
      "hey clankie can you look up the deploy": "on it",
      "ask clankie about the weather": "it is sunny in the logs",
      "hey clankie": "hi frank",
    });
    let resolveLookup: (v: string) => void = () => {};
    const lookup = new Promise<string>((r) => (resolveLookup = r));
    let work: Promise<string> | undefined;

    // Alice starts first but talks longer; Bob's earlier final waits for her (grace).
    await at(0, () => session.captureStarted(alice, 0));
    await at(200, () => session.captureStarted(bob, 200));
    await at(1_500, () => say(bob, 200, "so anyway the meeting moved"));
    expect(recorder.utterances()).toHaveLength(0);
    await at(1_700, () => say(alice, 0, "hey clankie can you look up the deploy"));
    // The lookup (ask_clankie) runs for 93 s, far past the 60 s decay window.
    await at(2_000, () => void (work = session.runFloorWork(alice, () => lookup)));
    // Carol mentions him (supplies an untrusted display name); Alice pivots to Bob; Bob answers her.
    await at(20_000, () => say(carol, 19_800, "clankie did you see that", '  Carol "the boss" '));
    await at(30_000, () => say(alice, 29_000, "yeah thanks. Bob, did you finish that thing?"));
    await at(40_000, () => say(bob, 39_000, "almost, give me a sec"));
    await at(90_000);
    expect(session.machine.state).toBe("engaged"); // without the heartbeat it would have lapsed at ~66 s
    await at(95_000, async () => {
      resolveLookup("deploy 42 is green");
      await work;
    });
    await at(150_000);
    expect(session.machine.holderId).toBe(alice);
    await at(160_000);
    expect(session.machine.state).toBe("dormant");

    // Dormant: Erin finishes first, but Dave started first; Dave's line opens the volition gate.
    await at(200_000, () => session.captureStarted(dave, 200_000));
    await at(200_100, () => session.captureStarted(erin, 200_100));
    await at(201_000, () => say(erin, 200_100, "nice weather today"));
    await at(201_200, () => say(dave, 200_000, "ask clankie about the weather"));

    // Grace runs out: Gina's short line goes ahead of Frank, who is still talking.
    await at(300_000, () => session.captureStarted(frank, 300_000));
    await at(300_050, () => session.captureStarted(gina, 300_050));
    await at(300_500, () => say(gina, 300_050, "lol"));
    await at(302_000, () => say(frank, 300_000, "hey clankie"));

    // Addressed bypass: Jon's hail is applied at once although Ivy started earlier.
    await at(320_000, () => session.captureStarted(ivy, 320_000));
    await at(320_100, () => session.captureStarted(jon, 320_100));
    await at(320_600, () => say(jon, 320_100, "clankie what time is it"));
    await at(321_000, () => say(ivy, 320_000, "anyway as I was saying"));
    await at(1_000_000);

    expect(errors).toEqual([]);
    expect(recorder.decisions()).toEqual([
      ["hey clankie can you look up the deploy", "wake(addressed)", "alice"],
      ["so anyway the meeting moved", "listen", "alice"],
      ["clankie did you see that", "offer(mentioned)", "alice"],
      ["yeah thanks. Bob, did you finish that thing?", "offer(holder)", "alice"],
      ["almost, give me a sec", "listen", "alice"],
      ["ask clankie about the weather", "volition_gate_open", undefined],
      // Applied before Dave's offer settled, so the gate's interval refuses it.
      ["nice weather today", "ignore(volition_interval)", undefined],
      ["lol", "ignore(volition_interval)", undefined],
      ["hey clankie", "wake(addressed)", "frank"],
      ["clankie what time is it", "hold", "jon"],
      ["anyway as I was saying", "listen", "jon"],
    ]);
    expect(recorder.utterances().map((u) => u.appliedAtMs)).toEqual([
      1_700, 1_700, 20_000, 30_000, 40_000, 201_200, 201_200, 300_500 + UTTERANCE_REORDER_GRACE_MS, 302_000, 320_600, 321_000,
    ]);
    expect(recorder.floorChanges()).toEqual([
      { state: "engaged", holderId: "alice", cause: "utterance", atMs: 1_700 },
      // Last work refresh at 95 s; the 5 s tick started at 1.7 s finds it lapsed at 156.7 s.
      { state: "dormant", holderId: undefined, cause: "tick", atMs: 156_700 },
      { state: "engaged", holderId: "dave", cause: "settle", atMs: 201_200 },
      { state: "dormant", holderId: undefined, cause: "tick", atMs: 266_200 },
      { state: "engaged", holderId: "frank", cause: "utterance", atMs: 302_000 },
      // A clean hail moves the holder while engaged: a floor change too (state or holder).
      { state: "engaged", holderId: "jon", cause: "utterance", atMs: 320_600 },
      { state: "dormant", holderId: undefined, cause: "tick", atMs: 382_000 },
    ]);
    // Every turn carried a note; replies and silences settled per turn, in order.
    expect(mouth.turns.map((t) => [t.utterance.text, t.note])).toEqual([
      ["hey clankie can you look up the deploy", "name-came-up"],
      ["clankie did you see that", "name-came-up"],
      ["yeah thanks. Bob, did you finish that thing?", "nobody-named-you"],
      ["ask clankie about the weather", "unprompted"],
      ["hey clankie", "name-came-up"],
      ["clankie what time is it", "name-came-up"],
    ]);
    expect(recorder.entries.flatMap((e) => (e.kind === "reply" ? [e.text] : e.kind === "silence" ? [`(${e.why})`] : []))).toEqual([
      "on it",
      "(chosen)",
      "(chosen)",
      "it is sunny in the logs",
      "hi frank",
      "(chosen)",
    ]);
    expect(session.machine.accounting()).toEqual({ offered: 1, taken: 1, suppressed: 0 });
    // The hold window closed the idle mouth once, 5 min after the last release.
    expect(mouth.closed).toBe(1);
    // Labels: gateway occupant names, a supplied name trimmed and kept as data; identity stays the id.
    const carolLine = recorder.utterances()[2];
    expect(carolLine).toMatchObject({ speakerId: "carol", displayName: 'Carol "the boss"' });
    expect(mouth.turns[1].history.map((u) => [u.speakerId, u.displayName])).toEqual([
      ["alice", "Alice"],
      ["bob", "Bob"],
    ]);
    expect(recorder.utterances()[5]).not.toHaveProperty("displayName");
    expect(recorder.utterances()[0].occurredAt).toBe(new Date(WALL_EPOCH_MS + 1_700).toISOString());
  });

  it("records each utterance before its decision, and both before the turn's outcome", async () => {
    const { recorder, at, say } = rig({ "hey clankie": "hello" });
    await at(0, () => say(alice, 0, "hey clankie"));
    expect(recorder.entries.map((e) => e.kind)).toEqual(["utterance", "decision", "floor", "reply"]);
  });
});

describe("floor work", () => {
  it("a lookup that never settles stops refreshing after FLOOR_WORK_MAX_MS, says so, and the floor decays", async () => {
    const { recorder, session, at, say } = rig();
    await at(0, () => say(alice, 0, "hey clankie look this up"));
    await at(1_000, () => void session.runFloorWork(alice, () => new Promise<never>(() => {})));
    await at(1_000 + FLOOR_WORK_MAX_MS - 1);
    expect(session.machine.state).toBe("engaged");
    await at(1_000 + FLOOR_WORK_MAX_MS);
    expect(recorder.entries.filter((e) => e.kind === "notice").map((e) => e.kind === "notice" && e.n.kind)).toEqual(["floor-work-max"]);
    // The last refresh was the beat at 286 s; 60 s of decay later the tick releases.
    await at(345_000);
    expect(session.machine.state).toBe("engaged");
    await at(350_000);
    expect(session.machine.state).toBe("dormant");
  });

  it("the heartbeat stops in a finally when the lookup throws", async () => {
    const { session, time, at, say } = rig();
    await at(0, () => say(alice, 0, "hey clankie look this up"));
    let fail: (e: Error) => void = () => {};
    let settled: Promise<unknown> = Promise.resolve();
    await at(1_000, () => {
      settled = session.runFloorWork(alice, () => new Promise<never>((_, reject) => (fail = reject))).catch((e: Error) => e.message);
    });
    await at(20_000, async () => {
      fail(new Error("captain gone"));
      expect(await settled).toBe("captain gone");
    });
    const refreshedAt = session.machine.snapshot().lastRelevantAtMs;
    expect(refreshedAt).toBe(16_000);
    expect(time.pending()).not.toContain(11_000); // the next beat (31 s) was cancelled
    await at(31_000);
    expect(session.machine.snapshot().lastRelevantAtMs).toBe(refreshedAt);
  });

  it("work for a dormant floor engages on the asker", async () => {
    const { recorder, session, at } = rig();
    let done: () => void = () => {};
    await at(0, () => void session.runFloorWork(bob, () => new Promise<void>((r) => (done = r))));
    expect(session.machine.holderId).toBe(bob);
    expect(recorder.floorChanges()).toEqual([{ state: "engaged", holderId: "bob", cause: "work", atMs: 0 }]);
    done();
  });
});

describe("turn queue", () => {
  it("turns beyond the queue bound are refused out loud and settle as silence", async () => {
    const recorder = new MemoryRecorder();
    const stuck = new FloorSession({
      machine: new FloorMachine({ names: ["clankie"], replyPolicy: "all", chattiness: "balanced" }),
      mouth: { respond: () => new Promise(() => {}) }, // never answers: every turn stays queued
      recorder,
      clock: { monotonicMs: () => 0, wallMs: () => 0 },
      scheduler: { schedule: () => ({ cancel: () => {} }) },
      maxQueuedTurns: 2,
    });
    for (let i = 0; i < 4; i++) stuck.captureFinal({ speakerId: carol, startedAtMs: i, text: `line ${i}` });
    await new Promise((r) => setImmediate(r));
    expect(recorder.entries.flatMap((e) => (e.kind === "silence" ? [[e.seq, e.why]] : []))).toEqual([
      [3, "turn-queue-full"],
      [4, "turn-queue-full"],
    ]);
    expect(recorder.entries.flatMap((e) => (e.kind === "notice" ? [e.n.kind] : []))).toEqual(["turn-queue-full", "turn-queue-full"]);
  });
});

// Property: random overlapping captures (one per speaker, none naming him) through the
// session with a manual clock.
const capture = fc.record({ startMs: fc.integer({ min: 0, max: 3_000 }), durationMs: fc.integer({ min: 50, max: 2_000 }) });

async function replayCaptures(caps: { startMs: number; durationMs: number }[]) {
  const time = new ManualTime();
  const recorder = new MemoryRecorder();
  const session = new FloorSession({
    machine: new FloorMachine({ names: ["clankie"], replyPolicy: "addressed", chattiness: "balanced" }),
    mouth: new ScriptedMouth(),
    recorder,
    clock: time,
    scheduler: time,
  });
  const speakers = caps.map((_, i) => speakerId(`s${i}`));
  caps.forEach((c, i) => time.schedule(c.startMs, () => session.captureStarted(speakers[i], c.startMs)));
  caps.forEach((c, i) =>
    time.schedule(c.startMs + c.durationMs, () => session.captureFinal({ speakerId: speakers[i], startedAtMs: c.startMs, text: `line ${i}` })),
  );
  time.advanceTo(20_000);
  await session.idle();
  return recorder.utterances().map((u) => ({ i: Number(u.text.slice(5)), appliedAtMs: u.appliedAtMs }));
}

describe("reorder properties", () => {
  it("every capture is applied exactly once, and a later-started line overtakes an earlier one only after waiting the full grace", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(capture, { minLength: 1, maxLength: 8, selector: (c) => c.startMs }), async (caps) => {
        const applied = await replayCaptures(caps);
        expect(applied.map((a) => a.i).sort((x, y) => x - y)).toEqual(caps.map((_, i) => i));
        applied.forEach((later, pos) => {
          for (const earlier of applied.slice(pos + 1)) {
            const j = caps[later.i];
            const i = caps[earlier.i];
            if (i.startMs < j.startMs) {
              expect(later.appliedAtMs - (j.startMs + j.durationMs)).toBeGreaterThanOrEqual(UTTERANCE_REORDER_GRACE_MS);
              expect(i.startMs + i.durationMs).toBeGreaterThanOrEqual(later.appliedAtMs);
            }
          }
        });
      }),
      { numRuns: 200 },
    );
  });

  it("when every earlier capture ends within the grace of each later one, output is sorted by start", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(capture, { minLength: 1, maxLength: 8, selector: (c) => c.startMs }), async (caps) => {
        const end = (c: { startMs: number; durationMs: number }) => c.startMs + c.durationMs;
        fc.pre(caps.every((i) => caps.every((j) => !(i.startMs < j.startMs) || end(i) < end(j) + UTTERANCE_REORDER_GRACE_MS)));
        const applied = await replayCaptures(caps);
        const starts = applied.map((a) => caps[a.i].startMs);
        expect(starts).toEqual([...starts].sort((x, y) => x - y));
      }),
      { numRuns: 200 },
    );
  });
});
