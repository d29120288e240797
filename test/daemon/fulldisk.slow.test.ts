/**
 * Fail-stop on a real full disk (K12): the daemon's data directory is a small tmpfs. Writes
 * go on until the disk refuses one; then the daemon answers that write and every later
 * request 503 `unavailable`, `/health` 503 with the reason, and exits 3. After the disk is
 * grown, a restarted daemon holds every acknowledged write and nothing that was refused.
 *
 * Mounting a tmpfs needs root, as the suite runs in CI and on a fresh machine; run as
 * another user this test fails and says so rather than pass without looking.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, expect } from "vitest";
import { spawnDaemon } from "./helpers.js";

describe("a full disk stops the daemon loudly", () => {
  it("the refused write and everything after it are 503 unavailable, /health says why, the daemon exits 3, and a restart holds exactly what was acknowledged", { timeout: 240_000 }, async () => {
    expect(process.getuid?.(), "mounting a tmpfs for the full disk needs root").toBe(0);
    const dataDir = mkdtempSync(join(tmpdir(), "koinii-fulldisk-"));
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=6m", "tmpfs", dataDir]);
    try {
      const d = await spawnDaemon({ dataDir });
      const post = (path: string, body: unknown) => fetch(d.url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const acked: string[] = [];
      const refused: string[] = [];
      let first503: { type: string } | undefined;
      const pad = "x".repeat(16 * 1024);
      for (let i = 0; i < 2000 && !first503; i++) {
        const sentence = `(blob B${i} "${pad}")`;
        const r = await post("/v1/assert", { sentence, context: "CxFill" });
        if (r.status === 200) acked.push(sentence);
        else {
          expect(r.status).toBe(503);
          first503 = (await r.json()) as { type: string };
          refused.push(sentence);
        }
      }
      expect(first503, "the disk never filled").toBeDefined();
      expect(first503!.type).toBe("unavailable");
      const later = await post("/v1/assert", { sentence: "(after Full)", context: "CxFill" }).catch(() => undefined);
      const read = await post("/v1/match", { sentence: "(blob ?b ?p)", context: "CxFill" }).catch(() => undefined);
      const health = await fetch(d.url + "/health").catch(() => undefined);
      // The daemon may already be gone (it exits once in-flight answers are out); while it
      // answers, it answers 503.
      for (const r of [later, read, health]) if (r) expect(r.status).toBe(503);
      if (health) expect(await health.json()).toMatchObject({ ok: false, reason: expect.stringMatching(/full|FULL/) });
      expect(await d.exited).toBe(3);
      expect(d.stderr()).toMatch(/the store failed/);

      execFileSync("mount", ["-o", "remount,size=256m", dataDir]);
      const again = await spawnDaemon({ dataDir });
      const stored = (await (await fetch(again.url + "/v1/match", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ sentence: "(blob ?b ?p)", context: "CxFill" }) })).json()) as { sentexes: { sentence: string }[] };
      await again.stop();
      const have = new Set(stored.sentexes.map((s) => s.sentence));
      expect(acked.filter((s) => !have.has(s)), "acknowledged but lost").toEqual([]);
      expect(refused.filter((s) => have.has(s)), "refused but stored").toEqual([]);
      expect(have.size).toBe(acked.length);
    } finally {
      execFileSync("umount", ["-l", dataDir]);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
