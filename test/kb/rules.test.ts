import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadContextFile, openKb } from "../../src/kb/index.js";
import { believed, CONTEXTS_DIR, freshKb, handleOf, recordEvents, refusal, removalsOf, stored, tempDir } from "./helpers.js";

const BASE = "(implies (edge ?x ?y) (reach ?x ?y))";
const STEP = "(implies (and (edge ?x ?y) (reach ?y ?z)) (reach ?x ?z))";

/** The transitive closure of a set of edges, as "(reach A B)" sentences. */
function closure(edges: readonly [string, string][]): string[] {
  const out = new Set<string>();
  const reach = new Map<string, Set<string>>();
  for (const [a, b] of edges) {
    if (!reach.has(a)) reach.set(a, new Set());
    reach.get(a)!.add(b);
  }
  for (const a of reach.keys()) {
    const seen = new Set<string>();
    const stack = [...reach.get(a)!];
    while (stack.length) {
      const n = stack.pop()!;
      if (seen.has(n)) continue;
      seen.add(n);
      out.add(`(reach ${a} ${n})`);
      for (const m of reach.get(n) ?? []) stack.push(m);
    }
  }
  return [...out].sort();
}

const reachIn = (kb: Awaited<ReturnType<typeof freshKb>>, ctx: string) => kb.match("(reach ?a ?b)", ctx).map((r) => r.sentence).sort();

describe("rules as knowledge", () => {
  it("a rule is a sentex with its own handle, and retracting it removes what rested only on it", async () => {
    const kb = await freshKb();
    const events = recordEvents(kb);
    const rule = await kb.assert("(implies (dog ?x) (animal ?x))", "CxPets");
    expect(kb.sentex(rule.handle)).toMatchObject({ sentence: "(implies (dog ?x) (animal ?x))", derived: false, believed: true });
    await kb.assert("(dog Muffet)", "CxPets");
    const animal = kb.match("(animal Muffet)", "CxPets")[0]!;
    expect(animal).toMatchObject({ derived: true, believed: true, creator: null });
    const r = await kb.retract(rule.handle);
    expect(r.removed).toEqual([rule.handle, animal.handle]);
    expect(kb.sentex(animal.handle)).toBeUndefined();
    expect(events.at(-1)!.removed.map((x) => [x.sentence, x.reason])).toEqual([
      ["(implies (dog ?x) (animal ?x))", "retracted"],
      ["(animal Muffet)", "unsupported"],
    ]);
    expect(kb.why(animal.handle)).toMatchObject({ believed: false, reason: "unsupported" });
  });

  it("a rule with and, or a single antecedent without and, is one and the same kind of sentex", async () => {
    const kb = await freshKb();
    const a = await kb.assert("(implies (and (dog ?x)) (animal ?x))", "CxPets");
    const b = await kb.assert("(implies (dog ?x) (animal ?x))", "CxPets");
    expect(a.handle).not.toBe(b.handle); // different canonical text, two rules
    await kb.assert("(dog Muffet)", "CxPets");
    const h = handleOf(kb, "(animal Muffet)", "CxPets")!;
    expect(kb.why(h).support.map((s) => s.rule).sort()).toEqual([a.handle, b.handle].sort());
  });

  it("a rule loads from a .kb file and fires on the file's facts", async () => {
    const kb = await freshKb();
    const dir = tempDir();
    writeFileSync(join(dir, "CxHouse.kb"), `; house rules\n(late Ben)\n(implies (and (late ?p)) (owesChores ?p))\n`);
    await loadContextFile(kb, join(dir, "CxHouse.kb"));
    expect(kb.query("(owesChores ?p)", "CxHouse").solutions).toEqual([{ "?p": "Ben" }]);
  });

  it("a rule whose consequent variable no antecedent binds is refused not-range-restricted", async () => {
    const kb = await freshKb();
    const head = kb.headSeq;
    expect((await refusal(() => kb.assert("(implies (dog ?x) (owner ?x ?y))", "CxPets"))).type).toBe("not-range-restricted");
    expect((await refusal(() => kb.assert("(implies (and (dog ?x) (not (cat ?y))) (odd ?x))", "CxPets"))).type).toBe("not-range-restricted");
    expect((await refusal(() => kb.assert("(implies (not (cat ?x)) (dog ?x))", "CxPets"))).type).toBe("shape");
    expect((await refusal(() => kb.assert("(implies (p ?x) (genlCx ?x CxA))", "CxPets"))).type).toBe("shape");
    expect(kb.headSeq).toBe(head);
  });

  it("a negative consequent derives a stored negation that (not S) reads", async () => {
    const kb = await freshKb();
    await kb.assert("(implies (penguin ?x) (not (flies ?x)))", "CxBirds");
    await kb.assert("(penguin Pingu)", "CxBirds");
    const [n] = kb.match("(not (flies ?x))", "CxBirds");
    expect(n).toMatchObject({ sentence: "(not (flies Pingu))", truth: "false", derived: true });
    expect(kb.query("(not (flies ?x))", "CxBirds").solutions).toEqual([{ "?x": "Pingu" }]);
  });

  it("a negative antecedent matches stored negations", async () => {
    const kb = await freshKb();
    await kb.assert("(implies (and (bird ?x) (not (flies ?x))) (walks ?x))", "CxBirds");
    await kb.assert("(bird Pingu)", "CxBirds");
    await kb.assert("(bird Tweety)", "CxBirds");
    expect(kb.query("(walks ?x)", "CxBirds").solutions).toEqual([]);
    await kb.assert("(not (flies Pingu))", "CxBirds");
    expect(kb.query("(walks ?x)", "CxBirds").solutions).toEqual([{ "?x": "Pingu" }]);
  });
});

