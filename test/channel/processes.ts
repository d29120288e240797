/** Run the fixture agent (dist/test/channel/fixtures/agent.js) as a separate OS process. */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { FIXTURES } from "./helpers.js";

export const AGENT = join(FIXTURES, "agent.js");

/** Run one command to completion and parse its JSON line. */
export function runAgent(url: string, token: string | undefined, agentId: string, ...args: string[]): Promise<any> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [AGENT, url, token ?? "-", agentId, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    p.once("exit", (code) => (code === 0 ? resolve(JSON.parse(out.trim().split("\n").pop()!)) : reject(new Error(`agent ${agentId} ${args[0]} exited ${code}: ${err}`))));
  });
}

export interface Running {
  proc: ChildProcess;
  /** Every JSON line printed so far. */
  lines: any[];
  stderr: () => string;
  exited: Promise<number | string>;
}

/** Start a long-running agent command (responder). */
export function startAgent(url: string, token: string | undefined, agentId: string, ...args: string[]): Running {
  const proc = spawn(process.execPath, [AGENT, url, token ?? "-", agentId, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  const lines: any[] = [];
  let buf = "";
  let err = "";
  proc.stdout!.on("data", (d: Buffer) => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      lines.push(JSON.parse(buf.slice(0, i)));
      buf = buf.slice(i + 1);
    }
  });
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | string>((r) => proc.once("exit", (code, signal) => r(code ?? signal ?? -1)));
  return { proc, lines, stderr: () => err, exited };
}
