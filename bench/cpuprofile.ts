/**
 * Read a V8 `.cpuprofile` (node --cpu-prof): self time per frame and per source file, so a
 * profile can be quoted as a short table.
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface Share {
  name: string;
  ms: number;
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  frames: Share[];
  files: Share[];
}

const fileOf = (url: string) => (url ? basename(url.replace(/^file:\/\//, "")) : "(native)");

/** Self time by frame (`function file:line`) and by file, largest first, `top` of each. */
export function summarize(path: string, top = 15): ProfileSummary {
  const p = JSON.parse(readFileSync(path, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const frames = new Map<string, number>();
  const files = new Map<string, number>();
  let total = 0;
  for (const [id, us] of self) {
    const f = byId.get(id)!.callFrame;
    const file = fileOf(f.url);
    const frame = `${f.functionName || "(anonymous)"} ${f.url ? `${file}:${f.lineNumber + 1}` : ""}`.trim();
    frames.set(frame, (frames.get(frame) ?? 0) + us);
    files.set(file, (files.get(file) ?? 0) + us);
    total += us;
  }
  const rank = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: us / 1000, share: us / total }));
  return { totalMs: total / 1000, frames: rank(frames), files: rank(files) };
}

export function printSummary(title: string, s: ProfileSummary): void {
  console.log(`\n  ${title}: ${s.totalMs.toFixed(0)} ms sampled`);
  for (const [head, rows] of [["self time by frame", s.frames], ["self time by file", s.files]] as const) {
    console.log(`    ${head}:`);
    for (const r of rows) console.log(`      ${(r.share * 100).toFixed(1).padStart(5)}%  ${r.ms.toFixed(0).padStart(6)} ms  ${r.name}`);
  }
}

/**
 * Inclusive time (us) of frames named `function@file` (file `(native)` for V8 builtins),
 * each counted at its outermost occurrence only, so recursion is not counted twice.
 */
export function inclusive(path: string, keys: string[]): Map<string, number> {
  const p = JSON.parse(readFileSync(path, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const wanted = new Set(keys);
  const out = new Map(keys.map((k) => [k, 0]));
  const total = (id: number): number => {
    const n = byId.get(id)!;
    return (self.get(id) ?? 0) + (n.children ?? []).reduce((s, c) => s + total(c), 0);
  };
  const walk = (id: number, inside: Set<string>): void => {
    const n = byId.get(id)!;
    const key = `${n.callFrame.functionName}@${fileOf(n.callFrame.url)}`;
    let here = inside;
    if (wanted.has(key) && !inside.has(key)) {
      out.set(key, out.get(key)! + total(id));
      here = new Set(inside).add(key);
    }
    for (const c of n.children ?? []) walk(c, here);
  };
  walk(p.nodes[0]!.id, new Set());
  return out;
}

/**
 * Sampled time by category: each sample goes to the category of the innermost frame on its
 * stack whose url matches one of `rules` (first matching rule), else to its own frame's
 * name when that is a V8 pseudo-frame ((idle), (garbage collector), (program)), else to
 * "other". So a socket write made by the pg client counts as the pg client's.
 */
export function categorize(path: string, rules: [RegExp, string][]): Map<string, number> {
  const p = JSON.parse(readFileSync(path, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const memo = new Map<number, string>();
  const categoryOf = (id: number): string => {
    let cat = memo.get(id);
    if (cat !== undefined) return cat;
    const f = byId.get(id)!.callFrame;
    const rule = f.url ? rules.find(([re]) => re.test(f.url)) : undefined;
    if (rule) cat = rule[1];
    else if (/^\(.*\)$/.test(f.functionName) && f.functionName !== "(root)") cat = f.functionName;
    else cat = parent.has(id) ? categoryOf(parent.get(id)!) : "other";
    memo.set(id, cat);
    return cat;
  };
  const out = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const c = categoryOf(id);
    out.set(c, (out.get(c) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  return out;
}
