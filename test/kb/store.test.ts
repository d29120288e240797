import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openKb } from "../../src/kb/index.js";
import { CONTEXTS_DIR, believed, stored, freshKb, recordEvents, refusal, removalsOf, tempDir } from "./helpers.js";

describe("identity and idempotent assert", () => {
  it("a repeated assert returns the same handle and changes nothing", async () => {
    const kb = await freshKb();
    const first = await kb.assert("(dog Muffet)", "CxPets");
    const before = { head: kb.headSeq, size: kb.size, commits: kb.store.commits };
    const again = await kb.assert("(  dog   Muffet )", "CxPets");
    expect(first.created).toBe(true);
    expect(again).toEqual({ handle: first.handle, seq: first.seq, created: false });
    expect({ head: kb.headSeq, size: kb.size }).toEqual({ head: before.head, size: before.size });
    expect(await kb.readEvents(first.seq, 10)).toEqual([]);
  });

  it("the first writer wins creator and createdAt", async () => {
    let clock = 1_000;
    const kb = await freshKb({ now: () => clock });
    const a = await kb.assert("(dog Muffet)", "CxPets", { creator: "AgentAva" });
    clock = 2_000;
    await kb.assert("(dog Muffet)", "CxPets", { creator: "AgentBen" });
    expect(kb.sentex(a.handle)).toMatchObject({ creator: "AgentAva", createdAt: 1_000, seq: a.seq });
  });

  it("the same sentence in two contexts, or at two truths, is two sentexes", async () => {
    const kb = await freshKb();
    const a = await kb.assert("(dog Muffet)", "CxPets");
    const b = await kb.assert("(dog Muffet)", "CxZoo");
    const c = await kb.assert("(not (dog Muffet))", "CxPets");
    expect(new Set([a.handle, b.handle, c.handle]).size).toBe(3);
    expect(kb.sentex(c.handle)).toMatchObject({ truth: "false", sentence: "(not (dog Muffet))" });
    expect(kb.sentex(a.handle)!.locator).not.toBe(kb.sentex(b.handle)!.locator);
  });

  it("a symbol and the string spelled the same are different sentexes", async () => {
    const kb = await freshKb();
    const a = await kb.assert("(name Foo)", "CxPets");
    const b = await kb.assert('(name "Foo")', "CxPets");
    expect(a.handle).not.toBe(b.handle);
    expect(kb.query("(name ?x)", "CxPets").solutions).toEqual([{ "?x": "Foo" }, { "?x": '"Foo"' }]);
  });

  it("a sentex record carries canonical text, truth, strength, seq, locator and belief", async () => {
    const kb = await freshKb({ now: () => 42 });
    const r = await kb.assert('(label  Muffet  "a\\u0062")', "CxPets", { creator: "AgentAva" });
    expect(kb.sentex(r.handle)).toEqual({
      handle: r.handle,
      sentence: '(label Muffet "ab")',
      context: "CxPets",
      truth: "true",
      strength: "default",
      creator: "AgentAva",
      createdAt: 42,
      seq: r.seq,
      derived: false,
      believed: true,
      locator: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
  });

  it("every write that moves belief takes the next seq, with no gaps", async () => {
    const kb = await freshKb();
    const seqs: number[] = [];
    for (const s of ["(a X)", "(b X)", "(c X)", "(d X)"]) seqs.push((await kb.assert(s, "CxPets")).seq);
    seqs.push((await kb.edit({ add: [{ sentence: "(e X)", context: "CxPets" }, { sentence: "(f X)", context: "CxPets" }] })).seq);
    seqs.push((await kb.retract(kb.match("(d X)", "CxPets")[0]!.handle)).seq);
    expect(seqs).toEqual(seqs.map((_, i) => seqs[0]! + i));
  });
});

describe("strength", () => {
  it("a repeat at monotonic upgrades a default and a repeat at default keeps monotonic", async () => {
    const kb = await freshKb();
    const a = await kb.assert("(dog Muffet)", "CxPets");
    expect(kb.sentex(a.handle)!.strength).toBe("default");
    const up = await kb.assert("(dog Muffet)", "CxPets", { strength: "monotonic" });
    expect(up).toMatchObject({ handle: a.handle, created: false });
    expect(kb.sentex(a.handle)!.strength).toBe("monotonic");
    const head = kb.headSeq;
    await kb.assert("(dog Muffet)", "CxPets", { strength: "default" });
    expect(kb.sentex(a.handle)!.strength).toBe("monotonic");
    expect(kb.headSeq).toBe(head);
  });

  it("an unknown strength is refused with shape", async () => {
    const kb = await freshKb();
    expect((await refusal(() => kb.assert("(dog Muffet)", "CxPets", { strength: "strong" as never }))).type).toBe("shape");
  });
});

describe("retract", () => {
  it("a retracted handle answers unknown-handle from then on, and its event says retracted", async () => {
    const kb = await freshKb();
    const events = recordEvents(kb);
    const a = await kb.assert("(dog Muffet)", "CxPets");
    const r = await kb.retract(a.handle);
    expect(r.removed).toEqual([a.handle]);
    expect(kb.sentex(a.handle)).toBeUndefined();
    expect(kb.match("(dog ?x)", "CxPets")).toEqual([]);
    expect((await refusal(() => kb.retract(a.handle))).type).toBe("unknown-handle");
    expect(removalsOf(events, "(dog Muffet)", "CxPets")).toEqual(["retracted"]);
    expect(kb.why(a.handle)).toMatchObject({ believed: false, reason: "retracted" });
  });

  it("a handle that was never stored is unknown-handle and a non-integer is bad-request", async () => {
    const kb = await freshKb();
    expect((await refusal(() => kb.retract(999_999))).type).toBe("unknown-handle");
    expect((await refusal(() => kb.retract(1.5))).type).toBe("bad-request");
    expect((await refusal(() => kb.retract(-1))).type).toBe("bad-request");
  });
});

describe("targetFollowingPredicate cascade", () => {
  it("retracting a target retracts every marked meta-sentex naming it, recursively", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxAtlas CxSpeechActs)", "CxUniverse", { strength: "monotonic" });
    const events = recordEvents(kb);
    const claim = await kb.assert("(usesDatabase Prod Postgres)", "CxAtlas");
    const endorse = await kb.assert(`(endorses AgentAtlas (sentexHandle ${claim.handle}))`, "CxAtlas");
    const endorseEndorse = await kb.assert(`(endorses AgentBoreas (sentexHandle ${endorse.handle}))`, "CxAtlas");
    const vote = await kb.assert(`(votesFor AgentBoreas (sentexHandle ${claim.handle}))`, "CxAtlas");
    const r = await kb.retract(claim.handle);
    expect(r.removed).toEqual([claim.handle, endorse.handle, endorseEndorse.handle].sort((a, b) => a - b));
    expect(kb.sentex(vote.handle)?.believed).toBe(true); // votesFor is not target-following
    const last = events.at(-1)!;
    expect(events.filter((e) => e.seq === r.seq)).toHaveLength(1);
    expect(last.removed.map((x) => [x.handle, x.reason])).toEqual([
      [claim.handle, "retracted"],
      [endorse.handle, "cascade"],
      [endorseEndorse.handle, "cascade"],
    ]);
  });

  it("the cascade also runs for an edit's removes", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxAtlas CxSpeechActs)", "CxUniverse");
    const q = await kb.assert("(queries AgentAtlas WhichDb)", "CxAtlas");
    const a = await kb.assert(`(answers AgentBoreas Postgres (sentexHandle ${q.handle}))`, "CxAtlas");
    const r = await kb.edit({ add: [{ sentence: "(note X)", context: "CxAtlas" }], remove: [q.handle] });
    expect(r.removed).toEqual([q.handle, a.handle]);
    expect(kb.sentex(a.handle)).toBeUndefined();
  });

  it("the cascade follows the mark wherever the meta-sentex is stored", async () => {
    const kb = await freshKb();
    const claim = await kb.assert("(usesDatabase Prod Postgres)", "CxLoose");
    // CxLoose does not see CxSpeechActs; the cascade reads the mark globally (reference §2.5).
    const e = await kb.assert(`(endorses AgentAtlas (sentexHandle ${claim.handle}))`, "CxLoose");
    await kb.retract(claim.handle);
    expect(kb.sentex(e.handle)).toBeUndefined();
  });

  it("a target-following meta-sentex naming a handle that is not stored is refused dangling-target", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxAtlas CxSpeechActs)", "CxUniverse");
    const before = kb.headSeq;
    expect((await refusal(() => kb.assert("(endorses AgentAtlas (sentexHandle 987654))", "CxAtlas"))).type).toBe("dangling-target");
    const c = await kb.assert("(usesDatabase Prod Postgres)", "CxAtlas");
    await kb.retract(c.handle);
    expect((await refusal(() => kb.assert(`(endorses AgentAtlas (sentexHandle ${c.handle}))`, "CxAtlas"))).type).toBe("dangling-target");
    expect(kb.headSeq).toBe(before + 2);
  });
});

