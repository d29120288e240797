import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadContextFile, splitSentences } from "../../src/kb/index.js";
import { CONTEXTS_DIR, believed, freshKb, recordEvents, refusal, removalsOf, stored, tempDir } from "./helpers.js";

describe("contexts and cones", () => {
  it("a genlCx edge is stored in CxUniverse at monotonic strength whatever context it was asserted in", async () => {
    const kb = await freshKb();
    const r = await kb.assert("(genlCx CxA CxB)", "CxA");
    expect(kb.sentex(r.handle)).toMatchObject({ context: "CxUniverse", strength: "monotonic" });
    expect((await kb.assert("(genlCx CxA CxB)", "CxB")).handle).toBe(r.handle);
    expect((await refusal(() => kb.assert("(not (genlCx CxA CxB))", "CxUniverse"))).type).toBe("shape");
  });

  it("the cone is reflexive-transitive and always holds CxCore", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxA CxB)", "CxUniverse");
    await kb.assert("(genlCx CxB CxC)", "CxUniverse");
    expect([...kb.cone("CxA")].sort()).toEqual(["CxA", "CxB", "CxC", "CxCore"]);
    expect([...kb.cone("CxC")].sort()).toEqual(["CxC", "CxCore"]);
    expect(kb.sees("CxA", "CxC")).toBe(true);
    expect(kb.sees("CxC", "CxA")).toBe(false);
    expect(kb.sees("CxLonely", "CxCore")).toBe(true);
  });

  it("cycles are allowed: every member of a cycle sees every other", async () => {
    const kb = await freshKb();
    for (const [a, b] of [["CxA", "CxB"], ["CxB", "CxC"], ["CxC", "CxA"]]) await kb.assert(`(genlCx ${a} ${b})`, "CxUniverse");
    for (const c of ["CxA", "CxB", "CxC"]) expect([...kb.cone(c)].sort()).toEqual(["CxA", "CxB", "CxC", "CxCore"]);
    await kb.assert("(p X)", "CxC");
    expect(kb.query("(p X)", "CxB").solutions).toEqual([{}]);
  });

  it("the cone is correct after adding and after retracting an edge", async () => {
    const kb = await freshKb();
    await kb.assert("(fact Here)", "CxC");
    const ab = await kb.assert("(genlCx CxA CxB)", "CxUniverse");
    expect(kb.query("(fact ?x)", "CxA").solutions).toEqual([]);
    const bc = await kb.assert("(genlCx CxB CxC)", "CxUniverse");
    expect(kb.query("(fact ?x)", "CxA").solutions).toEqual([{ "?x": "Here" }]);
    await kb.retract(bc.handle);
    expect([...kb.cone("CxA")].sort()).toEqual(["CxA", "CxB", "CxCore"]);
    expect(kb.query("(fact ?x)", "CxA").solutions).toEqual([]);
    await kb.retract(ab.handle);
    expect([...kb.cone("CxA")].sort()).toEqual(["CxA", "CxCore"]);
    await kb.assert("(genlCx CxA CxC)", "CxUniverse");
    expect(kb.query("(fact ?x)", "CxA").solutions).toEqual([{ "?x": "Here" }]);
  });
});

