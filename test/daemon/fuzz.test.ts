/**
 * The hostile request fuzz (fuzz-requests.ts) at a size for the default suite: 3 000
 * requests across every route. fuzz.slow.test.ts runs the same fuzz over 100 000.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnFuzzDaemon, runFuzz } from "./fuzz-requests.js";
import type { Daemon } from "./helpers.js";

let d: Daemon;
beforeAll(async () => {
  d = await spawnFuzzDaemon();
});
afterAll(async () => {
  await d.stop();
});

describe("request fuzz", () => {
  it("3 000 hostile requests across every route get only typed 4xx answers or documented successes; no crash; the head moves by exactly the accepted writes", async () => {
    const t = await runFuzz(d, 3_000, 1);
    expect(t.requests).toBe(3_000);
    expect(t.held).toBeGreaterThan(0);
    expect(Object.keys(t.refused).length).toBeGreaterThan(8);
    expect(t.writes).toBeGreaterThan(0);
    process.stdout.write(`fuzz: ${JSON.stringify(t)}\n`);
  }, 300_000);
});