describe("forward chaining", () => {
  it("a transitive closure grows correctly as edges arrive one at a time", async () => {
    const kb = await freshKb();
    await kb.assert(BASE, "CxG");
    await kb.assert(STEP, "CxG");
    const edges: [string, string][] = [["C", "D"], ["A", "B"], ["D", "E"], ["B", "C"], ["E", "B"], ["F", "A"]];
    const sofar: [string, string][] = [];
    for (const [a, b] of edges) {
      await kb.assert(`(edge ${a} ${b})`, "CxG");
      sofar.push([a, b]);
      expect(reachIn(kb, "CxG")).toEqual(closure(sofar));
    }
  });

  it("on a chain each derived reach fact has exactly one justification (no duplicate firings)", async () => {
    const kb = await freshKb();
    await kb.assert(BASE, "CxG");
    const step = await kb.assert(STEP, "CxG");
    for (let i = 5; i >= 0; i--) await kb.assert(`(edge N${i} N${i + 1})`, "CxG");
    for (let i = 0; i <= 5; i++) {
      for (let j = i + 2; j <= 6; j++) {
        const w = kb.why(handleOf(kb, `(reach N${i} N${j})`, "CxG")!);
        expect(w.support, `(reach N${i} N${j})`).toEqual([
          { rule: step.handle, antecedents: [handleOf(kb, `(edge N${i} N${i + 1})`, "CxG"), handleOf(kb, `(reach N${i + 1} N${j})`, "CxG")], edges: [] },
        ]);
      }
    }
  });

  it("retracting an edge in the middle of a chain removes exactly the reach facts that crossed it", async () => {
    const kb = await freshKb();
    await kb.assert(BASE, "CxG");
    await kb.assert(STEP, "CxG");
    const edges: [string, string][] = [];
    const handles: number[] = [];
    for (let i = 0; i < 6; i++) {
      edges.push([`N${i}`, `N${i + 1}`]);
      handles.push((await kb.assert(`(edge N${i} N${i + 1})`, "CxG")).handle);
    }
    await kb.retract(handles[3]!);
    expect(reachIn(kb, "CxG")).toEqual(closure(edges.filter((_, i) => i !== 3)));
    await kb.assert("(edge N3 N4)", "CxG");
    expect(reachIn(kb, "CxG")).toEqual(closure(edges));
  });

  it("a cycle terminates and derives every reach pair of the strongly connected part", async () => {
    const kb = await freshKb();
    await kb.assert(BASE, "CxG");
    await kb.assert(STEP, "CxG");
    const edges: [string, string][] = [["A", "B"], ["B", "C"], ["C", "A"]];
    for (const [a, b] of edges) await kb.assert(`(edge ${a} ${b})`, "CxG");
    expect(reachIn(kb, "CxG")).toEqual(closure(edges));
    expect(reachIn(kb, "CxG")).toHaveLength(9);
    // Breaking the cycle removes the self-supporting reach facts (well-founded support only).
    await kb.retract(handleOf(kb, "(edge C A)", "CxG")!);
    expect(reachIn(kb, "CxG")).toEqual(closure([["A", "B"], ["B", "C"]]));
  });

  it("maxDerivations is reported out loud in the result and the event, never a hang", async () => {
    const kb = await freshKb({ limits: { maxDerivations: 5 } });
    const events = recordEvents(kb);
    await kb.assert(BASE, "CxG");
    await kb.assert(STEP, "CxG");
    const edges = Array.from({ length: 8 }, (_, i) => ({ sentence: `(edge N${i} N${i + 1})`, context: "CxG" }));
    const r = await kb.edit({ add: edges });
    expect(r.bounded).toEqual({ limit: "maxDerivations", value: 5 });
    expect(events.at(-1)!.bounded).toEqual({ limit: "maxDerivations", value: 5 });
    expect(kb.match("(reach ?a ?b)", "CxG").length).toBeLessThanOrEqual(5);
    const one = await kb.assert("(edge M0 M1)", "CxG");
    expect(one.bounded).toBeUndefined();
  });

  it("maxDepth is reported out loud and stops the chain at that depth", async () => {
    const kb = await freshKb({ limits: { maxDepth: 3 } });
    await kb.assert("(implies (n ?x) (n (s ?x)))", "CxPeano");
    const r = await kb.assert("(n Z)", "CxPeano");
    expect(r.bounded).toEqual({ limit: "maxDepth", value: 3 });
    expect(kb.match("(n ?x)", "CxPeano").map((x) => x.sentence)).toEqual(["(n Z)", "(n (s Z))", "(n (s (s Z)))", "(n (s (s (s Z))))"]);
  });

  it("a conclusion's depth is its shortest derivation: a shorter one found later lets chains from it go on under maxDepth", async () => {
    const kb = await freshKb({ limits: { maxDepth: 3 } });
    await kb.assert("(implies (p ?x) (q ?x))", "CxD");
    await kb.assert("(implies (q ?x) (r ?x))", "CxD");
    await kb.assert("(implies (r ?x) (s ?x))", "CxD");
    await kb.assert("(p One)", "CxD"); // (s One) at depth 3, the limit
    await kb.assert("(implies (p ?x) (s ?x))", "CxD"); // a second derivation of (s One), at depth 1
    const r = await kb.assert("(implies (s ?x) (t ?x))", "CxD");
    expect(r.bounded).toBeUndefined();
    expect(kb.match("(t One)", "CxD")).toHaveLength(1);
  });
});

