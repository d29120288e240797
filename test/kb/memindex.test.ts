import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemIndex } from "../../src/kb/memindex.js";
import { Node, depsAdd, depsRemove, depsList, type Deps, type Justification } from "../../src/kb/node.js";
import { printTerm, type List, type Term } from "../../src/kb/term.js";

const atomArb: fc.Arbitrary<List> = fc.letrec<{ term: Term; atom: List }>((tie) => ({
  term: fc.oneof({ depthSize: "small", withCrossShrink: true }, fc.constantFrom("A", "B", '"a b"', "1"), fc.array(tie("term"), { maxLength: 2 })),
  atom: fc.tuple(fc.constantFrom("p", "q"), fc.array(tie("term"), { maxLength: 3 })).map(([p, args]) => [p, ...args] as List),
})).atom;

describe("the identity index (atoms by structure)", () => {
  it("finds exactly the nodes whose atom prints the same, and keeps no map once they are all removed", () => {
    // `lookFirst`: the add is looked up first (the add continues that lookup's walk), and made
    // only after the next add, so the walk it continues may have grown meanwhile.
    fc.assert(
      fc.property(fc.array(fc.tuple(atomArb, fc.boolean(), fc.constantFrom("CxA", "CxB"), fc.boolean()), { maxLength: 30 }), fc.array(fc.nat(), { maxLength: 30 }), (adds, removals) => {
        const index = new MemIndex();
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
            expect(index.withAtom(copy).map((n) => n.h).sort()).toEqual([...ref.values()].filter((n) => n.akey === printTerm(atom)).map((n) => n.h).sort());
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

describe("the identity index keeps no level per unique atom", () => {
  it("atoms that differ from their second element on cost one map entry each; a second atom through a key gets that key its level", () => {
    const index = new MemIndex();
    const nodes = Array.from({ length: 200 }, (_, i) => new Node(i + 1, "CxA", false, ["rel", `E${i}`, `V${i}`], undefined, null, 1, null, 0, 0));
    for (const n of nodes) index.add(n);
    expect(index.identityMaps()).toBe(1); // the level under `rel`; each (E_i V_i) is an entry of its map
    const twin = new Node(201, "CxA", false, ["rel", "E5", "W"], undefined, null, 1, null, 0, 0);
    index.add(twin);
    expect(index.identityMaps()).toBe(3); // E5 now has a level, with a leaf map of V5 and W
    expect(index.find("CxA", false, ["rel", "E5", "V5"])).toBe(nodes[5]);
    expect(index.find("CxA", false, ["rel", "E5", "W"])).toBe(twin);
    expect(index.find("CxA", false, ["rel", "E6", "W"])).toBeUndefined();
    expect(index.find("CxA", false, ["rel", "E6"])).toBeUndefined();
    expect(index.find("CxA", false, ["rel", "E6", "V6", "X"])).toBeUndefined();
    for (const n of [...nodes, twin]) index.remove(n);
    expect(index.identityMaps()).toBe(0);
  });

  it("adds and removes in any order find exactly what a printed-text map finds, after every step", () => {
    const op = fc.oneof(fc.record({ add: fc.tuple(atomArb, fc.boolean(), fc.constantFrom("CxA", "CxB")) }), fc.record({ remove: fc.nat() }));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const index = new MemIndex();
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
