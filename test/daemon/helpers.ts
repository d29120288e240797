/**
 * Spawn the real daemon from dist/ on loopback with a random port and a temp data dir, and
 * speak to it. The global setup has built dist/ already.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:net";

export const MAIN = join(process.cwd(), "dist/src/cli/main.js");

export interface Daemon {
  url: string;
  port: number;
  dataDir: string;
  proc: ChildProcess;
  stderr: () => string;
  /** Resolves with the exit code (or signal name), once the stderr pipe is read to its end. */
  exited: Promise<number | string>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

export const tempDir = (): string => mkdtempSync(join(tmpdir(), "koinii-test-"));

export async function spawnDaemon(opts: { args?: string[]; env?: Record<string, string | undefined>; dataDir?: string } = {}): Promise<Daemon> {
  const dataDir = opts.dataDir ?? tempDir();
  const env: Record<string, string | undefined> = { ...process.env, KOINII_ADMIN_TOKEN: undefined, ...opts.env };
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
  const proc = spawn(process.execPath, [MAIN, "serve", "--port", "0", "--data", dataDir, ...(opts.args ?? [])], { env: env as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  // After the exit, the stderr pipe may still hold the last lines: wait for its end (at most
  // a second, in case something else holds the pipe) so `stderr()` has everything logged.
  const stderrEnded = new Promise<void>((resolve) => proc.stderr!.once("end", resolve));
  const exited = new Promise<number | string>((resolve) =>
    proc.once("exit", (code, signal) => {
      const status = code ?? signal ?? -1;
      const late = setTimeout(() => resolve(status), 1_000);
      void stderrEnded.then(() => (clearTimeout(late), resolve(status)));
    }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    proc.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /koinii listening on (http:\/\/\S+)\n/.exec(out);
      if (m) resolve(m[1]!);
    });
    void exited.then((code) => reject(new Error(`daemon exited (${code}) before listening: ${err}`)));
  });
  return {
    url,
    port: Number(new URL(url).port),
    dataDir,
    proc,
    stderr: () => err,
    exited,
    async stop(signal = "SIGTERM") {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** One request; `body` is JSON-encoded unless `raw` is given. */
export async function call(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  opts: { token?: string; headers?: Record<string, string>; raw?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (body !== undefined || opts.raw !== undefined) headers["content-type"] = "application/json";
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  Object.assign(headers, opts.headers);
  const res = await fetch(url + path, { method, headers, body: opts.raw ?? (body === undefined ? undefined : JSON.stringify(body)) });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

/**
 * A raw HTTP/1.1 exchange: write `head` (text or bytes, and nothing else; the socket stays
 * open) and read everything the daemon sends until it closes the connection.
 */
export function rawExchange(port: number, head: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, "127.0.0.1");
    let data = "";
    sock.on("data", (d) => (data += d.toString()));
    sock.on("end", () => resolve(data));
    sock.on("close", () => resolve(data));
    sock.on("error", reject);
    sock.write(head);
  });
}

/**
 * A raw client that may keep sending after the server has answered: half-open (it writes on
 * past the server's FIN, as undici's body writer does). `answer` gathers every byte read,
 * `answered` resolves once the answer's headers are in, `errors` collects socket error codes.
 */
export function halfOpenClient(port: number) {
  const sock = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
  const c = { sock, answer: "", errors: [] as string[], answered: undefined as unknown as Promise<void>, closed: undefined as unknown as Promise<void> };
  sock.on("error", (e: NodeJS.ErrnoException) => c.errors.push(e.code ?? e.message));
  c.answered = new Promise<void>((resolve) => sock.on("data", (d: Buffer) => ((c.answer += d.toString()), c.answer.includes("\r\n\r\n") && resolve())));
  c.closed = new Promise<void>((resolve) => sock.on("close", () => resolve()));
  return c;
}

/**
 * Send `head` (which declares a body of `total` bytes), wait for the server's answer from the
 * headers, then send that body anyway, `chunk` bytes every `gapMs`, and end: what a client
 * still writing an over-limit body sees. Resolves once the connection has closed.
 */
export async function sendPastAnswer(port: number, head: string, total: number, chunk: number, gapMs: number): Promise<{ answer: string; errors: string[]; sent: number }> {
  const c = halfOpenClient(port);
  c.sock.write(head);
  await c.answered;
  let sent = 0;
  for (; sent < total && !c.sock.destroyed; sent += chunk) {
    await new Promise<void>((resolve) => c.sock.write("x".repeat(chunk), () => resolve()));
    await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
  c.sock.end();
  await c.closed;
  return { answer: c.answer, errors: c.errors, sent };
}

/** Read SSE frames from a streaming fetch body until `until` says stop. */
export async function readSse(
  res: Response,
  until: (frames: SseFrame[]) => boolean,
): Promise<SseFrame[]> {
  const frames: SseFrame[] = [];
  if (until(frames)) return frames;
  for await (const chunk of sseChunks(res)) {
    frames.push(...chunk);
    if (until(frames)) break;
  }
  return frames;
}

/**
 * The frames of a streaming fetch body, a chunk's worth at a time, until the stream ends
 * (or the caller stops iterating: the body is then cancelled).
 */
export async function* sseChunks(res: Response): AsyncGenerator<SseFrame[]> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      const frames: SseFrame[] = [];
      let i: number;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const f: SseFrame = { comment: [] };
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) f.comment.push(line.slice(1).trim());
          else if (line.startsWith("id: ")) f.id = line.slice(4);
          else if (line.startsWith("event: ")) f.event = line.slice(7);
          else if (line.startsWith("data: ")) f.data = JSON.parse(line.slice(6));
        }
        frames.push(f);
      }
      yield frames;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

export interface SseFrame {
  id?: string;
  event?: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data?: any;
  comment: string[];
}

/** Lease flags for tests of a cluster on PostgreSQL: short, so a failover costs seconds. */
const TEST_LEASE = ["--lease-ms", "2000", "--lease-renew-ms", "200", "--follow-poll-ms", "200"];

/** A daemon of a cluster on the PostgreSQL database `url`, with the test lease (the first one started writes). */
export const spawnClusterDaemon = (url: string, extraArgs: string[] = [], env?: Record<string, string | undefined>): Promise<Daemon> =>
  spawnDaemon({ args: ["--store", url, ...TEST_LEASE, ...extraArgs], env });

/**
 * Poll `probe` every 20 ms until it answers a value, at most `ms`; a probe that throws
 * counts as no value yet (a daemon that is restarting), and its last error is named if
 * time runs out.
 */
export async function eventually<T>(probe: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    const v = await probe().catch((e: unknown) => ((last = e), undefined));
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`not within ${ms} ms${last === undefined ? "" : ` (last error: ${last instanceof Error ? last.message : String(last)})`}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
