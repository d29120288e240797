/**
 * One daemon and four agent processes: a poser and three responders that catch up on
 * `(queries ?a ?q)` from a cursor file, claim each new query and answer it. One responder is
 * SIGKILLed mid-conversation and restarted on the same cursor file: every query ends with
 * exactly one answer (no loss, no duplicate), and the restarted responder's view is exactly
 * the snapshot.
 */
import { describe, it, expect } from "vitest";
import { join as pathJoin } from "node:path";
import { readFileSync } from "node:fs";
import { wire, join, poseQuery, registerAgent, answersTo, openQueries, snapshot, speakerOf } from "../../src/channel/index.js";
import { spawnDaemon, tempDir, eventually, ADMIN_TOKEN } from "./helpers.js";
import { startAgent, type Running } from "./processes.js";

const QUERIES = 40;

describe("four agent processes, one killed and restarted", () => {
  it("the restarted responder catches up from its cursor file: every query answered exactly once", { timeout: 120_000 }, async () => {
    const d = await spawnDaemon({ adminToken: ADMIN_TOKEN });
    const admin = wire({ url: d.url, token: ADMIN_TOKEN });
    const dir = tempDir();
    const ids = ["AgentRespA", "AgentRespB", "AgentRespC"];
    const running: Running[] = [];
    try {
      const tokens: Record<string, string> = {};
      for (const id of ["AgentPoser", ...ids]) tokens[id] = (await registerAgent(admin, id)).token!;
      const poserMedium = wire({ url: d.url, token: tokens.AgentPoser });
      const poser = await join(poserMedium, "CxDeploy", "AgentPoser");
      const start = (id: string) => {
        const r = startAgent(d.url, tokens[id], id, "responder", pathJoin(dir, `${id}.cursor.json`));
        running.push(r);
        return r;
      };
      const [ra, rb, rc] = ids.map(start) as [Running, Running, Running];
      await eventually(() => [ra, rb, rc].every((r) => r.lines.some((l) => "synced" in l)), (ok) => ok);
      const posed: number[] = [];
      for (let i = 0; i < QUERIES; i++) {
        posed.push(await poseQuery(poser, `(question Q${i})`));
        if (i === QUERIES / 2) {
          // Mid-conversation: kill B without warning, keep posing, then restart it on its file.
          rb.proc.kill("SIGKILL");
          expect(await rb.exited).toBe("SIGKILL");
        }
        if (i === (3 * QUERIES) / 4) start("AgentRespB");
      }
      const rb2 = running[running.length - 1]!;
      // Wait until every query has an answer, then until B has folded the last seq.
      await eventually(() => openQueries(poser, { unanswered: true }), (open) => open.length === 0);
      await eventually(() => rb2.lines.filter((l) => "synced" in l).map((l) => l.synced as number), (s) => s.length > 0 && s[s.length - 1]! >= posed[posed.length - 1]!);
      for (const q of posed) {
        const answers = await answersTo(poser, q);
        expect(answers, `query ${q}`).toHaveLength(1);
        expect(ids).toContain(speakerOf(answers[0]!));
      }
      // No duplicate: across all responder processes, each query was answered by one agent.
      const byQuery = new Map<number, Set<string>>();
      running.forEach((r, i) => {
        const id = i < 3 ? ids[i]! : "AgentRespB";
        for (const l of r.lines) if ("query" in l) byQuery.set(l.query, (byQuery.get(l.query) ?? new Set()).add(id));
      });
      expect([...byQuery.keys()].sort((x, y) => x - y)).toEqual(posed);
      for (const s of byQuery.values()) expect(s.size).toBe(1);
      // The restarted responder resumed (no bootstrap snapshot of an empty view) and its view is exactly the snapshot.
      const saved = JSON.parse(readFileSync(pathJoin(dir, "AgentRespB.cursor.json"), "utf8"));
      const snap = await snapshot(poser, "(queries ?agent ?question)", "CxDeploy");
      expect(saved.view.map((e: [number, string]) => e[1]).sort()).toEqual([...snap.values()].sort());
      expect(saved.cursor).toBeGreaterThanOrEqual(posed[posed.length - 1]!);
      await poserMedium.close();
    } finally {
      for (const r of running) if (r.proc.exitCode === null && r.proc.signalCode === null) r.proc.kill("SIGTERM");
      await Promise.all(running.map((r) => r.exited));
      await admin.close();
      await d.stop();
    }
  });
});