describe("match and query", () => {
  it("match reads one context exactly and ?ctx reads every context; query reads the cone", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxTeam CxAva)", "CxUniverse");
    await kb.assert("(likes Ava Tea)", "CxAva");
    await kb.assert("(likes Ben Coffee)", "CxTeam");
    await kb.assert("(likes Cy Milk)", "CxOther");
    expect(kb.match("(likes ?w ?d)", "CxTeam").map((r) => r.sentence)).toEqual(["(likes Ben Coffee)"]);
    expect(kb.match("(likes ?w ?d)", "?ctx").map((r) => r.sentence)).toEqual(["(likes Ava Tea)", "(likes Ben Coffee)", "(likes Cy Milk)"]);
    expect(kb.query("(likes ?w ?d)", "CxTeam").solutions).toEqual(
      expect.arrayContaining([{ "?w": "Ava", "?d": "Tea" }, { "?w": "Ben", "?d": "Coffee" }]),
    );
    expect(kb.query("(likes ?w ?d)", "CxTeam").solutions).toHaveLength(2);
    expect(kb.query("(likes ?w ?d)", "CxAva").solutions).toEqual([{ "?w": "Ava", "?d": "Tea" }]);
  });

  it("every context's query sees CxCore", async () => {
    const kb = await freshKb();
    expect(kb.query("(targetFollowingPredicate answers)", "CxNowhere").solutions).toEqual([]);
    expect(kb.query("(functional ?p)", "CxNowhere").solutions).toEqual([]);
    expect(kb.query("(binaryPredicate comment)", "CxNowhere").solutions).toEqual([{}]);
  });

  it("a conjunction joins its goals and binds shared variables", async () => {
    const kb = await freshKb();
    await kb.assert("(parent Ann Bob)", "CxFam");
    await kb.assert("(parent Bob Cat)", "CxFam");
    await kb.assert("(parent Bob Dan)", "CxFam");
    expect(kb.query("(and (parent ?g ?p) (parent ?p ?c))", "CxFam").solutions).toEqual([
      { "?g": "Ann", "?p": "Bob", "?c": "Cat" },
      { "?g": "Ann", "?p": "Bob", "?c": "Dan" },
    ]);
  });

  it("(not S) matches stored negations only, never absence", async () => {
    const kb = await freshKb();
    await kb.assert("(dog Muffet)", "CxPets");
    await kb.assert("(not (dog Tom))", "CxPets");
    expect(kb.query("(not (dog ?x))", "CxPets").solutions).toEqual([{ "?x": "Tom" }]);
    expect(kb.query("(not (dog Rex))", "CxPets").solutions).toEqual([]);
    expect(kb.match("(not (dog ?x))", "CxPets").map((r) => r.truth)).toEqual(["false"]);
  });

  it("(unknown G) is negation as failure under the current bindings", async () => {
    const kb = await freshKb();
    for (const s of ["(pet Muffet)", "(pet Tom)", "(pet Rex)", "(vaccinated Muffet)"]) await kb.assert(s, "CxPets");
    const r = kb.query("(and (pet ?x) (unknown (vaccinated ?x)))", "CxPets").solutions.map((b) => b["?x"]).sort();
    expect(r).toEqual(["Rex", "Tom"]);
    expect(kb.query("(unknown (pet Nobody))", "CxPets").solutions).toEqual([{}]);
    expect(kb.query("(unknown (pet Tom))", "CxPets").solutions).toEqual([]);
  });

  it("a limit caps the solutions and reports truncated", async () => {
    const kb = await freshKb();
    for (let i = 0; i < 10; i++) await kb.assert(`(n I${i})`, "CxNums");
    expect(kb.query("(n ?x)", "CxNums", { limit: 3 })).toMatchObject({ truncated: true, solutions: { length: 3 } });
    expect(kb.query("(n ?x)", "CxNums", { limit: 10 })).toMatchObject({ truncated: false, solutions: { length: 10 } });
    expect(kb.query("(n ?x)", "CxNums", { limit: 0 })).toEqual({ truncated: true, solutions: [] });
  });

  it("reads refuse bad goals and bad contexts with typed errors", async () => {
    const kb = await freshKb();
    expect((await refusal(() => kb.query("(p ?x", "CxA"))).type).toBe("parse-error");
    expect((await refusal(() => kb.query("(p ?x)", "pets"))).type).toBe("naming");
    expect((await refusal(() => kb.query("(and)", "CxA"))).type).toBe("shape");
  });

  it("reads see believed sentexes only", async () => {
    const kb = await freshKb();
    await kb.assert("(open Door)", "CxHouse");
    await kb.assert("(not (open Door))", "CxHouse", { strength: "monotonic" });
    expect(kb.query("(open Door)", "CxHouse").solutions).toEqual([]);
    expect(kb.match("(open Door)", "CxHouse")).toEqual([]);
    expect(stored(kb)).toContain("CxHouse|(open Door)|out");
  });
});