describe("justifications and support", () => {
  it("why lists the rule, the antecedents and the genlCx edges a firing crossed", async () => {
    const kb = await freshKb();
    const e1 = await kb.assert("(genlCx CxApartment CxAva)", "CxUniverse");
    const rule = await kb.assert("(implies (late ?p) (owesChores ?p))", "CxApartment");
    const late = await kb.assert("(late Ava)", "CxAva");
    const h = handleOf(kb, "(owesChores Ava)", "CxApartment")!;
    expect(kb.why(h)).toEqual({ believed: true, premise: false, strength: "default", support: [{ rule: rule.handle, antecedents: [late.handle], edges: [e1.handle] }] });
    expect(kb.why(late.handle)).toEqual({ believed: true, premise: true, strength: "default", support: [] });
  });

  it("a conclusion stays while another justification holds, and leaves as unsupported when none does", async () => {
    const kb = await freshKb();
    const events = recordEvents(kb);
    await kb.assert("(implies (cat ?x) (pet ?x))", "CxHome");
    await kb.assert("(implies (dog ?x) (pet ?x))", "CxHome");
    const cat = await kb.assert("(cat Tom)", "CxHome");
    const dog = await kb.assert("(dog Tom)", "CxHome");
    const pet = handleOf(kb, "(pet Tom)", "CxHome")!;
    expect(kb.why(pet).support).toHaveLength(2);
    await kb.retract(cat.handle);
    expect(kb.sentex(pet)).toMatchObject({ believed: true });
    expect(kb.why(pet).support.map((s) => s.antecedents)).toEqual([[dog.handle]]);
    expect(removalsOf(events, "(pet Tom)", "CxHome")).toEqual([]);
    await kb.retract(dog.handle);
    expect(kb.sentex(pet)).toBeUndefined();
    expect(removalsOf(events, "(pet Tom)", "CxHome")).toEqual(["unsupported"]);
    // Re-deriving it later mints a new handle (handles are never reused).
    await kb.assert("(cat Tom)", "CxHome");
    expect(handleOf(kb, "(pet Tom)", "CxHome")).toBeGreaterThan(pet);
  });

  it("a firing whose antecedent is defeated no longer supports its conclusion, and supports it again once the antecedent revives", async () => {
    const kb = await freshKb();
    await kb.assert("(implies (cat ?x) (pet ?x))", "CxHome");
    await kb.assert("(implies (dog ?x) (pet ?x))", "CxHome");
    const cat = await kb.assert("(cat Tom)", "CxHome");
    const dog = await kb.assert("(dog Tom)", "CxHome");
    const pet = handleOf(kb, "(pet Tom)", "CxHome")!;
    const notCat = await kb.assert("(not (cat Tom))", "CxHome", { strength: "monotonic" });
    expect(kb.sentex(cat.handle)).toMatchObject({ believed: false });
    expect(kb.sentex(pet)).toMatchObject({ believed: true });
    expect(kb.why(pet).support.map((s) => s.antecedents)).toEqual([[dog.handle]]);
    await kb.retract(notCat.handle);
    expect(kb.why(pet).support.map((s) => s.antecedents)).toEqual([[cat.handle], [dog.handle]]);
  });

  it("a derived sentex that is also asserted stays when its support goes, and goes when both go", async () => {
    const kb = await freshKb();
    await kb.assert("(implies (dog ?x) (animal ?x))", "CxPets");
    const dog = await kb.assert("(dog Rex)", "CxPets");
    const derived = handleOf(kb, "(animal Rex)", "CxPets")!;
    const asserted = await kb.assert("(animal Rex)", "CxPets");
    expect(asserted).toMatchObject({ handle: derived, created: false });
    expect(kb.sentex(derived)!.derived).toBe(false);
    await kb.retract(dog.handle);
    expect(kb.sentex(derived)).toMatchObject({ believed: true });
    await kb.assert("(dog Rex)", "CxPets");
    await kb.retract(derived);
    expect(kb.sentex(derived)).toMatchObject({ believed: true, derived: true }); // still derivable
  });
});

