/**
 * docs/tutorial.md is true: every `sh` block runs in order, as written, against a real
 * daemon started by the tutorial's own daemon block (on a free port instead of 4200), each
 * in its terminal (shell variables a block sets carry to that terminal's later blocks, never
 * to another's), and each `text` block after a command block must appear in its output, in
 * order (handle and seq numbers may differ).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = new URL("../../", import.meta.url).pathname;
const DOC = readFileSync(join(ROOT, "docs/tutorial.md"), "utf8");

interface Block {
  kind: "skip" | "daemon" | "run";
  terminal: string;
  code: string;
  expected: string[];
}

/** The tutorial's sh blocks with their `<!-- test: ... -->` marks and the text block after each. */
function blocks(md: string): Block[] {
  const out: Block[] = [];
  let mark: "skip" | "daemon" | "run" = "run";
  let terminal = "";
  const re = /<!-- test: (skip|daemon|terminal (\w+)) -->|```(sh|text)\n([\s\S]*?)```/g;
  for (const m of md.matchAll(re)) {
    if (m[1]) {
      mark = m[1] === "skip" ? "skip" : m[1] === "daemon" ? "daemon" : "run";
      if (m[2]) terminal = m[2];
    } else if (m[3] === "sh") {
      out.push({ kind: mark, terminal, code: m[4]!, expected: [] });
      mark = "run";
    } else out.at(-1)!.expected.push(...m[4]!.trimEnd().split("\n"));
  }
  return out;
}

/** An expected line as a whole-line pattern in which any number may differ. */
const pattern = (line: string) => new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/\d+/g, "\\d+")}$`);

const work = mkdtempSync(join(tmpdir(), "koinii-tutorial-"));
for (const d of ["dist", "contexts", "node_modules", "package.json"]) symlinkSync(join(ROOT, d), join(work, d));
let daemon: ChildProcess | undefined;
afterAll(async () => {
  if (daemon && daemon.exitCode === null) {
    const gone = new Promise((r) => daemon!.once("exit", r));
    daemon.kill("SIGTERM");
    await gone;
  }
  rmSync(work, { recursive: true, force: true });
});

describe("docs/tutorial.md, run as written", () => {
  const all = blocks(DOC);

  it("has the walkthrough's steps: a daemon, two agents' terminals, and commands with outputs to check", () => {
    expect(all.filter((b) => b.kind === "daemon")).toHaveLength(1);
    expect(new Set(all.filter((b) => b.kind === "run").map((b) => b.terminal))).toEqual(new Set(["atlas", "boreas"]));
    for (const verb of ["pose", "answer", "dispute", "rule", "why"]) expect(DOC).toContain(`main.js ${verb} `);
  });

  it("every command runs in order and prints what the tutorial shows", { timeout: 300_000 }, async () => {
    const vars = new Map<string, Map<string, string>>();
    let url = "";
    for (const b of all) {
      if (b.kind === "skip") continue;
      if (b.kind === "daemon") {
        const cmd = b.code.trim().replace("--port 4200", "--port 0");
        daemon = spawn("bash", ["-c", `exec ${cmd}`], { cwd: work, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KOINII_ADMIN_TOKEN: "" } });
        url = await new Promise<string>((resolve, reject) => {
          let out = "";
          daemon!.stdout!.on("data", (d: Buffer) => {
            out += d.toString();
            const m = /koinii listening on (http:\/\/\S+)/.exec(out);
            if (m) resolve(m[1]!);
          });
          daemon!.once("exit", (c) => reject(new Error(`the tutorial's daemon exited ${c}`)));
        });
        continue;
      }
      const mine = vars.get(b.terminal) ?? new Map<string, string>();
      vars.set(b.terminal, mine);
      const assigned = [...b.code.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!);
      const prelude = [...mine].map(([k, v]) => `${k}=${JSON.stringify(v)}`).join("\n");
      const dump = assigned.map((k) => `echo "__var ${k}=$${k}"`).join("\n");
      const r = spawnSync("bash", ["-e", "-o", "pipefail", "-c", `${prelude}\n${b.code}\n${dump}`], { cwd: work, encoding: "utf8", env: { ...process.env, KOINII_URL: url } });
      expect(r.stderr, b.code).toBe("");
      expect(r.status, b.code).toBe(0);
      const lines = r.stdout.trimEnd().split("\n");
      for (const l of lines) {
        const m = /^__var (\w+)=(.*)$/.exec(l);
        if (m) {
          expect(m[2], `${m[1]} is set`).not.toBe("");
          mine.set(m[1]!, m[2]!);
        }
      }
      const printed = lines.filter((l) => !l.startsWith("__var "));
      let at = 0;
      for (const want of b.expected) {
        const p = pattern(want);
        while (at < printed.length && !p.test(printed[at]!)) at++;
        expect(at < printed.length, `${b.code}\nshould print, in order:\n${want}\nprinted:\n${printed.join("\n")}`).toBe(true);
        at++;
      }
    }
  });
});