describe("the contexts/*.kb loader", () => {
  it("splits sentences, skips ; comments and respects strings", () => {
    expect(splitSentences('; a comment (not a sentence)\n(p X) ; trailing\n(q "a ; b (c")\n\n(r)')).toEqual(["(p X)", '(q "a ; b (c")', "(r)"]);
    expect(() => splitSentences("(p X")).toThrowError(expect.objectContaining({ type: "parse-error" }));
    expect(() => splitSentences("stray (p X)")).toThrowError(expect.objectContaining({ type: "parse-error" }));
  });

  it("the file name is the context", async () => {
    const kb = await freshKb({ contextsDir: undefined });
    const dir = tempDir();
    writeFileSync(join(dir, "CxHouseRules.kb"), "; house rules\n(quietAfter Ten)\n");
    await loadContextFile(kb, join(dir, "CxHouseRules.kb"));
    expect(kb.match("(quietAfter ?t)", "CxHouseRules").map((r) => r.sentence)).toEqual(["(quietAfter Ten)"]);
  });

  it("the shipped contexts load, and loading them again stores nothing new", async () => {
    const kb = await freshKb();
    expect(kb.query("(targetFollowingPredicate answers)", "CxSpeechActs").solutions).toEqual([{}]);
    expect(kb.match("(genlCx ?a ?b)", "CxUniverse").length).toBeGreaterThanOrEqual(4);
    const head = kb.headSeq;
    const size = kb.size;
    const { loadContextsDir } = await import("../../src/kb/index.js");
    expect(await loadContextsDir(kb, CONTEXTS_DIR)).toBe(0);
    expect({ head: kb.headSeq, size: kb.size }).toEqual({ head, size });
  });

  it("loading is order-insensitive: a use before its declaration loads, as the reverse order does", async () => {
    const lines = ["(likes Ava Tea)", "(implies (likes ?a ?d) (drinks ?a ?d))", "(binaryPredicate likes)", "(comment likes \"(likes A D): A likes drink D.\")"];
    const dir = tempDir();
    const results: string[][] = [];
    for (const order of [lines, [...lines].reverse()]) {
      const kb = await freshKb({ contextsDir: undefined });
      writeFileSync(join(dir, "CxDrinks.kb"), order.join("\n"));
      await loadContextFile(kb, join(dir, "CxDrinks.kb"));
      results.push(believed(kb));
    }
    expect(results[0]).toContain("CxDrinks|(drinks Ava Tea)|default");
    expect(results[0]).toEqual(results[1]);
  });

  it("a sentence refused until a later one of the same file lands is retried and loads", async () => {
    const kb = await freshKb({ contextsDir: undefined });
    const mark = await kb.assert("(targetFollowingPredicate endorses)", "CxCore");
    const dir = tempDir();
    // The endorsement names the handle the claim below will take: refused on the first round
    // (dangling-target), stored on the second.
    writeFileSync(join(dir, "CxClaims.kb"), `(endorses AgentAva (sentexHandle ${mark.handle + 1}))\n(claim Postgres)\n`);
    expect(await loadContextFile(kb, join(dir, "CxClaims.kb"))).toBe(2);
    expect(kb.match("(endorses ?a ?t)", "CxClaims")).toHaveLength(1);
    expect(kb.match("(claim Postgres)", "CxClaims")[0]!.handle).toBe(mark.handle + 1);
  });

  it("a sentence that stays refused is thrown with its file and index", async () => {
    const kb = await freshKb({ contextsDir: undefined });
    const dir = tempDir();
    writeFileSync(join(dir, "CxBad.kb"), "(ok X)\n(bad ?x)\n");
    const e = await refusal(() => loadContextFile(kb, join(dir, "CxBad.kb")));
    expect(e.type).toBe("not-ground");
    expect(e.message).toContain("CxBad.kb sentence 2");
  });
});

