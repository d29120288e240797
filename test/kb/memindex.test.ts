import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_WIDE_AT, MemIndex } from "../../src/kb/memindex.js";
import { Node, depsAdd, depsRemove, depsList, type Deps, type Justification } from "../../src/kb/node.js";
import { printTerm, type List, type Term } from "../../src/kb/term.js";

const atomArb: fc.Arbitrary<List> = fc.letrec<{ term: Term; atom: List }>((tie) => ({
  term: fc.oneof({ depthSize: "small", withCrossShrink: true }, fc.constantFrom("A", "B", '"a b"', "1"), fc.array(tie("term"), { maxLength: 2 })),
  atom: fc.tuple(fc.constantFrom("p", "q"), fc.array(tie("term"), { maxLength: 3 })).map(([p, args]) => [p, ...args] as List),
})).atom;

// Every identity property runs with a first argument's table made at 2 nodes (wideAt 1), at 3, and at the default.
const WIDE_AT = [1, 2, DEFAULT_WIDE_AT];

describe.each(WIDE_AT)("the identity index (atoms by structure), wideAt %i", (wideAt) => {
  it("finds exactly the nodes whose atom prints the same, and keeps no map once they are all removed", () => {
    // `lookFirst`: the add is looked up first, and made only after the next add, so the
    // index it enters may have grown between its lookup and its add.
    fc.assert(
      fc.property(fc.array(fc.tuple(atomArb, fc.boolean(), fc.constantFrom("CxA", "CxB"), fc.boolean()), { maxLength: 30 }), fc.array(fc.nat(), { maxLength: 30 }), (adds, removals) => {
        const index = new MemIndex({ wideAt });
        const ref = new Map<string, Node>();
        let h = 1;
        let deferred: Node | undefined;
        for (const [atom, neg, ctx, lookFirst] of adds) {
          const key = `${ctx} ${neg} ${printTerm(atom)}`;
          if (ref.has(key)) continue;
          const n = new Node(h++, ctx, neg, atom, undefined, null, 1, null, 0, 0);
          ref.set(key, n);
          if (lookFirst) expect(index.find(ctx, neg, atom)).toBeUndefined();
          if (deferred) index.add(deferred);
          deferred = undefined;
          if (lookFirst) deferred = n;
          else index.add(n);
        }
        if (deferred) index.add(deferred);
        const check = () => {
          for (const [atom, neg, ctx] of adds) {
            // A structurally equal copy, not the stored array: lookup is by structure.
            const copy = JSON.parse(JSON.stringify(atom)) as List;
            expect(index.find(ctx, neg, copy)).toBe(ref.get(`${ctx} ${neg} ${printTerm(atom)}`));
            const same = [...ref.values()].filter((n) => n.akey === printTerm(atom));
            expect(index.withAtom(copy).map((n) => n.h).sort()).toEqual(same.map((n) => n.h).sort());
            const probe = new Node(0, ctx, neg, copy, undefined, null, 1, null, 0, 0);
            expect(index.hasOpposite(probe)).toBe(same.some((n) => n.neg) && same.some((n) => !n.neg));
          }
        };
        check();
        for (const r of removals) {
          const nodes = [...ref.entries()];
          if (nodes.length === 0) break;
          const [key, n] = nodes[r % nodes.length]!;
          index.remove(n);
          ref.delete(key);
        }
        check();
        for (const n of ref.values()) index.remove(n);
        expect(index.identityMaps()).toBe(0);
      }),
      { numRuns: 300 },
    );
  });
});

