/**
 * The seed's story between separate OS processes over the wire: nothing needs two agents
 * online at once. A poses a query and exits; B joins later, finds it in openQueries and
 * answers; A reconnects and reads the answer (speakerOf, answerContent); A retracts the query
 * and the answer is gone with it.
 */
import { describe, it, expect } from "vitest";
import { wire, registerAgent } from "../../src/channel/index.js";
import { spawnDaemon, ADMIN_TOKEN } from "./helpers.js";
import { runAgent } from "./processes.js";

describe("the seed's story across processes", () => {
  it("A asks and leaves; B answers later; A reads who answered what; A's retraction takes the answer", async () => {
    const d = await spawnDaemon({ adminToken: ADMIN_TOKEN });
    const admin = wire({ url: d.url, token: ADMIN_TOKEN });
    try {
      const a = (await registerAgent(admin, "AgentAtlas")).token;
      const b = (await registerAgent(admin, "AgentBoreas")).token;
      const { handle: q } = await runAgent(d.url, a, "AgentAtlas", "pose", "(whichDatabase ProdCluster)");
      const { answered } = await runAgent(d.url, b, "AgentBoreas", "answer-open", '"Postgres 16"');
      expect(answered.map((x: number[]) => x[0])).toEqual([q]);
      const read = await runAgent(d.url, a, "AgentAtlas", "read-answers", String(q));
      expect(read.answers).toEqual([{ speaker: "AgentBoreas", content: '"Postgres 16"' }]);
      const { removed } = await runAgent(d.url, a, "AgentAtlas", "retract", String(q));
      expect(removed.sort()).toEqual([q, answered[0][1]].sort());
      expect((await runAgent(d.url, a, "AgentAtlas", "read-answers", String(q))).answers).toEqual([]);
      // The answer is gone from the daemon too, not only from A's read.
      await expect(admin.sentex(answered[0][1])).rejects.toMatchObject({ type: "unknown-handle", status: 404 });
    } finally {
      await admin.close();
      await d.stop();
    }
  });
});
