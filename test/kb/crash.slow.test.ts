/**
 * Issue 2 property (c): a writer killed with SIGKILL at a random moment of its write loop
 * reopens with every acknowledged write and no part of an unacknowledged batch.
 * The child runs from dist/ (built by the global setup), as the daemon does.
 */
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { openKb } from "../../src/kb/index.js";
import { tempDir } from "./helpers.js";

const CHILD = resolve(import.meta.dirname, "../../dist/test/kb/fixtures/write-loop.js");
const batchSize = (i: number): number => 2 + (i % 4); // as in fixtures/write-loop.ts

interface Ack {
  kind: "assert" | "edit";
  i: number;
  seq: number;
  handle?: number;
  added?: number[];
}

/** Run the child until `acksBeforeKill` acknowledgements have arrived plus `delayMs`, then SIGKILL it. */
function runAndKill(path: string, run: number, acksBeforeKill: number, delayMs: number): Promise<{ acks: Ack[]; lastBegun: number }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CHILD, path, String(run)], { stdio: ["ignore", "pipe", "pipe"] });
    const acks: Ack[] = [];
    let lastBegun = -1;
    let stderr = "";
    let killing = false;
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    createInterface({ input: child.stdout }).on("line", (line) => {
      const msg = JSON.parse(line) as Ack & { begin?: number; ready?: boolean };
      if (msg.begin !== undefined) lastBegun = msg.begin;
      else if (msg.kind) acks.push(msg);
      if (!killing && acks.length >= acksBeforeKill) {
        killing = true;
        setTimeout(() => child.kill("SIGKILL"), delayMs);
      }
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (signal !== "SIGKILL") reject(new Error(`child ended with code ${code} signal ${signal} before the kill: ${stderr}`));
      else resolvePromise({ acks, lastBegun });
    });
  });
}

describe("crash safety (c)", () => {
  it("after SIGKILL mid-loop the KB reopens with every acknowledged write and no part of an unacknowledged batch", async () => {
    const path = join(tempDir(), "kb.db");
    const allAcks: { run: number; ack: Ack }[] = [];
    let lastSeq = 0;
    for (let run = 0; run < 10; run++) {
      const { acks, lastBegun } = await runAndKill(path, run, 3 + Math.floor(Math.random() * 20), Math.floor(Math.random() * 60));
      for (const ack of acks) allAcks.push({ run, ack });
      const kb = await openKb({ path });
      try {
        // Every acknowledged write of every run so far is there, with its handle and seq.
        for (const { run: r, ack } of allAcks) {
          if (ack.kind === "assert") {
            expect(kb.sentex(ack.handle!), `run ${r} assert ${ack.i}`).toMatchObject({ sentence: `(item R${r}N${ack.i})`, seq: ack.seq, believed: true });
            expect(kb.match(`(seen R${r}N${ack.i})`, "CxLoop"), `run ${r} derived ${ack.i}`).toHaveLength(1);
          } else {
            expect(ack.added!.map((h) => kb.sentex(h)?.sentence)).toEqual(Array.from({ length: batchSize(ack.i) }, (_, j) => `(batchItem R${r}B${ack.i} E${j})`));
          }
          expect(ack.seq).toBeLessThanOrEqual(kb.headSeq);
        }
        // Every batch this run began is all there or not there at all.
        for (let i = 0; i <= lastBegun; i++) {
          if (i % 3 !== 2) continue;
          const stored = kb.match(`(batchItem R${run}B${i} ?e)`, "CxLoop").length;
          expect([0, batchSize(i)], `run ${run} batch ${i} has ${stored} entries`).toContain(stored);
        }
        // seq only grows across crashes.
        expect(kb.headSeq).toBeGreaterThanOrEqual(lastSeq);
        lastSeq = kb.headSeq;
      } finally {
        await kb.close();
      }
    }
    expect(allAcks.length).toBeGreaterThanOrEqual(30);
  }, 120_000);
});