describe("placement", () => {
  it("a conclusion lands in the context that sees the rule and every matched fact", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxApartment CxAva)", "CxUniverse");
    await kb.assert("(genlCx CxApartment CxBen)", "CxUniverse");
    await kb.assert("(implies (and (owns ?a ?t) (borrows ?b ?t)) (owes ?b ?a))", "CxApartment");
    await kb.assert("(owns Ava Kettle)", "CxAva");
    await kb.assert("(borrows Ben Kettle)", "CxBen");
    expect(kb.match("(owes ?b ?a)", "?ctx").map((r) => [r.context, r.sentence])).toEqual([["CxApartment", "(owes Ben Ava)"]]);
  });

  it("a rule a fact's context sees concludes in the fact's context", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxAva CxRules)", "CxUniverse");
    await kb.assert("(genlCx CxBen CxRules)", "CxUniverse");
    await kb.assert("(implies (late ?p) (owesChores ?p))", "CxRules");
    await kb.assert("(late Ava)", "CxAva");
    await kb.assert("(late Ben)", "CxBen");
    expect(kb.match("(owesChores ?p)", "?ctx").map((r) => [r.context, r.sentence])).toEqual([
      ["CxAva", "(owesChores Ava)"],
      ["CxBen", "(owesChores Ben)"],
    ]);
  });

  it("a conclusion lands only in the most general common context, and more specific ones see it", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxShared CxAva)", "CxUniverse");
    await kb.assert("(genlCx CxShared CxBen)", "CxUniverse");
    await kb.assert("(genlCx CxInner CxShared)", "CxUniverse");
    await kb.assert("(implies (and (p ?x) (q ?x)) (r ?x))", "CxAva");
    await kb.assert("(p One)", "CxAva");
    await kb.assert("(q One)", "CxBen");
    expect(kb.match("(r ?x)", "?ctx").map((r) => r.context)).toEqual(["CxShared"]);
    expect(kb.query("(r One)", "CxInner").solutions).toEqual([{}]);
  });

  it("two incomparable common contexts each receive the conclusion", async () => {
    const kb = await freshKb();
    for (const top of ["CxLeft", "CxRight"]) for (const c of ["CxAva", "CxBen"]) await kb.assert(`(genlCx ${top} ${c})`, "CxUniverse");
    await kb.assert("(implies (and (p ?x) (q ?x)) (r ?x))", "CxAva");
    await kb.assert("(p One)", "CxAva");
    await kb.assert("(q One)", "CxBen");
    expect(kb.match("(r ?x)", "?ctx").map((r) => r.context)).toEqual(["CxLeft", "CxRight"]);
  });

  it("no context sees the rule and the fact together: no conclusion", async () => {
    const kb = await freshKb();
    await kb.assert("(implies (late ?p) (owesChores ?p))", "CxRules");
    await kb.assert("(late Ava)", "CxAva");
    expect(kb.match("(owesChores ?p)", "?ctx")).toEqual([]);
    // An edge makes it derivable; retracting the edge takes the conclusion away again.
    const edge = await kb.assert("(genlCx CxAva CxRules)", "CxUniverse");
    expect(kb.match("(owesChores ?p)", "?ctx").map((r) => r.context)).toEqual(["CxAva"]);
    const events = recordEvents(kb);
    await kb.retract(edge.handle);
    expect(kb.match("(owesChores ?p)", "?ctx")).toEqual([]);
    expect(removalsOf(events, "(owesChores Ava)", "CxAva")).toEqual(["unsupported"]);
  });

  it("a rule in CxCore fires in every context, concluding where the fact is", async () => {
    const kb = await freshKb();
    const rule = await kb.assert("(implies (late ?p) (owesChores ?p))", "CxCore");
    await kb.assert("(late Ava)", "CxAva");
    expect(kb.match("(owesChores Ava)", "CxAva")).toHaveLength(1);
    await kb.retract(rule.handle);
    expect(kb.match("(owesChores Ava)", "?ctx")).toEqual([]);
  });
});

