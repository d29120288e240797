/**
 * Streams that follow the feed live (FeedHub.runStream): once caught up, each matching
 * event is written to the socket as it is published, acknowledged only once written; when
 * the socket pushes back the stream falls back to its ring and resumes after drain, with
 * no event lost, repeated or reordered. In-process, against a sink that can refuse writes.
 */
import { describe, it, expect, afterEach } from "vitest";
import fc from "fast-check";
import { openKb, type Kb } from "../../src/kb/index.js";
import { FeedHub, pollAnswerBody, type StreamSink } from "../../src/feed/index.js";

const admin = { id: "admin", admin: true };
const tick = () => new Promise((r) => setImmediate(r));

/** A sink recording the seq of every frame; `full` makes write answer false (backpressure). */
class TestSink implements StreamSink {
  seqs: number[] = [];
  full = false;
  /** Frames written after a refused write and before the drain: backpressure ignored. */
  ignoredPushback = 0;
  private refused = false;
  throwOnWrite = false;
  closed = false;
  private drainWaiters: (() => void)[] = [];
  private goneResolve!: () => void;
  readonly gone = new Promise<void>((r) => (this.goneResolve = r));
  /** Every frame as handed over (the Buffer itself, to see which are shared). */
  frames: Buffer[] = [];
  write(frame: Buffer): boolean {
    if (this.throwOnWrite) throw new Error("socket exploded");
    if (this.refused) this.ignoredPushback++;
    this.frames.push(frame);
    const m = /^id: ([0-9]+)\n/.exec(frame.toString());
    if (m) this.seqs.push(Number(m[1]));
    if (this.full) {
      this.refused = true;
      if (this.drainOnNextTick) process.nextTick(() => this.drain());
    }
    return !this.full;
  }
  /** Follows the StreamSink contract: at once when no drain is owed. */
  drained(): Promise<void> {
    if (!this.refused) return Promise.resolve();
    return new Promise((r) => this.drainWaiters.push(r));
  }
  /** Like a socket the kernel took a whole write from: refuse, then drain on the next tick. */
  drainOnNextTick = false;
  drain(): void {
    this.full = false;
    this.refused = false;
    for (const w of this.drainWaiters.splice(0)) w();
  }
  hangUp(): void {
    this.closed = true;
    this.goneResolve();
  }
  end(): void {
    this.closed = true;
  }
}

let kb: Kb | undefined;
let hub: FeedHub | undefined;
afterEach(async () => {
  hub?.shutdown();
  await kb?.close();
  kb = hub = undefined;
});

async function setup(maxEvents = 256): Promise<{ kb: Kb; hub: FeedHub }> {
  kb = await openKb({ path: ":memory:" });
  hub = await FeedHub.open(kb, { maxEvents });
  return { kb, hub };
}

/** Start a stream and let it catch up; `done` settles when it ends (boxed: an async function would adopt it). */
async function stream(h: FeedHub, token: string, cursor: number, sink: TestSink): Promise<{ done: Promise<void> }> {
  const done = h.runStream(h.prepareStream(admin, token, cursor), sink, 60_000);
  await tick();
  return { done };
}

