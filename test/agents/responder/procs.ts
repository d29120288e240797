/**
 * Real processes for the responder's end-to-end tests: the local DM platform (node:http,
 * recording every send, able to hold one), the responder itself (`node dist/src/cli/main.js
 * responder ...`), and a poll-until helper.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type IncomingMessage, type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Medium } from "../../../src/channel/index.js";
import { type Daemon, MAIN } from "../../channel/helpers.js";

export interface Sent {
  conversationId: string;
  message: string;
  auth: string | undefined;
}

export interface Platform {
  url: string;
  sent: Sent[];
  server: Server;
  /** Called on each send after it is recorded; the platform answers once it resolves (never, to hold it). */
  beforeAnswer: (s: Sent) => Promise<void>;
}

/** The DM platform at the network boundary: records sends, serves empty threads. */
export async function startPlatform(): Promise<Platform> {
  const body = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  };
  const p: Platform = { url: "", sent: [], server: createServer(), beforeAnswer: async () => undefined };
  p.server.on("request", (req, res) => {
    void (async () => {
      const send = /^\/dm\/conversations\/([^/]+)\/send$/.exec(req.url ?? "");
      const thread = /^\/dm\/conversations\/([^/]+)$/.exec(req.url ?? "");
      if (req.method === "POST" && send) {
        const b = JSON.parse(await body(req)) as { message: string };
        const s = { conversationId: decodeURIComponent(send[1]!), message: b.message, auth: req.headers.authorization };
        p.sent.push(s);
        await p.beforeAnswer(s);
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true }));
      } else if (req.method === "GET" && thread) {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ messages: [] }));
      } else res.writeHead(404).end();
    })();
  });
  await new Promise<void>((r) => p.server.listen(0, "127.0.0.1", r));
  p.url = `http://127.0.0.1:${(p.server.address() as AddressInfo).port}`;
  return p;
}

export interface ResponderProc {
  url: string;
  proc: ChildProcess;
  stderr: () => string;
  exited: Promise<number | string>;
  /** The Authorization header its HTTP surface requires: the secret it generated at start into <data>/ingest.secret (mode 0600), as a feeding process reads it. */
  auth(): Record<string, string>;
}

/** Spawn `koinii responder <args>` with RESPONDER_ENABLED=1 and no model; resolves once it listens. */
export function spawnResponder(args: string[]): Promise<ResponderProc> {
  if (!args.includes("--data")) throw new Error("spawnResponder needs --data (its ingest secret is read from there)");
  const env: NodeJS.ProcessEnv = { ...process.env, RESPONDER_ENABLED: "1" };
  delete env.ANTHROPIC_API_KEY; // the deterministic composer: no model in the loop
  const proc = spawn(process.execPath, [MAIN, "responder", ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | string>((r) => proc.once("exit", (code, signal) => r(code ?? signal ?? -1)));
  return new Promise<ResponderProc>((resolve, reject) => {
    let out = "";
    proc.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /koinii responder listening on (http:\/\/\S+)\n/.exec(out);
      const data = args[args.indexOf("--data") + 1]!;
      const auth = () => ({ authorization: `Bearer ${readFileSync(join(data, "ingest.secret"), "utf8").trim()}` });
      if (m) resolve({ url: m[1]!, proc, stderr: () => err, exited, auth });
    });
    void exited.then((code) => reject(new Error(`responder exited (${code}) before listening: ${err}`)));
  });
}

/** SIGTERM the responder if it still runs, and wait for it to exit. */
export async function stopIfRunning(p: ResponderProc | null): Promise<void> {
  if (p === null || p.proc.exitCode !== null || p.proc.signalCode !== null) return;
  p.proc.kill("SIGTERM");
  await p.exited;
}

/** Poll `f` every 25 ms until `pred` holds; throws naming `what` after `ms`. */
export async function until<T>(f: () => T | Promise<T>, pred: (v: T) => boolean, what: string, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (pred(v)) return v;
    if (Date.now() > end) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface AuditLine {
  action: string;
  detail: Record<string, any>;
  hash: string;
}

/** The audit file's records, oldest first. */
export function auditLines(path: string): AuditLine[] {
  return readFileSync(path, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as AuditLine);
}

export interface ResponderFiles {
  dir: string;
  charterPath: string;
  auditPath: string;
  tokenFile: string;
}

/** A temp directory holding the platform token file (`obc.env`) and an enabled charter with these parts. */
export function responderFiles(prefix: string, jwt: string, charter: { allowlist: Record<string, string>; limits: Record<string, number>; escalate_keywords: string[]; voice: string }): ResponderFiles {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const tokenFile = join(dir, "obc.env");
  writeFileSync(tokenFile, `OPENBOTCITY_JWT=${jwt}\n`);
  const charterPath = join(dir, "charter.json");
  writeFileSync(charterPath, JSON.stringify({ version: 1, enabled: true, ...charter }));
  return { dir, charterPath, auditPath: join(dir, "audit.jsonl"), tokenFile };
}

/** Tear a rig down: the responder, the mediums, the daemon and the platform, then their directories. */
export async function teardown(parts: { responder: ResponderProc | null; mediums: (Medium | undefined)[]; daemon?: Daemon; platform?: Platform; dir?: string }): Promise<void> {
  await stopIfRunning(parts.responder);
  for (const m of parts.mediums) await m?.close();
  await parts.daemon?.stop();
  parts.platform?.server.close();
  if (parts.daemon) rmSync(parts.daemon.dataDir, { recursive: true, force: true });
  if (parts.dir) rmSync(parts.dir, { recursive: true, force: true });
}
