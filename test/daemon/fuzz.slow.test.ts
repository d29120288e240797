/**
 * The hostile request fuzz (fuzz-requests.ts) at full size: 100 000 requests across every
 * route, partial bodies held open alongside. Only typed 4xx or documented successes, no
 * crash, and the head seq moves by exactly the number of accepted writes.
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

describe("request fuzz (100 000)", () => {
  it("100 000 hostile requests: only typed 4xx or documented successes, no crash, head moves by exactly the accepted writes", async () => {
    const t = await runFuzz(d, 100_000, 20_261_201);
    expect(t.requests).toBe(100_000);
    expect(t.held).toBeGreaterThanOrEqual(100);
    expect(t.writes).toBeGreaterThan(100);
    process.stdout.write(`fuzz: ${JSON.stringify(t)}\n`);
  }, 3_600_000);
});