describe("strength through rules", () => {
  it("a derived conclusion is as strong as its weakest input", async () => {
    const kb = await freshKb();
    await kb.assert("(implies (and (a ?x) (b ?x)) (c ?x))", "CxS");
    await kb.assert("(a One)", "CxS", { strength: "monotonic" });
    await kb.assert("(b One)", "CxS");
    expect(kb.match("(c One)", "CxS")[0]!.strength).toBe("default");
    await kb.assert("(b One)", "CxS", { strength: "monotonic" });
    expect(kb.match("(c One)", "CxS")[0]!.strength).toBe("monotonic");
    expect(kb.why(handleOf(kb, "(c One)", "CxS")!).strength).toBe("monotonic");
  });

  it("a stored sentex a conclusion new in the same write makes stronger is relabelled with it (the settling region widens to it)", async () => {
    // (s One) is no dependent of (p One) when the write starts: (q One) does not exist yet.
    // The write creates (q One), whose rule concludes the stored (s One) at monotonic strength.
    const kb = await freshKb();
    await kb.assert("(s One)", "CxS");
    await kb.assert("(implies (q ?x) (s ?x))", "CxS");
    await kb.assert("(implies (p ?x) (q ?x))", "CxS");
    expect(kb.match("(s One)", "CxS")[0]!.strength).toBe("default");
    await kb.assert("(p One)", "CxS", { strength: "monotonic" });
    expect(kb.match("(s One)", "CxS")[0]!.strength).toBe("monotonic");
  });

  it("a monotonic derived conclusion defeats a default assertion, which revives when the derivation goes", async () => {
    const kb = await freshKb();
    const events = recordEvents(kb);
    await kb.assert("(implies (penguin ?x) (not (flies ?x)))", "CxBirds");
    const flies = await kb.assert("(flies Pingu)", "CxBirds");
    const pen = await kb.assert("(penguin Pingu)", "CxBirds", { strength: "monotonic" });
    expect(kb.sentex(flies.handle)!.believed).toBe(false);
    expect(kb.why(flies.handle).reason).toBe("defeated");
    expect(removalsOf(events, "(flies Pingu)", "CxBirds")).toEqual(["defeated"]);
    await kb.retract(pen.handle);
    expect(kb.sentex(flies.handle)!.believed).toBe(true);
    expect(removalsOf(events, "(not (flies Pingu))", "CxBirds")).toEqual(["unsupported"]);
  });

  it("the defeat does not depend on the order the rule, the default and the monotonic fact arrive in", async () => {
    const premises: [string, "default" | "monotonic"][] = [
      ["(implies (penguin ?x) (not (flies ?x)))", "default"],
      ["(flies Pingu)", "default"],
      ["(penguin Pingu)", "monotonic"],
    ];
    for (const order of [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]) {
      const kb = await freshKb();
      for (const i of order) await kb.assert(premises[i]![0], "CxBirds", { strength: premises[i]![1] });
      expect(kb.sentex(handleOf(kb, "(flies Pingu)", "CxBirds")!)!.believed, `order ${order.join("")}`).toBe(false);
      expect(kb.contradictions("CxBirds"), `order ${order.join("")}`).toEqual({ contradictions: [], conflicts: [] });
    }
  });
  it("a monotonic assertion defeats a default derived conclusion, kept stored and revived when the winner goes", async () => {
    const kb = await freshKb();
    const events = recordEvents(kb);
    await kb.assert("(implies (penguin ?x) (not (flies ?x)))", "CxBirds");
    await kb.assert("(penguin Pingu)", "CxBirds");
    const derived = handleOf(kb, "(not (flies Pingu))", "CxBirds")!;
    const win = await kb.assert("(flies Pingu)", "CxBirds", { strength: "monotonic" });
    expect(kb.sentex(derived)).toMatchObject({ believed: false, derived: true });
    expect(kb.why(derived)).toMatchObject({ believed: false, reason: "defeated" });
    expect(removalsOf(events, "(not (flies Pingu))", "CxBirds")).toEqual(["defeated"]);
    await kb.retract(win.handle);
    expect(kb.sentex(derived)).toMatchObject({ believed: true, derived: true });
  });

  it("a default conclusion first derived while a monotonic opposite stands is stored defeated, and revives when the winner goes", async () => {
    const kb = await freshKb();
    await kb.assert("(implies (penguin ?x) (not (flies ?x)))", "CxBirds");
    const win = await kb.assert("(flies Pingu)", "CxBirds", { strength: "monotonic" });
    await kb.assert("(penguin Pingu)", "CxBirds");
    const derived = handleOf(kb, "(not (flies Pingu))", "CxBirds")!;
    expect(kb.sentex(derived)).toMatchObject({ believed: false, derived: true });
    expect(kb.why(derived)).toMatchObject({ believed: false, reason: "defeated" });
    expect(kb.contradictions("CxBirds")).toEqual({ contradictions: [], conflicts: [] });
    await kb.retract(win.handle);
    expect(kb.sentex(derived)).toMatchObject({ believed: true, derived: true });
  });

  it("a defeated default does not fire: what it would derive is not believed", async () => {
    const kb = await freshKb();
    await kb.assert("(implies (flies ?x) (canMigrate ?x))", "CxBirds");
    await kb.assert("(flies Pingu)", "CxBirds");
    expect(kb.query("(canMigrate Pingu)", "CxBirds").solutions).toEqual([{}]);
    const no = await kb.assert("(not (flies Pingu))", "CxBirds", { strength: "monotonic" });
    expect(kb.query("(canMigrate Pingu)", "CxBirds").solutions).toEqual([]);
    await kb.retract(no.handle);
    expect(kb.query("(canMigrate Pingu)", "CxBirds").solutions).toEqual([{}]);
  });
});

