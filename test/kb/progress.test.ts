/**
 * Long work is visible: a ProgressMeter reports counts and a rate at most every interval,
 * and says nothing without a sink; `koinii serve` reports its reopen of a large store on
 * stderr (and nothing with --quiet); a mail sync's collector reports the messages read.
 */
import { join } from "node:path";
import { describe, it, expect } from "vitest";
import { openKb, ProgressMeter, progressLine, type Progress } from "../../src/kb/index.js";
import { AccountCollector } from "../../src/agents/mail/sync.js";
import { spawnDaemon, tempDir } from "../daemon/helpers.js";

describe("ProgressMeter", () => {
  it("reports at most every interval, with done, total and rate, and a final line only after a report", () => {
    let t = 0;
    const seen: Progress[] = [];
    const m = new ProgressMeter("reopening the store", "sentexes", { report: (p) => seen.push(p), intervalMs: 1000 }, { total: 100, now: () => t });
    for (let i = 0; i < 10; i++) m.tick(); // t = 0: nothing yet
    expect(seen).toEqual([]);
    t = 1000;
    m.tick(10); // 20 done at 1 s
    t = 1500;
    m.tick(); // within the interval: no report
    t = 2000;
    m.tick(29); // 50 done at 2 s
    m.end();
    expect(seen.map((p) => [p.done, p.total, Math.round(p.rate), p.final])).toEqual([
      [20, 100, 20, false],
      [50, 100, 25, false],
      [50, 100, 25, true],
    ]);
    expect(progressLine(seen[1]!)).toBe("koinii: reopening the store: 50 / 100 sentexes (50%), 25/s, 2.0 s");
  });

  it("a short job, or one without a sink, prints nothing", () => {
    const seen: Progress[] = [];
    const quick = new ProgressMeter("x", "units", { report: (p) => seen.push(p), intervalMs: 60_000 });
    quick.tick(5);
    quick.end();
    const silent = new ProgressMeter("x", "units", undefined, { now: () => 1e12 });
    silent.tick(5);
    silent.end();
    expect(seen).toEqual([]);
  });

  it("a mail sync's collector counts every message it reads, reused or parsed", () => {
    const seen: Progress[] = [];
    const acc = new AccountCollector("work", [], () => undefined, { report: (p) => seen.push(p), intervalMs: 0 });
    acc.add([]);
    acc.reuse("INBOX", "1", [], "2026-01-01T00:00:00Z"); // not known: not counted as read from the store
    acc.add([{ raw: "Subject: hi\r\nMessage-ID: <a@x>\r\nFrom: a@x\r\nDate: Thu, 1 Jan 2026 00:00:00 +0000\r\n\r\nhello\r\n", meta: { account: "work", folder: "INBOX", server_id: "1", flags: [], role: "inbox" } as never }]);
    acc.result();
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[seen.length - 1]).toMatchObject({ what: "syncing work", unit: "messages", done: 1, final: true });
  });
});

describe("koinii serve reports its reopen", () => {
  it("prints progress lines for a large store on stderr, and none with --quiet", { timeout: 120_000 }, async () => {
    const dataDir = tempDir();
    const kb = await openKb({ path: join(dataDir, "koinii.db"), durability: "normal" });
    await kb.edit({ add: Array.from({ length: 20_000 }, (_, i) => ({ sentence: `(n N${i})`, context: "CxBig" })) });
    await kb.close();
    const loud = await spawnDaemon({ dataDir, args: ["--progress-interval-ms", "1"] });
    await loud.stop();
    const lines = loud.stderr().split("\n").filter((l) => l.startsWith("koinii: reopening the store"));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines[lines.length - 1]).toMatch(/^koinii: reopening the store done: 20 0\d\d \/ 20 0\d\d sentexes \(100%\), [\d ]+\/s, [\d.]+ s$/);
    const quiet = await spawnDaemon({ dataDir, args: ["--progress-interval-ms", "1", "--quiet"] });
    await quiet.stop();
    expect(quiet.stderr()).not.toMatch(/reopening the store/);
  });
});
