/**
 * The server built in-process (createServer, as a benchmark does): a 5xx is answered
 * `internal-error` and logged once with its stack; a 4xx is not logged.
 */
import { describe, it, expect } from "vitest";
import { Writable } from "node:stream";
import { pino } from "pino";
import { openKb } from "../../src/kb/index.js";
import { createServer, WIRE_ERROR_STATUS } from "../../src/daemon/index.js";

describe("in-process server", () => {
  it("a failure inside a route is 500 internal-error, logged with its stack; a refusal is not logged", async () => {
    const lines: string[] = [];
    const sink = new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } });
    const kb = await openKb({ path: ":memory:" });
    const server = await createServer({ kb, logger: pino({ level: "info" }, sink), version: "test" });
    try {
      const before = lines.length; // the open-mode warning
      const refused = await server.app.inject({ method: "POST", url: "/v1/assert", payload: { sentence: "(dog ?x)", context: "CxPets" } });
      expect(refused.json()).toMatchObject({ ok: false, type: "not-ground" });
      expect(lines.length).toBe(before);
      kb.query = () => {
        throw new TypeError("boom in the engine");
      };
      const failed = await server.app.inject({ method: "POST", url: "/v1/query", payload: { goal: "(dog ?x)", context: "CxPets" } });
      expect(failed.statusCode).toBe(500);
      expect(failed.json()).toEqual({ ok: false, type: "internal-error", error: expect.any(String) });
      expect(failed.body).not.toContain("boom");
      expect(lines.length).toBe(before + 1);
      expect(lines[before]).toContain("boom in the engine");
      expect(lines[before]).toContain("at "); // the stack
    } finally {
      await server.close();
      await kb.close();
    }
  });

  it("every wire type has exactly one status, 4xx for the caller's fault and 5xx for the daemon's (and one redirect: a follower's 307 not-writer)", () => {
    for (const [type, status] of Object.entries(WIRE_ERROR_STATUS)) {
      if (type === "not-writer") {
        expect(status).toBe(307); // a write sent to a follower: Location names the writer (docs/cluster.md)
        continue;
      }
      expect(status, type).toBeGreaterThanOrEqual(400);
      expect(status, type).toBeLessThan(600);
    }
    expect(WIRE_ERROR_STATUS["internal-error"]).toBe(500);
    expect(WIRE_ERROR_STATUS["body-too-large"]).toBe(413);
    expect(WIRE_ERROR_STATUS["not-json"]).toBe(415);
  });
});