describe("except masks in firings", () => {
  it("a masked fact supports no conclusion where the mask is seen, and supports it again once unmasked", async () => {
    const kb = await freshKb();
    const events = recordEvents(kb);
    await kb.assert("(implies (dog ?x) (animal ?x))", "CxPets");
    const dog = await kb.assert("(dog Rex)", "CxPets");
    expect(kb.match("(animal Rex)", "CxPets")).toHaveLength(1);
    const mask = await kb.assert(`(except (sentexHandle ${dog.handle}))`, "CxPets", { strength: "monotonic" });
    expect(kb.match("(animal Rex)", "?ctx")).toEqual([]);
    expect(removalsOf(events, "(animal Rex)", "CxPets")).toEqual(["unsupported"]);
    await kb.retract(mask.handle);
    expect(kb.match("(animal Rex)", "CxPets")).toHaveLength(1);
  });

  it("a masked rule concludes nothing where the mask is seen, and still concludes elsewhere", async () => {
    const kb = await freshKb();
    const rule = await kb.assert("(implies (late ?p) (owesChores ?p))", "CxCore");
    await kb.assert("(late Ava)", "CxAva");
    await kb.assert("(late Ben)", "CxBen");
    expect(kb.match("(owesChores ?p)", "?ctx").map((r) => r.context).sort()).toEqual(["CxAva", "CxBen"]);
    const mask = await kb.assert(`(except (sentexHandle ${rule.handle}))`, "CxAva", { strength: "monotonic" });
    expect(kb.match("(owesChores ?p)", "?ctx").map((r) => [r.context, r.sentence])).toEqual([["CxBen", "(owesChores Ben)"]]);
    await kb.retract(mask.handle);
    expect(kb.match("(owesChores ?p)", "?ctx").map((r) => r.context).sort()).toEqual(["CxAva", "CxBen"]);
  });
});