describe("edit", () => {
  it("one bad entry refuses the whole batch: nothing stored, headSeq unchanged", async () => {
    const kb = await freshKb();
    const events = recordEvents(kb);
    const keep = await kb.assert("(dog Muffet)", "CxPets");
    const head = kb.headSeq;
    const size = kb.size;
    const e = await refusal(() =>
      kb.edit({
        add: [
          { sentence: "(cat Tom)", context: "CxPets" },
          { sentence: "(cat ?x)", context: "CxPets" },
          { sentence: "(cat Felix)", context: "CxPets" },
        ],
        remove: [keep.handle],
      }),
    );
    expect(e.type).toBe("inadmissible");
    expect(e.problems).toEqual([{ type: "not-ground", error: expect.any(String), in: "add", index: 1 }]);
    expect({ head: kb.headSeq, size: kb.size }).toEqual({ head, size });
    expect(kb.sentex(keep.handle)?.believed).toBe(true);
    expect(kb.match("(cat ?x)", "CxPets")).toEqual([]);
    expect(events.map((x) => x.seq)).toEqual([keep.seq]);
  });

  it("adds land before removes and the batch is one seq and one event", async () => {
    const kb = await freshKb();
    const events = recordEvents(kb);
    const old = await kb.assert("(trust AgentAva 1)", "CxPets");
    const r = await kb.edit({
      add: [
        { sentence: "(trust AgentAva 2)", context: "CxPets" },
        { sentence: "(trust AgentBen 3)", context: "CxPets" },
      ],
      remove: [old.handle],
    });
    expect(r.seq).toBe(old.seq + 1);
    expect(r.added).toHaveLength(2);
    expect(r.removed).toEqual([old.handle]);
    expect(kb.headSeq).toBe(r.seq);
    expect(events.filter((e) => e.seq === r.seq)).toHaveLength(1);
    const ev = events.at(-1)!;
    expect(ev.added.map((x) => x.sentence)).toEqual(["(trust AgentAva 2)", "(trust AgentBen 3)"]);
    expect(ev.removed.map((x) => [x.sentence, x.reason])).toEqual([["(trust AgentAva 1)", "retracted"]]);
    for (const h of r.added) expect(kb.sentex(h)!.seq).toBe(r.seq);
  });

  it("a conclusion removed and re-derived in one batch never flickers out of belief", async () => {
    const kb = await freshKb();
    await kb.assert("(implies (dog ?x) (animal ?x))", "CxPets");
    const a = await kb.assert("(dog Muffet)", "CxPets");
    const events = recordEvents(kb);
    // The same conclusion, re-derived from a fact in a context CxPets comes to see in this batch.
    await kb.edit({ add: [{ sentence: "(dog Muffet)", context: "CxZoo" }, { sentence: "(genlCx CxPets CxZoo)", context: "CxUniverse" }], remove: [a.handle] });
    expect(kb.query("(animal Muffet)", "CxPets").solutions).toEqual([{}]);
    expect(removalsOf(events, "(animal Muffet)", "CxPets")).toEqual([]);
  });

  it("checkEdit reports every problem with type, in and index, and stores nothing", async () => {
    const kb = await freshKb();
    const head = kb.headSeq;
    const size = kb.size;
    const problems = kb.checkEdit({
      add: [
        { sentence: "(ok X)", context: "CxPets" },
        { sentence: "(p ?x)", context: "CxPets" },
        { sentence: "(Bad X)", context: "CxPets" },
        { sentence: "(p X", context: "CxPets" },
        { sentence: "(p X)", context: "pets" },
        { sentence: "(comment X)", context: "CxPets" },
        { sentence: "(implies (p ?x) (q ?y))", context: "CxPets" },
      ],
      remove: [123_456_789, "seven" as never],
    });
    expect(problems.map((p) => [p.in, p.index, p.type])).toEqual([
      ["remove", 0, "unknown-handle"],
      ["remove", 1, "bad-request"],
      ["add", 1, "not-ground"],
      ["add", 2, "naming"],
      ["add", 3, "parse-error"],
      ["add", 4, "naming"],
      ["add", 5, "arity"],
      ["add", 6, "not-range-restricted"],
    ]);
    for (const p of problems) expect(p.error.length).toBeGreaterThan(0);
    expect({ head: kb.headSeq, size: kb.size }).toEqual({ head, size });
    expect(kb.checkEdit({ add: [{ sentence: "(ok X)", context: "CxPets" }] })).toEqual([]);
    expect(kb.match("(ok X)", "CxPets")).toEqual([]);
  });
});