describe("live streams", () => {
  it("a caught-up stream gets each matching event as it is published, and acknowledges it", async () => {
    const { kb, hub } = await setup();
    const w = hub.watch(admin, { goal: "(dog ?x)", context: "CxPets" });
    const sink = new TestSink();
    const { done } = await stream(hub, w.token, w.cursor, sink);
    const a = await kb.assert("(dog Rex)", "CxPets");
    expect(sink.seqs).toEqual([a.seq]); // written during the publish, before the writer's answer returned
    await kb.assert("(cat Tom)", "CxPets"); // does not match
    const c = await kb.assert("(dog Ada)", "CxPets");
    expect(sink.seqs).toEqual([a.seq, c.seq]);
    expect(hub.pendingCount).toBe(0);
    expect(hub.watchers(admin)[0]!.cursor).toBe(c.seq);
    sink.hangUp();
    await done;
    expect(hub.streamCount).toBe(0);
  });

  it("every stream that carries an event is handed the same encoded frame: one encoding per event, not per stream", async () => {
    const { kb, hub } = await setup();
    const sinks = [new TestSink(), new TestSink(), new TestSink()];
    const streams = [];
    for (const sink of sinks) {
      const w = hub.watch(admin, { goal: "(dog ?x)", context: "CxPets" });
      streams.push(await stream(hub, w.token, w.cursor, sink));
    }
    const a = await kb.assert("(dog Rex)", "CxPets");
    const b = await kb.assert("(dog Ada)", "CxPets");
    for (const sink of sinks) expect(sink.seqs).toEqual([a.seq, b.seq]);
    for (const i of [0, 1]) {
      expect(sinks[1]!.frames[i]).toBe(sinks[0]!.frames[i]); // the same Buffer object
      expect(sinks[2]!.frames[i]).toBe(sinks[0]!.frames[i]);
    }
    const text = sinks[0]!.frames[0]!.toString();
    expect(text.startsWith(`id: ${a.seq}\ndata: {`) && text.endsWith("}\n\n") && text.includes('"(dog Rex)"')).toBe(true);
    for (const sink of sinks) sink.hangUp();
    await Promise.all(streams.map((s) => s.done));
  });

  it("when the socket pushes back, events wait in the ring and follow after drain, in order, once each", async () => {
    const { kb, hub } = await setup();
    const w = hub.watch(admin, { context: "CxPets" });
    const sink = new TestSink();
    const { done } = await stream(hub, w.token, w.cursor, sink);
    sink.full = true;
    const seqs = [];
    for (const x of ["A", "B", "C", "D"]) seqs.push((await kb.assert(`(dog ${x})`, "CxPets")).seq);
    expect(sink.seqs).toEqual([seqs[0]]); // the refused write still carried its frame; the rest wait
    expect(hub.pendingCount).toBe(3);
    sink.drain();
    await tick();
    expect(sink.seqs).toEqual(seqs);
    const e = await kb.assert("(dog E)", "CxPets"); // live again
    expect(sink.seqs).toEqual([...seqs, e.seq]);
    expect(sink.ignoredPushback).toBe(0);
    expect(hub.pendingCount).toBe(0);
    sink.hangUp();
    await done;
  });

  it("a drain that comes before the stream asks for it is not missed (Node emits it on the next tick)", async () => {
    const { kb, hub } = await setup();
    const w = hub.watch(admin, { context: "CxPets" });
    const sink = new TestSink();
    sink.drainOnNextTick = true;
    const { done } = await stream(hub, w.token, w.cursor, sink);
    sink.full = true;
    const a = await kb.assert("(dog A)", "CxPets"); // refused write, drained at once
    sink.full = true;
    const b = await kb.assert("(dog B)", "CxPets");
    sink.full = false;
    const c = await kb.assert("(dog C)", "CxPets");
    await tick();
    expect(sink.seqs).toEqual([a.seq, b.seq, c.seq]);
    expect(hub.pendingCount).toBe(0);
    sink.hangUp();
    await done;
  });

  it("a reconnect takes over: the new stream follows live, the old one ends", async () => {
    const { kb, hub } = await setup();
    const w = hub.watch(admin, { context: "CxPets" });
    const first = new TestSink();
    const { done: firstDone } = await stream(hub, w.token, w.cursor, first);
    const a = await kb.assert("(dog A)", "CxPets");
    const second = new TestSink();
    const { done: secondDone } = await stream(hub, w.token, a.seq, second);
    await firstDone;
    expect(first.closed).toBe(true);
    const b = await kb.assert("(dog B)", "CxPets");
    await tick();
    expect(first.seqs).toEqual([a.seq]);
    expect(second.seqs).toEqual([b.seq]);
    second.hangUp();
    await secondDone;
  });

  it("a sink that throws ends its own stream only: other streams get the event, the writer its answer", async () => {
    const { kb, hub } = await setup();
    const bad = new TestSink();
    const good = new TestSink();
    const wb = hub.watch(admin, { context: "CxPets" });
    const wg = hub.watch(admin, { context: "CxPets" });
    const { done: badDone } = await stream(hub, wb.token, wb.cursor, bad);
    const { done: goodDone } = await stream(hub, wg.token, wg.cursor, good);
    bad.throwOnWrite = true;
    const a = await kb.assert("(dog A)", "CxPets");
    expect(good.seqs).toEqual([a.seq]);
    await badDone; // ended, not rejected
    expect(bad.closed).toBe(true);
    expect(hub.streamCount).toBe(1);
    const b = await kb.assert("(dog B)", "CxPets");
    expect(good.seqs).toEqual([a.seq, b.seq]);
    good.hangUp();
    await goodDone;
  });

  it("property: any interleaving of writes, pushback and drains delivers every matching event exactly once, in seq order", async () => {
    const step = fc.oneof(
      fc.record({ op: fc.constant("write" as const), dog: fc.boolean() }),
      fc.record({ op: fc.constant("pushback" as const) }),
      fc.record({ op: fc.constant("drain" as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
        const { kb, hub } = await setup(1000);
        try {
          const w = hub.watch(admin, { goal: "(dog ?x)", context: "CxPets" });
          const sink = new TestSink();
          const { done } = await stream(hub, w.token, w.cursor, sink);
          const expected: number[] = [];
          let n = 0;
          for (const s of steps) {
            if (s.op === "write") {
              const r = await kb.assert(`(${s.dog ? "dog" : "cat"} X${n++})`, "CxPets");
              if (s.dog) expected.push(r.seq!);
            } else if (s.op === "pushback") sink.full = true;
            else {
              sink.drain();
              await tick();
            }
          }
          sink.drain();
          await tick();
          expect(sink.seqs).toEqual(expected);
          expect(sink.ignoredPushback).toBe(0);
          sink.hangUp();
          await done;
        } finally {
          hub.shutdown();
          await kb.close();
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe("parked polls woken by one event", () => {
  it("share one encoded answer body, the same JSON as the answer", async () => {
    const { kb, hub } = await setup();
    const polls = [0, 1, 2].map(() => {
      const w = hub.watch(admin, { goal: "(dog ?x)", context: "CxPets" });
      return hub.poll(admin, { token: w.token, cursor: w.cursor, waitMs: 10_000 });
    });
    await tick();
    expect(hub.parkedCount).toBe(3);
    const a = await kb.assert("(dog Rex)", "CxPets");
    const answers = await Promise.all(polls);
    const bodies = answers.map(pollAnswerBody);
    expect(bodies[1]).toBe(bodies[0]); // the same Buffer object
    expect(bodies[2]).toBe(bodies[0]);
    expect(JSON.parse(bodies[0]!.toString())).toEqual({ ok: true, ...JSON.parse(JSON.stringify(answers[0])) });
    expect(answers[0]!.cursor).toBe(a.seq);
    // An answer that is not one caught-up event is built for itself, with the same shape.
    const lagged = { ...answers[0]!, lagged: 2 };
    expect(JSON.parse(pollAnswerBody(lagged).toString())).toEqual({ ok: true, ...JSON.parse(JSON.stringify(lagged)) });
  });
});