describe("masks asserted at default strength", () => {
  it("a mask asserted at default strength is stored monotonic and hides a monotonic fact from its conclusions, live and after reopen", async () => {
    const path = join(tempDir(), "kb.db");
    const kb = await openKb({ path, contextsDir: CONTEXTS_DIR });
    await kb.assert("(implies (dog ?x) (animal ?x))", "CxPets");
    const dog = await kb.assert("(dog Rex)", "CxPets", { strength: "monotonic" });
    const mask = await kb.assert(`(except (sentexHandle ${dog.handle}))`, "CxPets"); // no strength given: default
    expect(kb.sentex(mask.handle)!.strength).toBe("monotonic");
    expect(kb.match("(animal Rex)", "?ctx")).toEqual([]);
    const live = believed(kb);
    await kb.close();
    const again = await openKb({ path });
    expect(believed(again)).toEqual(live);
    await again.close();
  });
});

describe("contradictions and conflicts over derived sides", () => {
  it("a derived default against an asserted default is a contradiction listing both sides", async () => {
    const kb = await freshKb();
    await kb.assert("(implies (penguin ?x) (not (flies ?x)))", "CxBirds");
    await kb.assert("(penguin Pingu)", "CxBirds");
    const f = await kb.assert("(flies Pingu)", "CxBirds");
    const n = handleOf(kb, "(not (flies Pingu))", "CxBirds")!;
    const { contradictions, conflicts } = kb.contradictions("CxBirds");
    expect(conflicts).toEqual([]);
    expect(contradictions.map((c) => c.sides)).toEqual([
      [
        { handle: f.handle, sentence: "(flies Pingu)", context: "CxBirds", strength: "default", derived: false },
        { handle: n, sentence: "(not (flies Pingu))", context: "CxBirds", strength: "default", derived: true },
      ],
    ]);
  });

  it("two monotonic sides, one derived, are a conflict", async () => {
    const kb = await freshKb();
    await kb.assert("(implies (penguin ?x) (not (flies ?x)))", "CxBirds");
    await kb.assert("(penguin Pingu)", "CxBirds", { strength: "monotonic" });
    await kb.assert("(flies Pingu)", "CxBirds", { strength: "monotonic" });
    const { contradictions, conflicts } = kb.contradictions("CxBirds");
    expect(contradictions).toEqual([]);
    expect(conflicts.map((c) => c.sides.map((s) => [s.sentence, s.strength, s.derived]))).toEqual([
      [
        ["(flies Pingu)", "monotonic", false],
        ["(not (flies Pingu))", "monotonic", true],
      ],
    ]);
  });
});