describe("vocabulary the engine enforces", () => {
  it("naming: contexts are Cx + CapitalCamelCase and predicates start lower-case", async () => {
    const kb = await freshKb();
    expect((await refusal(() => kb.assert("(dog Muffet)", "Pets"))).type).toBe("naming");
    expect((await refusal(() => kb.assert("(dog Muffet)", "Cxpets"))).type).toBe("naming");
    expect((await refusal(() => kb.assert("(Dog Muffet)", "CxPets"))).type).toBe("naming");
    expect((await refusal(() => kb.assert("(genlCx CxA pets)", "CxUniverse"))).type).toBe("naming");
  });

  it("a stored fact must be ground (not-ground), a rule need not be", async () => {
    const kb = await freshKb();
    expect((await refusal(() => kb.assert("(dog ?x)", "CxPets"))).type).toBe("not-ground");
    expect((await refusal(() => kb.assert("(not (dog ?x))", "CxPets"))).type).toBe("not-ground");
    expect((await kb.assert("(implies (dog ?x) (animal ?x))", "CxPets")).created).toBe(true);
  });

  it("sentence shapes that are not literals or rules are refused with shape", async () => {
    const kb = await freshKb();
    for (const s of ["Muffet", "(and (p X) (q X))", "(not (p X) (q X))", "((p) X)", '("p" X)', "(unknown (p X))"]) {
      expect((await refusal(() => kb.assert(s, "CxPets"))).type, s).toBe("shape");
    }
  });

  it("arity: a fact whose argument count differs from a declaration the context sees is refused", async () => {
    const kb = await freshKb();
    expect((await refusal(() => kb.assert("(comment X)", "CxPets"))).type).toBe("arity");
    await kb.assert("(arity likes 2)", "CxPets");
    expect((await refusal(() => kb.assert("(likes A B C)", "CxPets"))).type).toBe("arity");
    expect((await kb.assert("(likes A B)", "CxPets")).created).toBe(true);
    // CxZoo does not see CxPets: the declaration does not bind there.
    expect((await kb.assert("(likes A B C)", "CxZoo")).created).toBe(true);
    // A rule whose antecedent or consequent breaks a declared arity is refused too.
    expect((await refusal(() => kb.assert("(implies (likes ?a) (fan ?a))", "CxPets"))).type).toBe("arity");
  });

  it("functional: a second non-symbol value is refused, and replacing it in one edit is allowed", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxAdmin CxRegistry)", "CxUniverse");
    const t1 = await kb.assert("(trustLevel AgentAva 1)", "CxAdmin");
    const head = kb.headSeq;
    expect((await refusal(() => kb.assert("(trustLevel AgentAva 2)", "CxAdmin"))).type).toBe("functional");
    expect((await refusal(() => kb.assert('(trustLevel AgentAva "2")', "CxAdmin"))).type).toBe("functional");
    expect(kb.headSeq).toBe(head);
    // Same value again is the same sentex; another first argument is free.
    expect((await kb.assert("(trustLevel AgentAva 1)", "CxAdmin")).created).toBe(false);
    await kb.assert("(trustLevel AgentBen 5)", "CxAdmin");
    // Two values for one key in one batch are refused.
    const twice = await refusal(() => kb.edit({ add: [{ sentence: "(trustLevel AgentCy 1)", context: "CxAdmin" }, { sentence: "(trustLevel AgentCy 2)", context: "CxAdmin" }] }));
    expect(twice.problems).toMatchObject([{ type: "functional", in: "add", index: 1 }]);
    // Replace in one edit: remove the old value and add the new one.
    const r = await kb.edit({ add: [{ sentence: "(trustLevel AgentAva 2)", context: "CxAdmin" }], remove: [t1.handle] });
    expect(kb.query("(trustLevel AgentAva ?n)", "CxAdmin").solutions).toEqual([{ "?n": "2" }]);
    expect(r.removed).toEqual([t1.handle]);
  });

  it("functional: symbol values are not refused, and the mark only binds where it is seen", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxAdmin CxRegistry)", "CxUniverse");
    await kb.assert("(trustLevel AgentAva High)", "CxAdmin");
    expect((await kb.assert("(trustLevel AgentAva Top)", "CxAdmin")).created).toBe(true);
    await kb.assert("(trustLevel AgentAva 1)", "CxElsewhere");
    expect((await kb.assert("(trustLevel AgentAva 2)", "CxElsewhere")).created).toBe(true);
  });
});

