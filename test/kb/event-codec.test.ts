/**
 * The SQLite event log's compact encoding (src/kb/event.ts): every event reads back equal
 * to the one published live, locators included; bodies of files written before it (the
 * whole-record JSON) still read back; and it is what makes an edit's log row small.
 */
import { createHash } from "node:crypto";
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
/**
 * An edit's entries: consecutive handles sharing every field but the sentence (one run in
 * the log); at `breakAt`, one entry differs from the others in one field alone.
 */
const fields = ["context", "truth", "strength", "creator", "createdAt", "seq", "derived", "believed"] as const;
const run = fc
  .record({ first: record, sentences: fc.array(text, { minLength: 1, maxLength: 6 }), breakAt: fc.nat(6), field: fc.constantFrom(...fields), other: record })
  .map(({ first, sentences, breakAt, field, other }) =>
    sentences.map((sentence, i) => {
      const r = { ...first, handle: first.handle + i, sentence, ...(i === breakAt ? { [field]: other[field] } : {}) };
      return { ...r, locator: terms.locatorOf(r.context, r.truth, r.sentence) };
    }),
  );
const added = fc.array(fc.oneof(record.map((r) => [r]), run), { maxLength: 4 }).map((parts) => parts.flat());
const event = fc
  .record({ seq: fc.nat(), added, removed: fc.array(removed, { maxLength: 5 }), bounded: fc.option(bounded, { nil: undefined }) })
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

  it("an event of one added sentex and nothing removed (a single assert's) decodes to itself, and is logged as a run of one: one positional row", () => {
    fc.assert(
      fc.property(record, fc.nat(), (r, seq) => {
        const e: FeedEvent = { seq, added: [r], removed: [] };
        const body = encodeEvent(e);
        expect(decodeEvent(seq, body)).toStrictEqual(e);
        const flags = (r.truth === "false" ? 1 : 0) | (r.strength === "monotonic" ? 2 : 0) | (r.derived ? 4 : 0) | (r.believed ? 8 : 0);
        expect(body).toBe(JSON.stringify([[[r.handle, r.sentence, r.context, flags, r.creator, r.createdAt, r.seq]], []]));
      }),
    );
  });

  it("logs consecutive handles that share their fields as one run", () => {
    const e: FeedEvent = { seq: 9, added: [], removed: [] };
    const add = (handle: number, sentence: string, creator: string | null = null) =>
      e.added.push({ handle, sentence, context: "CxPets", truth: "true", strength: "default", creator, createdAt: 5, seq: 9, derived: false, believed: true, locator: terms.locatorOf("CxPets", "true", sentence) });
    add(7, "(dog Rex)");
    add(8, "(dog Fido)");
    add(9, "(cat Tom)");
    add(11, "(dog Ace)"); // the same fields after a gap in the handles: a row of its own
    add(12, "(dog Max)", "AgentAva"); // the next handle, another creator: a row of its own
    expect(encodeEvent(e)).toBe(
      '[[[7,["(dog Rex)","(dog Fido)","(cat Tom)"],"CxPets",8,null,5,9],[11,"(dog Ace)","CxPets",8,null,5,9],[12,"(dog Max)","CxPets",8,"AgentAva",5,9]],[]]',
    );
    expect(decodeEvent(9, encodeEvent(e))).toStrictEqual(e);
  });

  it("decodes the bodies of one row per added sentex that files written before runs hold", () => {
    const body = '[[[7,"(dog Rex)","CxPets",8,null,5,9],[8,"(dog Fido)","CxPets",10,"AgentAva",5,9]],[[3,"(cat Tom)","CxPets","retracted"]]]';
    const e = decodeEvent(9, body);
    expect(e.added.map((a) => [a.handle, a.sentence, a.strength, a.creator, a.locator])).toEqual([
      [7, "(dog Rex)", "default", null, terms.locatorOf("CxPets", "true", "(dog Rex)")],
      [8, "(dog Fido)", "monotonic", "AgentAva", terms.locatorOf("CxPets", "true", "(dog Fido)")],
    ]);
    expect(e.removed).toEqual([{ handle: 3, sentence: "(cat Tom)", context: "CxPets", reason: "retracted" }]);
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

  it("every record a listener receives carries its locator: sha256 over context, truth and canonical sentence", async () => {
    const kb = await freshKb();
    const live = recordEvents(kb);
    await kb.assert("(implies (dog ?x) (animal ?x))", "CxPets");
    await kb.assert("(dog Rex)", "CxPets");
    await kb.edit({ add: [{ sentence: "(not (cat Rex))", context: "CxPets" }, { sentence: "(dog  Fido)", context: "CxPets" }] });
    const records = live.flatMap((e) => e.added);
    expect(records.map((r) => r.sentence)).toEqual(["(implies (dog ?x) (animal ?x))", "(dog Rex)", "(animal Rex)", "(not (cat Rex))", "(dog Fido)", "(animal Fido)"]);
    const sha = (s: string) => "sha256:" + createHash("sha256").update(s, "utf8").digest("hex");
    expect(records.map((r) => r.locator)).toEqual(records.map((r) => sha(`CxPets\n${r.truth}\n${r.sentence}`)));
    expect(records.find((r) => r.truth === "false")!.locator).toBe(sha("CxPets\nfalse\n(not (cat Rex))"));
  });

  it("an edit of 1 000 logs under a sixth of the whole-record JSON's bytes", async () => {
    const kb = await freshKb();
    const live = recordEvents(kb);
    await kb.edit({ add: Array.from({ length: 1000 }, (_, i) => ({ sentence: `(rel E${i} V${i})`, context: "CxBench" })) });
    const e = live[0]!;
    expect(encodeEvent(e).length).toBeLessThan(JSON.stringify(e).length / 6);
  });
});
