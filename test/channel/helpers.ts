/**
 * Rigs for the channel tests: the same test body runs over the local medium (an in-process
 * KB on a temp file) and the wire medium (a real daemon process from dist/).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { onTestFinished } from "vitest";
import { openKb, type Kb } from "../../src/kb/index.js";
import { local, wire, type Medium } from "../../src/channel/index.js";

export const ROOT = resolve(import.meta.dirname, "../..");
export const MAIN = join(ROOT, "dist/src/cli/main.js");
export const CONTEXTS_DIR = join(ROOT, "contexts");
export const FIXTURES = join(ROOT, "dist/test/channel/fixtures");
export const ADMIN_TOKEN = "channel-test-admin-token-0123456789";

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "koinii-channel-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface Daemon {
  url: string;
  dataDir: string;
  proc: ChildProcess;
  stderr: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

/** Spawn `koinii serve --port 0` on a temp data dir (or the given one) and wait for its listening line. */
export async function spawnDaemon(opts: { args?: string[]; adminToken?: string; dataDir?: string } = {}): Promise<Daemon> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "koinii-channel-d-"));
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.KOINII_ADMIN_TOKEN;
  if (opts.adminToken) env.KOINII_ADMIN_TOKEN = opts.adminToken;
  const proc = spawn(process.execPath, [MAIN, "serve", "--port", "0", "--data", dataDir, "--durability", "normal", ...(opts.args ?? [])], { env, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | string>((r) => proc.once("exit", (code, signal) => r(code ?? signal ?? -1)));
  const url = await new Promise<string>((res, rej) => {
    let out = "";
    proc.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /koinii listening on (http:\/\/\S+)\n/.exec(out);
      if (m) res(m[1]!);
    });
    void exited.then((code) => rej(new Error(`daemon exited (${code}) before listening: ${err}`)));
  });
  return {
    url,
    dataDir,
    proc,
    stderr: () => err,
    async stop(signal = "SIGTERM") {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}

export async function freshKb(opts: { feedRetentionEvents?: number } = {}): Promise<Kb> {
  const kb = await openKb({ path: join(tempDir(), "kb.db"), contextsDir: CONTEXTS_DIR, durability: "normal", ...opts });
  onTestFinished(() => kb.close());
  return kb;
}

export type MediumKind = "local" | "wire";

export interface Rig {
  kind: MediumKind;
  /** A medium every agent of the test may share (open mode over the wire: creator from the body). */
  medium: Medium;
  /** Another connection to the same KB (a second process, over the wire). */
  another(): Medium;
  kb?: Kb;
  daemon?: Daemon;
}

/** A fresh KB behind the medium of the given kind; torn down when the test finishes. */
export async function rig(kind: MediumKind, opts: { daemonArgs?: string[]; feedRetentionEvents?: number; maxEvents?: number } = {}): Promise<Rig> {
  if (kind === "local") {
    const kb = await freshKb({ feedRetentionEvents: opts.feedRetentionEvents });
    const feed = opts.maxEvents === undefined ? {} : { maxEvents: opts.maxEvents };
    const medium = local(kb, feed);
    return { kind, medium, another: () => local(kb, feed), kb };
  }
  const daemon = await spawnDaemon({ args: opts.daemonArgs });
  const opened: Medium[] = [];
  const open = () => {
    const m = wire({ url: daemon.url });
    opened.push(m);
    return m;
  };
  const medium = open();
  onTestFinished(async () => {
    for (const m of opened) await m.close();
    await daemon.stop();
    rmSync(daemon.dataDir, { recursive: true, force: true });
  });
  return { kind, medium, another: open, daemon };
}

/** Resolve when `pred` holds, polling every 10 ms; throws after `tries` checks. */
export async function eventually<T>(f: () => T | Promise<T>, pred: (v: T) => boolean, tries = 1000): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await f();
    if (pred(v)) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("condition never held");
}

/** A promise with its resolver, for holding a callback open. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}
