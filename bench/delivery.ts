/**
 * Delivery timing shared by the wire bench's parts: subscribers in a process of their own
 * (bench/fixtures/subscribers.ts) print `<marker> <epochMs>` per delivery; the writer
 * records when it sent each marker. A delivery that never arrives fails the run.
 */
import { spawn } from "node:child_process";
import { percentile } from "./lib.js";

export type Transport = "poll" | "sse" | "mixed" | "notify";

export interface Subscribers {
  pid: number;
  lines: string[];
  /** Events the daemon said these subscriptions lost (its `lagged` notices). */
  lagged: number;
  stop(): Promise<void>;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const epochNow = () => performance.timeOrigin + performance.now();

/** `count` subscriptions (or LISTEN connections) in a process of their own; resolves once all are open. */
export async function subscriberProcess(transport: Transport, target: string, count: number): Promise<Subscribers> {
  const child = spawn(process.execPath, ["dist/bench/fixtures/subscribers.js", transport, target, String(count)], { stdio: ["ignore", "pipe", "inherit"] });
  const lines: string[] = [];
  const subs = { lagged: 0 };
  let buf = "";
  let ready: () => void;
  let failed: (e: Error) => void;
  const isReady = new Promise<void>((res, rej) => ((ready = res), (failed = rej)));
  child.once("exit", (code) => failed(new Error(`subscriber process exited (${code}) before it was ready`)));
  child.stdout!.on("data", (d: Buffer) => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line === "ready") ready();
      else if (line.startsWith("lagged ")) subs.lagged += Number(line.slice(7));
      else lines.push(line);
    }
  });
  await isReady;
  return Object.assign(subs, {
    pid: child.pid!,
    lines,
    stop: (): Promise<void> =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  });
}

export async function waitFor(cond: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await sleep(20);
}

export interface Delivered {
  p50: number;
  p99: number;
  deliveries: number;
  /** Expected deliveries that never arrived (only when the caller allows it). */
  missing: number;
}

/**
 * Latencies of the timed deliveries (markers in `sentAt`; warm-up ones are not). Throws
 * when fewer than `expected` arrived: a lost delivery is a failure, not a missing sample.
 */
export function delivered(run: string, lines: string[], sentAt: Map<number, number>, expected: number, lagged = 0, allowMissing = false): Delivered {
  const lat: number[] = [];
  for (const l of lines) {
    const sp = l.indexOf(" ");
    const sent = sentAt.get(Number(l.slice(0, sp)));
    if (sent !== undefined) lat.push(Number(l.slice(sp + 1)) - sent);
  }
  const missing = expected - lat.length;
  if (missing && !allowMissing) throw new Error(`delivery run ${run}: ${lat.length} of ${expected} expected deliveries arrived (${missing} missing; the daemon reported ${lagged} lagged)`);
  lat.sort((a, b) => a - b);
  return { p50: percentile(lat, 50), p99: percentile(lat, 99), deliveries: lat.length, missing };
}