describe("clash classes (reference §1.6)", () => {
  it("default against default: both stay believed and the pair is listed as a contradiction", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxRoom CxAva)", "CxUniverse");
    await kb.assert("(genlCx CxRoom CxBen)", "CxUniverse");
    const p = await kb.assert("(tidy Kitchen)", "CxAva");
    const n = await kb.assert("(not (tidy Kitchen))", "CxBen");
    expect([kb.sentex(p.handle)!.believed, kb.sentex(n.handle)!.believed]).toEqual([true, true]);
    const { contradictions, conflicts } = kb.contradictions("CxRoom");
    expect(conflicts).toEqual([]);
    expect(contradictions).toEqual([
      {
        id: `${p.handle}-${n.handle}`,
        kind: "contradiction",
        sides: [
          { handle: p.handle, sentence: "(tidy Kitchen)", context: "CxAva", strength: "default", derived: false },
          { handle: n.handle, sentence: "(not (tidy Kitchen))", context: "CxBen", strength: "default", derived: false },
        ],
      },
    ]);
    // Neither agent context sees the other: neither lists it.
    expect(kb.contradictions("CxAva").contradictions).toEqual([]);
  });

  it("monotonic defeats default: the loser stays stored, not believed, why says defeated", async () => {
    const kb = await freshKb();
    const events = recordEvents(kb);
    const weak = await kb.assert("(tidy Kitchen)", "CxHouse");
    const strong = await kb.assert("(not (tidy Kitchen))", "CxHouse", { strength: "monotonic" });
    expect(kb.sentex(weak.handle)).toMatchObject({ believed: false, strength: "default" });
    expect(kb.why(weak.handle)).toMatchObject({ believed: false, premise: true, reason: "defeated" });
    expect(kb.contradictions("CxHouse")).toEqual({ contradictions: [], conflicts: [] });
    expect(removalsOf(events, "(tidy Kitchen)", "CxHouse")).toEqual(["defeated"]);
    // Revived when the winner is retracted.
    await kb.retract(strong.handle);
    expect(kb.sentex(weak.handle)!.believed).toBe(true);
    expect(events.at(-1)!.added.map((r) => r.handle)).toEqual([weak.handle]);
  });

  it("a monotonic side asserted first still defeats a later default", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxRoom CxAva)", "CxUniverse");
    await kb.assert("(genlCx CxRoom CxBen)", "CxUniverse");
    await kb.assert("(tidy Kitchen)", "CxAva", { strength: "monotonic" });
    const weak = await kb.assert("(not (tidy Kitchen))", "CxBen");
    expect(kb.sentex(weak.handle)!.believed).toBe(false);
    // Upgrading the loser to monotonic turns the pair into a conflict.
    await kb.assert("(not (tidy Kitchen))", "CxBen", { strength: "monotonic" });
    expect(kb.sentex(weak.handle)!.believed).toBe(true);
    const { contradictions, conflicts } = kb.contradictions("CxRoom");
    expect(contradictions).toEqual([]);
    expect(conflicts.map((c) => [c.kind, c.sides.map((s) => s.strength)])).toEqual([["conflict", ["monotonic", "monotonic"]]]);
  });

  it("no clash between two contexts that no context sees together", async () => {
    const kb = await freshKb();
    const p = await kb.assert("(tidy Kitchen)", "CxAva", { strength: "monotonic" });
    const n = await kb.assert("(not (tidy Kitchen))", "CxBen");
    expect(kb.sentex(n.handle)!.believed).toBe(true);
    expect(kb.sentex(p.handle)!.believed).toBe(true);
    for (const c of ["CxAva", "CxBen", "CxUniverse", "CxCore"]) expect(kb.contradictions(c)).toEqual({ contradictions: [], conflicts: [] });
    // Once some context sees both, the monotonic side defeats the default one.
    await kb.assert("(genlCx CxRoom CxAva)", "CxUniverse");
    await kb.assert("(genlCx CxRoom CxBen)", "CxUniverse");
    expect(kb.sentex(n.handle)!.believed).toBe(false);
  });

  it("a defeat through an edge is undone when the edge is retracted", async () => {
    const kb = await freshKb();
    await kb.assert("(tidy Kitchen)", "CxAva", { strength: "monotonic" });
    const n = await kb.assert("(not (tidy Kitchen))", "CxBen");
    const edge = await kb.assert("(genlCx CxBen CxAva)", "CxUniverse");
    expect(kb.sentex(n.handle)!.believed).toBe(false);
    await kb.retract(edge.handle);
    expect(kb.sentex(n.handle)!.believed).toBe(true);
    expect(believed(kb)).toContain("CxBen|(not (tidy Kitchen))|default");
  });

  it("a context that sees only one side lists nothing", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxRoom CxAva)", "CxUniverse");
    await kb.assert("(genlCx CxRoom CxBen)", "CxUniverse");
    await kb.assert("(tidy Kitchen)", "CxAva");
    await kb.assert("(not (tidy Kitchen))", "CxBen");
    expect(kb.contradictions("CxAva").contradictions).toEqual([]);
    expect(kb.contradictions("CxRoom").contradictions).toHaveLength(1);
  });
});

// Keep the loader's input honest: the shipped files parse as sentences.
it("every shipped .kb file splits into sentences that parse", () => {
  for (const f of ["CxCore", "CxSpeechActs", "CxRegistry", "CxDisputes", "CxUniverse"]) {
    expect(splitSentences(readFileSync(join(CONTEXTS_DIR, `${f}.kb`), "utf8")).length).toBeGreaterThan(0);
  }
});
