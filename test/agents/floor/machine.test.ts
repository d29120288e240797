import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_DECAY_WINDOW_MS,
  FloorError,
  FloorMachine,
  HOUR_MS,
  VOLITION_DEFAULTS,
  floorOptionsFrom,
  parsePersona,
  characterNames,
  speakerId,
  type FloorDecision,
  type FloorOptions,
  type TurnDecision,
} from "../../../src/agents/floor/index.js";

const WINDOW = 60_000;
const alice = speakerId("alice");
const bob = speakerId("bob");
const carol = speakerId("carol");

function floor(overrides: Partial<FloorOptions> = {}): FloorMachine {
  return new FloorMachine({ names: ["clankie"], replyPolicy: "addressed", chattiness: "balanced", decayWindowMs: WINDOW, ...overrides });
}

function turn(d: FloorDecision): TurnDecision {
  if (d.action === "hold" || d.action === "offer" || d.action === "volition_gate_open" || d.action === "wake") return d;
  throw new Error(`not a turn: ${JSON.stringify(d)}`);
}

describe("options", () => {
  it.each<[Partial<FloorOptions>, string]>([
    [{ decayWindowMs: 0 }, "a zero decay window"],
    [{ decayWindowMs: -5 }, "a negative decay window"],
    [{ decayWindowMs: Number.POSITIVE_INFINITY }, "an infinite decay window"],
    [{ volition: { minIntervalMs: -1 } }, "a negative volition interval"],
    [{ volition: { maxPerHour: 1.5 } }, "a fractional hourly cap"],
    [{ volition: { maxPerHour: -1 } }, "a negative hourly cap"],
    [{ chattiness: "loud" as never }, "an unknown chattiness"],
    [{ replyPolicy: "some" as never }, "an unknown reply policy"],
  ])("the constructor refuses %j with a floor-options error (%s)", (overrides, _why) => {
    let caught: unknown;
    try {
      floor(overrides);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(FloorError);
    expect((caught as FloorError).type).toBe("floor-options");
  });

  it("chattiness sets the volition defaults: quiet 10 min / 2, balanced 4 min / 6, chatty 90 s / 15", () => {
    expect(VOLITION_DEFAULTS).toEqual({
      quiet: { minIntervalMs: 600_000, maxPerHour: 2 },
      balanced: { minIntervalMs: 240_000, maxPerHour: 6 },
      chatty: { minIntervalMs: 90_000, maxPerHour: 15 },
    });
    expect(new FloorMachine({ names: [], replyPolicy: "all", chattiness: "quiet" }).cap).toEqual({ minIntervalMs: 600_000, maxPerHour: 2 });
    expect(floor({ volition: { maxPerHour: 1 } }).cap).toEqual({ minIntervalMs: 240_000, maxPerHour: 1 });
  });

  it("the decay window defaults to 60 s", () => {
    expect(DEFAULT_DECAY_WINDOW_MS).toBe(60_000);
    const f = new FloorMachine({ names: ["clankie"], replyPolicy: "addressed", chattiness: "balanced" });
    f.observe({ speakerId: alice, text: "hey clankie", atMs: 0 });
    expect(f.tick(60_000).action).toBe("ignore");
    expect(f.tick(60_001)).toEqual({ action: "release", reason: "decay" });
  });

  it("a persona's defaults are reply policy all and balanced chattiness, and feed the machine", () => {
    const persona = parsePersona({ id: "AgentFloor", names: ["Clankie"], aliases: ["Sprocket", " clankie "] });
    expect(persona.replyPolicy).toBe("all");
    expect(persona.chattiness).toBe("balanced");
    expect(characterNames(persona)).toEqual(["clankie", "sprocket"]);
    const f = new FloorMachine(floorOptionsFrom(persona, characterNames(persona)));
    expect(f.replyPolicy).toBe("all");
  });

  it("a persona with more than 16 aliases or no name is refused with a floor-persona error", () => {
    for (const bad of [
      { id: "a", names: [] },
      { id: "a", names: ["x"], aliases: Array.from({ length: 17 }, (_, i) => `a${i}`) },
      { id: "a", names: ["x"], surprise: true },
    ]) {
      expect(() => parsePersona(bad)).toThrow(expect.objectContaining({ type: "floor-persona" }));
    }
  });

  it("time going backwards is refused with a floor-time error", () => {
    const f = floor();
    f.observe({ speakerId: alice, text: "hello", atMs: 1_000 });
    expect(() => f.tick(999)).toThrow(expect.objectContaining({ type: "floor-time" }));
  });
});

// The transition table of machine.ts, one row per claim. Each row sets up a state, feeds
// one line and pins the decision, the state and the holder it leaves behind.
type Setup = "dormant" | "engaged-alice" | "engaged-alice-decayed";
const ROWS: {
  claim: string;
  setup: Setup;
  policy?: "addressed" | "all";
  speaker: typeof alice;
  text: string;
  decision: FloorDecision;
  state: "dormant" | "engaged";
  holder: string | undefined;
}[] = [
  { claim: "F1 a line with no letter or digit is not speech, even under policy all", setup: "dormant", policy: "all", speaker: bob, text: " ... ", decision: { action: "ignore", reason: "not_speech" }, state: "dormant", holder: undefined },
  { claim: "F1 a non-speech line from the holder changes nothing", setup: "engaged-alice", speaker: alice, text: "…", decision: { action: "ignore", reason: "not_speech" }, state: "engaged", holder: "alice" },
  { claim: "F3 a re-address from anyone holds and moves the holder", setup: "engaged-alice", speaker: bob, text: "clanky what about you", decision: { action: "hold" }, state: "engaged", holder: "bob" },
  { claim: "F3 a goodbye with his name is an address, not a release", setup: "engaged-alice", speaker: bob, text: "thanks clankie", decision: { action: "hold" }, state: "engaged", holder: "bob" },
  { claim: "F4 a mention while engaged is offered and does not move the holder", setup: "engaged-alice", speaker: bob, text: "clankie did you see that", decision: { action: "offer", reason: "mentioned" }, state: "engaged", holder: "alice" },
  { claim: "F5 a nameless holder line is an offer, same-breath pivot included", setup: "engaged-alice", speaker: alice, text: "yeah thanks. Bob, did you finish that thing?", decision: { action: "offer", reason: "holder" }, state: "engaged", holder: "alice" },
  { claim: "F6 nameless crosstalk from someone else is listened to", setup: "engaged-alice", speaker: bob, text: "so anyway the meeting moved", decision: { action: "listen" }, state: "engaged", holder: "alice" },
  { claim: "F6 talk about him (none) from someone else is only listened to", setup: "engaged-alice", speaker: bob, text: "ask clankie about it", decision: { action: "listen" }, state: "engaged", holder: "alice" },
  { claim: "F6 policy all does not offer engaged crosstalk", setup: "engaged-alice", policy: "all", speaker: bob, text: "morning alice", decision: { action: "listen" }, state: "engaged", holder: "alice" },
  { claim: "F7 a hail wakes a dormant floor and the speaker holds it", setup: "dormant", speaker: alice, text: "hey clankie you there", decision: { action: "wake", reason: "addressed" }, state: "engaged", holder: "alice" },
  { claim: "F8 a mention from dormant is offered without engaging", setup: "dormant", speaker: bob, text: "alright clankie go ahead", decision: { action: "offer", reason: "mentioned" }, state: "dormant", holder: undefined },
  { claim: "F9 policy all offers a dormant line without engaging", setup: "dormant", policy: "all", speaker: bob, text: "morning everyone", decision: { action: "offer", reason: "reply_policy_all" }, state: "dormant", holder: undefined },
  { claim: "F9 policy all offers even a line about him while dormant", setup: "dormant", policy: "all", speaker: bob, text: "that is clankie's job", decision: { action: "offer", reason: "reply_policy_all" }, state: "dormant", holder: undefined },
  { claim: "F10 a nameless dormant line under policy addressed goes to the volition gate", setup: "dormant", speaker: bob, text: "the build is red again", decision: { action: "volition_gate_open", offerId: 1 as never }, state: "dormant", holder: undefined },
  { claim: "F10 talk about him while dormant goes to the volition gate, never to an offer", setup: "dormant", speaker: bob, text: "ask clankie about it", decision: { action: "volition_gate_open", offerId: 1 as never }, state: "dormant", holder: undefined },
  { claim: "F2 a hail after the window is a fresh wake, marked lapsed", setup: "engaged-alice-decayed", speaker: bob, text: "clankie what do you think", decision: { action: "wake", reason: "addressed", lapsed: true }, state: "engaged", holder: "bob" },
  { claim: "F2 a mention after the window is offered from dormant, marked lapsed", setup: "engaged-alice-decayed", speaker: bob, text: "clankie did you see that", decision: { action: "offer", reason: "mentioned", lapsed: true }, state: "dormant", holder: undefined },
  { claim: "F2 a nameless line after the window surfaces the release; the gate waits", setup: "engaged-alice-decayed", speaker: bob, text: "unrelated chatter", decision: { action: "release", reason: "decay" }, state: "dormant", holder: undefined },
  { claim: "F2 even the old holder's nameless line after the window is a release", setup: "engaged-alice-decayed", speaker: alice, text: "anyway", decision: { action: "release", reason: "decay" }, state: "dormant", holder: undefined },
];

describe("observe: the transition table", () => {
  it.each(ROWS)("$claim", (row) => {
    const f = floor(row.policy ? { replyPolicy: row.policy, volition: { minIntervalMs: 0 } } : { volition: { minIntervalMs: 0 } });
    let atMs = 10_000;
    if (row.setup !== "dormant") {
      // Wake through a hail (works under either policy).
      f.observe({ speakerId: alice, text: "hey clankie", atMs: 0 });
      atMs = row.setup === "engaged-alice-decayed" ? WINDOW + 1 : 10_000;
    }
    expect(f.observe({ speakerId: row.speaker, text: row.text, atMs })).toEqual(row.decision);
    expect(f.state).toBe(row.state);
    expect(f.holderId).toBe(row.holder);
  });
});

describe("decay", () => {
  it("offers, listens and non-speech never refresh decay; only a hail does", () => {
    const f = floor();
    f.observe({ speakerId: alice, text: "clankie you there", atMs: 0 });
    f.observe({ speakerId: alice, text: "actually just the voice ones", atMs: 20_000 }); // offer(holder)
    f.observe({ speakerId: bob, text: "clankie did you see that", atMs: 30_000 }); // offer(mentioned)
    f.observe({ speakerId: bob, text: "meeting moved", atMs: 40_000 }); // listen
    expect(f.tick(WINDOW)).toEqual({ action: "ignore", reason: "idle" });
    expect(f.tick(WINDOW + 1)).toEqual({ action: "release", reason: "decay" });
    expect(f.holderId).toBeUndefined();
  });

  it("a hail refreshes decay; so does his own speech", () => {
    const f = floor();
    f.observe({ speakerId: alice, text: "hey clankie", atMs: 0 });
    f.observe({ speakerId: bob, text: "hey clankie", atMs: 30_000 });
    expect(f.tick(WINDOW + 1).action).toBe("ignore");
    f.noteAssistantSpokeAt(80_000);
    expect(f.tick(80_000 + WINDOW).action).toBe("ignore");
    expect(f.tick(80_000 + WINDOW + 1)).toEqual({ action: "release", reason: "decay" });
  });

  it("tick never opens the volition gate: silence costs nothing", () => {
    const f = floor();
    for (const t of [0, HOUR_MS, 2 * HOUR_MS]) expect(f.tick(t)).toEqual({ action: "ignore", reason: "idle" });
    expect(f.accounting()).toEqual({ offered: 0, taken: 0, suppressed: 0 });
  });
});

describe("volition gate", () => {
  const gated = () => floor({ volition: { minIntervalMs: 60_000, maxPerHour: 2 } });
  const line = (atMs: number) => ({ speakerId: bob, text: "chatter", atMs });

  it("stays shut inside the minimum interval and says so", () => {
    const f = gated();
    expect(f.observe(line(0)).action).toBe("volition_gate_open");
    expect(f.observe(line(59_999))).toEqual({ action: "ignore", reason: "volition_interval" });
    expect(f.observe(line(60_000)).action).toBe("volition_gate_open");
  });

  it("enforces the sliding hourly cap and reopens as offers age out", () => {
    const f = gated();
    expect(f.observe(line(0)).action).toBe("volition_gate_open");
    expect(f.observe(line(60_000)).action).toBe("volition_gate_open");
    expect(f.observe(line(120_000))).toEqual({ action: "ignore", reason: "volition_hour_cap" });
    expect(f.observe(line(HOUR_MS - 1))).toEqual({ action: "ignore", reason: "volition_hour_cap" });
    // An offer exactly one hour old has aged out of the sliding hour.
    expect(f.observe(line(HOUR_MS)).action).toBe("volition_gate_open");
    expect(f.accounting().offered).toBe(3);
  });

  it("a cap of zero turns volition off", () => {
    const f = floor({ volition: { maxPerHour: 0 } });
    expect(f.observe(line(0))).toEqual({ action: "ignore", reason: "volition_disabled" });
  });

  it("a mention offer is not rate-capped and not counted as volition", () => {
    const f = gated();
    for (let i = 0; i < 5; i++) {
      expect(f.observe({ speakerId: bob, text: "clankie did you see that", atMs: i })).toEqual({ action: "offer", reason: "mentioned" });
    }
    expect(f.accounting().offered).toBe(0);
  });
});

describe("settlement, per pending turn", () => {
  const free = () => floor({ volition: { minIntervalMs: 0, maxPerHour: 10 } });

  it("S1 a silent volition offer is suppressed and stays dormant", () => {
    const f = free();
    const t = turn(f.observe({ speakerId: bob, text: "deploy is stuck", atMs: 0 }));
    expect(f.settle(t, bob, "silent", 1_000)).toEqual({ action: "ignore", reason: "settled" });
    expect(f.state).toBe("dormant");
    expect(f.accounting()).toEqual({ offered: 1, taken: 0, suppressed: 1 });
  });

  it("S2 a taken volition offer wakes with the provoking speaker as holder", () => {
    const f = free();
    const t = turn(f.observe({ speakerId: bob, text: "deploy is stuck", atMs: 0 }));
    expect(f.settle(t, bob, "spoke", 2_000)).toEqual({ action: "wake", reason: "volition" });
    expect(f.holderId).toBe("bob");
    expect(f.observe({ speakerId: bob, text: "huh good point", atMs: 3_000 })).toEqual({ action: "offer", reason: "holder" });
  });

  it("S2 an address that won the race keeps its floor; the taken offer is still counted", () => {
    const f = free();
    const t = turn(f.observe({ speakerId: bob, text: "deploy is stuck", atMs: 0 }));
    f.observe({ speakerId: carol, text: "hey clankie", atMs: 500 });
    expect(f.settle(t, bob, "spoke", 1_000)).toEqual({ action: "ignore", reason: "settled" });
    expect(f.holderId).toBe("carol");
    expect(f.accounting()).toEqual({ offered: 1, taken: 1, suppressed: 0 });
  });

  it("two quick volition offers settle separately: each outcome lands on its own offer", () => {
    const f = free();
    const first = turn(f.observe({ speakerId: bob, text: "deploy is stuck", atMs: 0 }));
    const second = turn(f.observe({ speakerId: carol, text: "mine too", atMs: 100 }));
    expect(f.settle(first, bob, "silent", 200).action).toBe("ignore");
    expect(f.settle(second, carol, "spoke", 300)).toEqual({ action: "wake", reason: "volition" });
    expect(f.holderId).toBe("carol");
    // Settling the same offer again is refused, so counters cannot exceed offers.
    expect(f.settle(second, carol, "spoke", 400)).toEqual({ action: "ignore", reason: "no_pending_offer" });
    expect(f.accounting()).toEqual({ offered: 2, taken: 1, suppressed: 1 });
  });

  it("S3 a taken mention offer engages from dormant and moves the holder", () => {
    const f = free();
    const t = turn(f.observe({ speakerId: bob, text: "clankie did you see that", atMs: 0 }));
    expect(f.settle(t, bob, "spoke", 1_000)).toEqual({ action: "wake", reason: "mentioned" });
    expect(f.holderId).toBe("bob");
  });

  it("S3 a taken mention offer while engaged moves the holder to its speaker", () => {
    const f = free();
    f.observe({ speakerId: alice, text: "hey clankie", atMs: 0 });
    const t = turn(f.observe({ speakerId: bob, text: "clankie did you see that", atMs: 1_000 }));
    expect(f.holderId).toBe("alice");
    f.settle(t, bob, "spoke", 2_000);
    expect(f.holderId).toBe("bob");
  });

  it("S3 a taken all-policy offer gives its speaker the floor", () => {
    const f = floor({ replyPolicy: "all" });
    const t = turn(f.observe({ speakerId: bob, text: "morning everyone", atMs: 0 }));
    expect(f.settle(t, bob, "spoke", 500)).toEqual({ action: "wake", reason: "reply_policy_all" });
    expect(f.holderId).toBe("bob");
  });

  it("S5 a silent all-policy offer stays dormant, so the next line gets a fresh offer", () => {
    const f = floor({ replyPolicy: "all" });
    const t = turn(f.observe({ speakerId: bob, text: "morning everyone", atMs: 0 }));
    f.settle(t, bob, "silent", 500);
    expect(f.state).toBe("dormant");
    expect(f.observe({ speakerId: bob, text: "anyone there?", atMs: 1_000 })).toEqual({ action: "offer", reason: "reply_policy_all" });
  });

  it("S5 a silent mention offer does not steal the holder or refresh decay", () => {
    const f = free();
    f.observe({ speakerId: alice, text: "hey clankie", atMs: 0 });
    const t = turn(f.observe({ speakerId: bob, text: "clankie did you see that", atMs: 1_000 }));
    f.settle(t, bob, "silent", 2_000);
    expect(f.holderId).toBe("alice");
    expect(f.tick(WINDOW + 1).action).toBe("release");
  });

  it("S4 a taken holder offer refreshes decay without moving the holder", () => {
    const f = free();
    f.observe({ speakerId: alice, text: "hey clankie", atMs: 0 });
    f.observe({ speakerId: bob, text: "hey clankie", atMs: 1_000 }); // bob holds now
    const t = turn(f.observe({ speakerId: bob, text: "and another thing", atMs: 2_000 }));
    f.settle(t, bob, "spoke", 50_000);
    expect(f.holderId).toBe("bob");
    expect(f.tick(50_000 + WINDOW).action).toBe("ignore");
  });
});

describe("holdForWork", () => {
  it("engages on the asker from dormant and refreshes without moving the holder while engaged", () => {
    const f = floor();
    f.holdForWork(alice, 0);
    expect(f.state).toBe("engaged");
    expect(f.holderId).toBe("alice");
    f.observe({ speakerId: bob, text: "hey clankie", atMs: 1_000 });
    f.holdForWork(alice, 50_000);
    expect(f.holderId).toBe("bob");
    expect(f.tick(50_000 + WINDOW).action).toBe("ignore");
  });
});

// Property tests: a random room of lines, ticks, settlements and work holds.
const texts = ["hey clankie", "clankie did you see that", "ask clankie about it", "the build is red", "hmm", "...", "thanks clankie"];
const step = fc.record({
  dtMs: fc.integer({ min: 0, max: 400_000 }),
  kind: fc.constantFrom("line", "line", "line", "tick", "settle", "work", "spoke"),
  speaker: fc.constantFrom(alice, bob, carol),
  text: fc.constantFrom(...texts),
  spoke: fc.boolean(),
});

describe("properties", () => {
  it("the volition gate never opens more than maxPerHour times in any hour, nor within minIntervalMs of the last opening", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("quiet", "balanced", "chatty"),
        fc.constantFrom("addressed", "all"),
        fc.array(step, { maxLength: 120 }),
        (chattiness, replyPolicy, steps) => {
          const f = new FloorMachine({ names: ["clankie"], replyPolicy, chattiness });
          const opened: number[] = [];
          const pending: { t: TurnDecision; s: typeof alice }[] = [];
          let now = 0;
          for (const s of steps) {
            now += s.dtMs;
            if (s.kind === "tick") f.tick(now);
            else if (s.kind === "work") f.holdForWork(s.speaker, now);
            else if (s.kind === "spoke") f.noteAssistantSpokeAt(now);
            else if (s.kind === "settle") {
              const p = pending.shift();
              if (p) f.settle(p.t, p.s, s.spoke ? "spoke" : "silent", now);
            } else {
              const d = f.observe({ speakerId: s.speaker, text: s.text, atMs: now });
              if (d.action === "volition_gate_open") opened.push(now);
              if (d.action === "hold" || d.action === "offer" || d.action === "volition_gate_open" || d.action === "wake") {
                pending.push({ t: d, s: s.speaker });
              }
            }
            const a = f.accounting();
            expect(a.taken + a.suppressed).toBeLessThanOrEqual(a.offered);
            expect(f.state === "engaged").toBe(f.holderId !== undefined);
          }
          const cap = VOLITION_DEFAULTS[chattiness];
          for (let i = 0; i < opened.length; i++) {
            if (i > 0) expect(opened[i] - opened[i - 1]).toBeGreaterThanOrEqual(cap.minIntervalMs);
            const inHour = opened.filter((t) => t > opened[i] - HOUR_MS && t <= opened[i]).length;
            expect(inHour).toBeLessThanOrEqual(cap.maxPerHour);
          }
          expect(f.accounting().offered).toBe(opened.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a hail is never eaten: an addressed line always leaves the floor engaged with its speaker holding", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), fc.constantFrom(alice, bob, carol), (steps, hailer) => {
        const f = floor({ replyPolicy: "addressed" });
        let now = 0;
        for (const s of steps) {
          now += s.dtMs;
          if (s.kind === "tick") f.tick(now);
          else f.observe({ speakerId: s.speaker, text: s.text, atMs: now });
        }
        const d = f.observe({ speakerId: hailer, text: "hey clankie", atMs: now + 1 });
        expect(["wake", "hold"]).toContain(d.action);
        expect(f.state).toBe("engaged");
        expect(f.holderId).toBe(hailer);
      }),
      { numRuns: 200 },
    );
  });
});
