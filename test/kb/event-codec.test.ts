/**
 * The SQLite event log's compact encoding (src/kb/event.ts): every event reads back equal
 * to the one published live, locators included; bodies of files written before it (the
 * whole-record JSON) still read back; and it is what makes an edit's log row small.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeEvent, encodeEvent, type FeedEvent } from "../../src/kb/event.js";
import { terms } from "../../src/kb/index.js";
import { freshKb, recordEvents } from "./helpers.js";

const text = fc.string({ unit: "grapheme", maxLength: 30 });
const record = fc
  .record({
    handle: fc.nat(),
    sentence: text,
    context: text,
    truth: fc.constantFrom("true" as const, "false" as const),
    strength: fc.constantFrom("default" as const, "monotonic" as const),
    creator: fc.option(text, { nil: null }),
    createdAt: fc.nat(),
    seq: fc.nat(),
    derived: fc.boolean(),
    believed: fc.boolean(),
  })
  .map((r) => ({ ...r, locator: terms.locatorOf(r.context, r.truth, r.sentence) }));
const removed = fc
  .record({ handle: fc.nat(), sentence: text, context: text, reason: fc.constantFrom("retracted" as const, "cascade" as const, "unsupported" as const, "defeated" as const) })
  .map((r) => ({ ...r }));
const bounded = fc.record({ limit: fc.constantFrom("maxDerivations" as const, "maxDepth" as const), value: fc.nat() }).map((b) => ({ ...b }));
const event = fc
  .record({ seq: fc.nat(), added: fc.array(record, { maxLength: 5 }), removed: fc.array(removed, { maxLength: 5 }), bounded: fc.option(bounded, { nil: undefined }) })
  .map(({ bounded: b, ...e }): FeedEvent => (b ? { ...e, bounded: b } : e));

describe("the compact event encoding", () => {
  it("decodes every event to itself, locators recomputed, fields in the order the live event has them", () => {
    fc.assert(
      fc.property(event, (e) => {
        const back = decodeEvent(e.seq, encodeEvent(e));
        expect(back).toStrictEqual(e);
        expect(JSON.stringify(back)).toBe(JSON.stringify(e));
      }),
    );
  });

  it("decodes the whole-record JSON that older files hold", () => {
    fc.assert(
      fc.property(event, (e) => {
        expect(decodeEvent(e.seq, JSON.stringify(e))).toStrictEqual(e);
      }),
    );
  });

  it("the log of a real KB reads back equal, byte for byte as JSON, to the events published live", async () => {
    const kb = await freshKb();
    const live = recordEvents(kb);
    await kb.assert("(implies (dog ?x) (animal ?x))", "CxPets");
    const rex = await kb.assert("(dog Rex)", "CxPets", { creator: "AgentAva", strength: "monotonic" });
    await kb.edit({ add: [{ sentence: "(not (cat Rex))", context: "CxPets" }, { sentence: "(dog Fido)", context: "CxPets" }] });
    await kb.retract(rex.handle);
    const first = live[0]!.seq;
    expect(live.some((e) => e.added.some((a) => a.derived))).toBe(true);
    expect(live.some((e) => e.removed.length > 0)).toBe(true);
    const logged = await kb.readEvents(first - 1, 100);
    expect(logged).toStrictEqual(live);
    expect(JSON.stringify(logged)).toBe(JSON.stringify(live));
  });

  it("an edit of 1 000 logs under a third of the whole-record JSON's bytes", async () => {
    const kb = await freshKb();
    const live = recordEvents(kb);
    await kb.edit({ add: Array.from({ length: 1000 }, (_, i) => ({ sentence: `(rel E${i} V${i})`, context: "CxBench" })) });
    const e = live[0]!;
    expect(encodeEvent(e).length).toBeLessThan(JSON.stringify(e).length / 3);
  });
});
