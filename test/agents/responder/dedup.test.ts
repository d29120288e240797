import { appendFileSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DedupStore } from "../../../src/agents/responder/index.js";
import { tmp } from "./helpers.js";

describe("dedup store", () => {
  it("survives a restart", () => {
    const path = join(tmp(), "processed.jsonl");
    const a = DedupStore.open(path);
    a.add("m1");
    a.add("m2");
    a.add("m1");
    a.close();
    const b = DedupStore.open(path);
    expect([b.has("m1"), b.has("m2"), b.has("m3"), b.size]).toEqual([true, true, false, 2]);
    b.close();
    expect(readFileSync(path, "utf8")).toBe('"m1"\n"m2"\n');
  });

  it("ids with newlines or quotes round-trip", () => {
    const path = join(tmp(), "p.jsonl");
    const a = DedupStore.open(path);
    a.add('we"ird\nid');
    a.close();
    expect(DedupStore.open(path).has('we"ird\nid')).toBe(true);
  });

  it("a torn last line is ignored and does not swallow the next id", () => {
    const path = join(tmp(), "p.jsonl");
    const a = DedupStore.open(path);
    a.add("m1");
    a.close();
    appendFileSync(path, '"m2');
    const b = DedupStore.open(path);
    expect(b.has("m2")).toBe(false);
    b.add("m3");
    b.close();
    const c = DedupStore.open(path);
    expect([c.has("m1"), c.has("m2"), c.has("m3")]).toEqual([true, false, true]);
  });

  it("keeps the newest maxIds and compacts the file atomically past twice that", () => {
    const dir = tmp();
    const path = join(dir, "p.jsonl");
    const s = DedupStore.open(path, 3);
    for (let i = 1; i <= 7; i++) s.add(`m${i}`);
    expect([s.has("m4"), s.has("m5"), s.has("m7"), s.size]).toEqual([false, true, true, 3]);
    s.close();
    expect(readFileSync(path, "utf8").trim().split("\n").length).toBeLessThanOrEqual(6);
    expect(readdirSync(dir)).toEqual(["p.jsonl"]);
    const r = DedupStore.open(path, 3);
    expect([r.has("m5"), r.has("m6"), r.has("m7")]).toEqual([true, true, true]);
  });
});