describe("reopen", () => {
  it("a KB holding more conclusions than one write may derive (maxDerivations) reopens with every one of them", async () => {
    const path = join(tempDir(), "kb.db");
    const limits = { maxDerivations: 3 };
    const kb = await openKb({ path, contextsDir: CONTEXTS_DIR, limits });
    await kb.assert("(implies (p ?x) (q ?x))", "CxLimits");
    for (const x of ["A", "B", "C", "D", "E"]) expect((await kb.assert(`(p ${x})`, "CxLimits")).bounded).toBeUndefined(); // one conclusion each
    const before = believed(kb);
    await kb.close();
    const again = await openKb({ path, limits });
    expect(believed(again)).toEqual(before);
    expect(again.match("(q ?x)", "CxLimits")).toHaveLength(5);
    await again.close();
    const third = await openKb({ path, limits }); // nothing was deleted from the store either
    expect(believed(third)).toEqual(before);
    await third.close();
  });

  it("a KB using more relations than the row engine's first span (1 024) stores, derives and reopens them all", async () => {
    const path = join(tempDir(), "kb.db");
    const kb = await openKb({ path, contextsDir: CONTEXTS_DIR });
    const preds = Array.from({ length: 1_200 }, (_, i) => `p${i}`);
    await kb.assert("(implies (p1199 ?x) (q1199 ?x))", "CxWide");
    await kb.edit({ add: preds.map((p) => ({ sentence: `(${p} A)`, context: "CxWide" })) });
    for (const p of ["p0", "p1023", "p1199", "q1199"]) expect(kb.match(`(${p} A)`, "CxWide")).toHaveLength(1);
    const before = believed(kb);
    await kb.close();
    const again = await openKb({ path });
    expect(believed(again)).toEqual(before);
    await again.close();
  });

  it("the engine rebuilt from the store believes the same set", async () => {
    const dir = tempDir();
    const path = join(dir, "kb.db");
    const kb = await openKb({ path, contextsDir: CONTEXTS_DIR });
    await kb.assert("(genlCx CxAva CxApartment)", "CxUniverse");
    await kb.assert("(implies (and (edge ?x ?y)) (reach ?x ?y))", "CxApartment");
    await kb.assert("(implies (and (edge ?x ?y) (reach ?y ?z)) (reach ?x ?z))", "CxApartment");
    for (let i = 0; i < 5; i++) await kb.assert(`(edge N${i} N${i + 1})`, "CxAva");
    await kb.assert("(quiet Evening)", "CxAva");
    await kb.assert("(not (quiet Evening))", "CxApartment", { strength: "monotonic" });
    await kb.assert("(p X)", "CxAva");
    await kb.assert("(not (p X))", "CxApartment");
    const gone = await kb.assert("(edge N9 N0)", "CxAva");
    await kb.retract(gone.handle);
    const beforeBelief = believed(kb);
    const beforeHandles = [...kb.engine.index.byHandle.keys()].sort((a, b) => a - b);
    const head = kb.headSeq;
    await kb.close();
    const again = await openKb({ path });
    expect(believed(again)).toEqual(beforeBelief);
    expect([...again.engine.index.byHandle.keys()].sort((a, b) => a - b)).toEqual(beforeHandles);
    expect(again.headSeq).toBe(head);
    expect(again.contradictions("CxAva").contradictions).toHaveLength(1);
    expect(stored(again)).toContain("CxAva|(quiet Evening)|out"); // defeated, kept stored
    await again.close();
  });

  it("an edit of 130 entries (two 64-row INSERTs and two single ones) reopens with every row as written", async () => {
    const path = join(tempDir(), "kb.db");
    let clock = 5_000;
    const kb = await openKb({ path, durability: "normal", now: () => clock++ });
    await kb.assert("(dog Muffet)", "CxPets");
    const add = Array.from({ length: 130 }, (_, i) => ({ sentence: `(rel E${i} V${i})`, context: i % 2 ? "CxPets" : "CxZoo", strength: i % 3 ? ("default" as const) : ("monotonic" as const) }));
    const out = await kb.edit({ add });
    const rows = (k: typeof kb) => out.added.map((h) => k.sentex(h));
    const before = rows(kb);
    expect(before.every((r) => r !== undefined)).toBe(true);
    await kb.close();
    const again = await openKb({ path, durability: "normal" });
    expect(rows(again)).toEqual(before);
    await again.close();
  });

  it("handles are never reused across restarts", async () => {
    const path = join(tempDir(), "kb.db");
    const kb = await openKb({ path });
    const a = await kb.assert("(dog Muffet)", "CxPets");
    const b = await kb.assert("(dog Rex)", "CxPets");
    await kb.retract(b.handle);
    await kb.close();
    const again = await openKb({ path });
    const c = await again.assert("(dog Fido)", "CxPets");
    expect(c.handle).toBeGreaterThan(Math.max(a.handle, b.handle));
    expect(c.seq).toBeGreaterThan(a.seq);
    await again.retract(c.handle);
    await again.close();
    const third = await openKb({ path });
    const d = await third.assert("(dog Fido)", "CxPets");
    expect(d.handle).toBeGreaterThan(c.handle);
    await third.close();
  });

  it("a closed KB refuses writes with closed", async () => {
    const kb = await openKb({ path: join(tempDir(), "kb.db") });
    await kb.close();
    expect((await refusal(() => kb.assert("(dog Muffet)", "CxPets"))).type).toBe("closed");
  });
});