describe("the contested rule of CxSpeechActs", () => {
  it("a disputes meta-sentex derives (contested (sentexHandle T)), which goes when the dispute does", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxBen CxSpeechActs)", "CxUniverse");
    await kb.assert("(genlCx CxAva CxSpeechActs)", "CxUniverse");
    const claim = await kb.assert("(usesDatabase Prod Postgres)", "CxAva");
    const events = recordEvents(kb);
    const dispute = await kb.assert(`(disputes AgentBen (sentexHandle ${claim.handle}))`, "CxBen");
    const contested = `(contested (sentexHandle ${claim.handle}))`;
    expect(kb.match(contested, "?ctx").map((r) => [r.context, r.derived])).toEqual([["CxBen", true]]);
    expect(events.at(-1)!.added.map((r) => r.sentence)).toEqual([`(disputes AgentBen (sentexHandle ${claim.handle}))`, contested]);
    await kb.retract(dispute.handle);
    expect(kb.match(contested, "?ctx")).toEqual([]);
    expect(removalsOf(events, contested, "CxBen")).toEqual(["unsupported"]);
  });

  it("retracting the disputed target cascades the dispute away and the contested mark with it", async () => {
    const kb = await freshKb();
    await kb.assert("(genlCx CxBen CxSpeechActs)", "CxUniverse");
    const claim = await kb.assert("(usesDatabase Prod Postgres)", "CxAva");
    const dispute = await kb.assert(`(disputes AgentBen (sentexHandle ${claim.handle}))`, "CxBen");
    const events = recordEvents(kb);
    const r = await kb.retract(claim.handle);
    expect(r.removed).toContain(dispute.handle);
    expect(kb.match("(contested ?t)", "?ctx")).toEqual([]);
    const last = events.at(-1)!;
    expect(last.removed.map((x) => x.reason).sort()).toEqual(["cascade", "retracted", "unsupported"]);
  });
});

describe("event reasons", () => {
  it("the feed says retracted, cascade, unsupported and defeated, each where it applies", async () => {
    const kb = await freshKb();
    const events = recordEvents(kb);
    await kb.assert("(genlCx CxAva CxSpeechActs)", "CxUniverse");
    await kb.assert("(implies (dog ?x) (animal ?x))", "CxAva");
    const dog = await kb.assert("(dog Rex)", "CxAva");
    const endorse = await kb.assert(`(endorses AgentAva (sentexHandle ${dog.handle}))`, "CxAva");
    const cat = await kb.assert("(cat Tom)", "CxAva");
    await kb.assert("(not (cat Tom))", "CxAva", { strength: "monotonic" });
    await kb.retract(dog.handle);
    const reasons = Object.fromEntries(events.flatMap((e) => e.removed.map((r) => [r.sentence, r.reason])));
    expect(reasons).toEqual({
      "(cat Tom)": "defeated",
      "(dog Rex)": "retracted",
      [`(endorses AgentAva (sentexHandle ${dog.handle}))`]: "cascade",
      "(animal Rex)": "unsupported",
    });
    expect(kb.why(endorse.handle).reason).toBe("cascade");
    expect(kb.why(cat.handle).reason).toBe("defeated");
    expect(believed(kb)).not.toContain("CxAva|(animal Rex)|default");
    expect(stored(kb)).toContain("CxAva|(cat Tom)|out");
  });
});