describe("the identity index reads through the first argument's map", () => {
  it("unique first arguments cost no map beyond the argument maps; more than wideAt atoms through one first argument get a table of their own, dropped at half", () => {
    const index = new MemIndex();
    const nodes = Array.from({ length: 200 }, (_, i) => new Node(i + 1, "CxA", false, ["rel", `E${i}`, `V${i}`], undefined, null, 1, null, 0, 0));
    for (const n of nodes) index.add(n);
    expect(index.identityMaps()).toBe(0);
    const twins = Array.from({ length: DEFAULT_WIDE_AT }, (_, j) => new Node(201 + j, "CxA", false, ["rel", "E5", `W${j}`], undefined, null, 1, null, 0, 0));
    for (const t of twins.slice(0, -1)) index.add(t);
    expect(index.identityMaps()).toBe(0); // E5 holds wideAt nodes: a lookup scans them
    index.add(twins.at(-1)!);
    expect(index.identityMaps()).toBe(1); // one more: E5's table, a leaf map of V5 and the W's
    const finds = () => {
      expect(index.find("CxA", false, ["rel", "E5", "V5"])).toBe(nodes[5]);
      for (const t of twins) expect(index.find("CxA", false, ["rel", "E5", t.atom[2]!])).toBe(t.gone ? undefined : t);
      expect(index.find("CxB", false, ["rel", "E5", "V5"])).toBeUndefined();
      expect(index.find("CxA", true, ["rel", "E5", "V5"])).toBeUndefined();
      expect(index.find("CxA", false, ["rel", "E6", "W0"])).toBeUndefined();
      expect(index.find("CxA", false, ["rel", "E5"])).toBeUndefined();
      expect(index.find("CxA", false, ["rel", "E5", "V5", "X"])).toBeUndefined();
    };
    finds();
    // Down to half of wideAt nodes through E5, the table goes and a lookup scans again.
    for (const t of twins.slice(0, DEFAULT_WIDE_AT / 2 + 1)) {
      expect(index.identityMaps()).toBe(1);
      index.remove(t);
      t.gone = true;
      finds();
    }
    expect(index.identityMaps()).toBe(0);
    for (const n of [...nodes, ...twins]) if (!n.gone) index.remove(n);
    expect(index.identityMaps()).toBe(0);
    expect(index.size).toBe(0);
  });

  it("a rule is found by its text, never as a fact", () => {
    const index = new MemIndex();
    const atom: List = ["implies", ["p", "?x"], ["q", "?x"]];
    const rule = new Node(1, "CxA", false, atom, printTerm(atom), { keys: [] } as never, 1, null, 0, 0);
    index.add(rule);
    expect(index.find("CxA", false, ["implies", ["p", "?x"], ["q", "?x"]])).toBe(rule);
    expect(index.find("CxB", false, atom)).toBeUndefined();
    expect(index.withAtom(atom)).toEqual([rule]);
    expect([...index.all("implies")]).toEqual([]);
    index.remove(rule);
    expect(index.find("CxA", false, atom)).toBeUndefined();
  });
})

describe.each(WIDE_AT)("the identity index under any order, wideAt %i", (wideAt) => {
  it("adds and removes in any order find exactly what a printed-text map finds, after every step", () => {
    const op = fc.oneof(fc.record({ add: fc.tuple(atomArb, fc.boolean(), fc.constantFrom("CxA", "CxB")) }), fc.record({ remove: fc.nat() }));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const index = new MemIndex({ wideAt });
        const ref = new Map<string, Node>();
        const asked: List[] = [];
        let h = 1;
        for (const o of ops) {
          if ("add" in o) {
            const [atom, neg, ctx] = o.add;
            asked.push(atom);
            const key = `${ctx} ${neg} ${printTerm(atom)}`;
            if (ref.has(key)) continue;
            const n = new Node(h++, ctx, neg, atom, undefined, null, 1, null, 0, 0);
            index.add(n);
            ref.set(key, n);
          } else if (ref.size) {
            const [key, n] = [...ref.entries()][o.remove % ref.size]!;
            index.remove(n);
            ref.delete(key);
          }
          for (const atom of asked) {
            const copy = JSON.parse(JSON.stringify(atom)) as List;
            for (const ctx of ["CxA", "CxB"]) for (const neg of [false, true]) expect(index.find(ctx, neg, copy)).toBe(ref.get(`${ctx} ${neg} ${printTerm(atom)}`));
          }
        }
        for (const n of ref.values()) index.remove(n);
        expect(index.identityMaps()).toBe(0);
      }),
      { numRuns: 300 },
    );
  });
});

describe("a node's dependents", () => {
  it("list exactly the justifications added and not removed, through the single, array and hub forms", () => {
    const n = new Node(1, "CxA", false, ["p", "A"], undefined, null, 1, null, 0, 0);
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.nat()), { minLength: 60, maxLength: 200 }), (ops) => {
        let deps: Deps = null;
        const live: Justification[] = [];
        for (const [op, i] of ops) {
          // Two adds in three: lists grow past the array form into the hub form.
          if (op % 3 !== 0 || live.length === 0) {
            const j: Justification = { rule: n, ants: [n], concl: n, dead: false };
            deps = depsAdd(deps, j);
            live.push(j);
          } else {
            const [j] = live.splice(i % live.length, 1);
            j!.dead = true;
            deps = depsRemove(deps, j!);
          }
          expect(new Set(depsList(deps))).toEqual(new Set(live));
          expect(depsList(deps).length).toBe(live.length);
        }
      }),
      { numRuns: 200 },
    );
  });
});
