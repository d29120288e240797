const { RowEngine } = await import("../dist/src/kb/rowengine.js");
const { graph, SemiNaiveClosure, EngineClosure } = await import("../dist/bench/closure.js");
const kind = process.argv[2] ?? "tree", N = Number(process.argv[3] ?? 10000);
const edges = graph(kind, N);
const ms = (t) => Number(process.hrtime.bigint() - t) / 1e6;
const runs = N >= 100000 ? 4 : 8;
let bestMat = Infinity, bestPlain = Infinity, bestIns = Infinity, bestRet = Infinity, bestRecomp = Infinity, facts = 0;
let e;
for (let i = 0; i < runs; i++) {
  e = new RowEngine();
  for (const [a, b] of edges) e.assert({ neg: false, atom: ["edge", `N${a}`, `N${b}`] });
  global.gc();
  let t = process.hrtime.bigint();
  e.assertRule([{ neg: false, atom: ["edge", "?x", "?y"] }], { neg: false, atom: ["reach", "?x", "?y"] });
  e.assertRule([{ neg: false, atom: ["edge", "?x", "?y"] }, { neg: false, atom: ["reach", "?y", "?z"] }], { neg: false, atom: ["reach", "?x", "?z"] });
  const m = ms(t);
  facts = e.count("reach", 2);
  const c = new SemiNaiveClosure(); await c.load(edges); global.gc(); t = process.hrtime.bigint(); await c.derive(); const p = ms(t);
  if (c.count() !== facts) throw new Error(`facts ${facts} vs ${c.count()}`);
  if (i >= 2) { bestMat = Math.min(bestMat, m); bestPlain = Math.min(bestPlain, p); }
}
// leaf insert / retract cycles, warm first
const leaf = [kind === "chain" ? N - 1 : edges[edges.length - 1][1], N];
for (let i = 0; i < 300; i++) { const h = e.assert({ neg: false, atom: ["edge", `N${edges[(i * 7919) % edges.length][1]}`, `N${N + 1 + i}`] }); e.retract(h); }
let addedN = 0;
for (let i = 0; i < 20; i++) {
  let t = process.hrtime.bigint(); const h = e.assert({ neg: false, atom: ["edge", `N${leaf[0]}`, `N${leaf[1]}`] }); const ins = ms(t); addedN = e.count("reach", 2) - facts;
  t = process.hrtime.bigint(); e.retract(h); const ret = ms(t);
  bestIns = Math.min(bestIns, ins); bestRet = Math.min(bestRet, ret);
}
if (e.count("reach", 2) !== facts) throw new Error("retract did not give back the state");
for (let i = 0; i < 3; i++) { const c = new SemiNaiveClosure(); await c.load([...edges, leaf]); global.gc(); const t = process.hrtime.bigint(); await c.derive(); bestRecomp = Math.min(bestRecomp, ms(t)); }
console.log(JSON.stringify({ kind, N, facts, row_materialize_ms: +bestMat.toFixed(2), plain_ms: +bestPlain.toFixed(2), mat_ratio: +(bestPlain / bestMat).toFixed(2), leaf_facts: addedN, insert_ms: +bestIns.toFixed(4), retract_ms: +bestRet.toFixed(4), recompute_ms: +bestRecomp.toFixed(2), insert_x: Math.round(bestRecomp / bestIns), retract_x: Math.round(bestRecomp / bestRet) }));
