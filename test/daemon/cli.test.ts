/** The client verbs against a real daemon: assert, query, retract, and watch printing events as they come. */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { spawnDaemon, MAIN, type Daemon } from "./helpers.js";

const run = promisify(execFile);
let d: Daemon;
beforeAll(async () => {
  d = await spawnDaemon();
});
afterAll(async () => {
  await d.stop();
});

const koinii = async (...args: string[]) => JSON.parse((await run(process.execPath, [MAIN, ...args, "--url", d.url])).stdout) as Record<string, unknown>;

describe("koinii client verbs", () => {
  it("assert, query and retract print the daemon's answer; a refusal exits 1 with its JSON on stderr", async () => {
    const a = await koinii("assert", "(dog Muffet)", "-c", "CxPets");
    expect(a).toMatchObject({ ok: true, created: true });
    expect(await koinii("query", "(dog ?x)", "-c", "CxPets")).toEqual({ ok: true, solutions: [{ "?x": "Muffet" }], truncated: false, asOf: a.seq });
    expect(await koinii("retract", String(a.handle))).toMatchObject({ ok: true, removed: [a.handle] });
    const bad = await run(process.execPath, [MAIN, "assert", "(dog ?x)", "-c", "CxPets", "--url", d.url]).catch((e: { code: number; stderr: string }) => e);
    expect((bad as { code: number }).code).toBe(1);
    expect(JSON.parse((bad as { stderr: string }).stderr)).toMatchObject({ ok: false, type: "not-ground" });
  });

  it("watch prints each matching event as one JSON line as it comes", async () => {
    const from = ((await (await fetch(`${d.url}/health`)).json()) as { seq: number }).seq;
    const p = spawn(process.execPath, [MAIN, "watch", "(cat ?x)", "-c", "CxPets", "--from", String(from), "--count", "2", "--wait-ms", "5000", "--url", d.url], { stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise((r) => p.once("exit", r));
    let out = "";
    p.stdout.on("data", (b: Buffer) => (out += b.toString()));
    await koinii("assert", "(cat Tom)", "-c", "CxPets");
    await koinii("assert", "(dog Rex)", "-c", "CxPets");
    await koinii("assert", "(cat Felix)", "-c", "CxPets");
    expect(await exited).toBe(0);
    const lines = out.trim().split("\n").map((l) => JSON.parse(l) as { added: { bindings: Record<string, string> }[] });
    expect(lines.map((e) => e.added[0]!.bindings)).toEqual([{ "?x": "Tom" }, { "?x": "Felix" }]);
  });
});
