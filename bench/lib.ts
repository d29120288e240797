/**
 * The benchmark harness: each suite records figures, prints them as a table and writes
 * `bench/results/<suite>.json` as `{figure: {value, unit, baseline?, ratio?, target?}}`.
 * Every baseline is measured in the same run as the figure it is compared with.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface Figure {
  value: number;
  unit: string;
  /** Name of the baseline figure this one is compared with (measured in the same run). */
  baseline?: string;
  /** value / baseline value, or baseline / value for "lower is better" units, so > 1 is better. */
  ratio?: number;
  /** The target, in words: "ratio >= 0.6", "value <= 20". */
  target?: string;
  /** Whether the target was met (absent when there is no target). */
  met?: boolean;
  note?: string;
}

export class Suite {
  readonly figures: Record<string, Figure> = {};
  constructor(readonly name: string) {}

  add(name: string, f: Figure): Figure {
    this.figures[name] = f;
    const r = f.ratio !== undefined ? ` (${f.ratio.toFixed(2)}x ${f.baseline})` : "";
    const t = f.target ? `  target ${f.target}: ${f.met ? "met" : "MISSED"}` : "";
    console.log(`  ${name}: ${fmt(f.value)} ${f.unit}${r}${t}${f.note ? `  [${f.note}]` : ""}`);
    return f;
  }

  /** Record `name` against baseline `base`; higherIsBetter decides the ratio's direction. */
  compare(name: string, value: number, unit: string, base: string, opts: { higherIsBetter: boolean; minRatio?: number; note?: string }): Figure {
    const b = this.figures[base];
    if (!b) throw new Error(`baseline ${base} not measured`);
    const ratio = opts.higherIsBetter ? value / b.value : b.value / value;
    const f: Figure = { value, unit, baseline: base, ratio };
    if (opts.minRatio !== undefined) {
      f.target = `ratio >= ${+opts.minRatio.toFixed(2)}`;
      f.met = ratio >= opts.minRatio;
    }
    if (opts.note) f.note = opts.note;
    return this.add(name, f);
  }

  write(): void {
    const dir = join(process.cwd(), "bench", "results");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${this.name}.json`), JSON.stringify(this.figures, null, 2) + "\n");
    console.log(`\n  wrote bench/results/${this.name}.json`);
    console.table(
      Object.fromEntries(
        Object.entries(this.figures).map(([k, f]) => [k, { value: fmt(f.value), unit: f.unit, ratio: f.ratio === undefined ? "" : f.ratio.toFixed(2), vs: f.baseline ?? "", target: f.target ?? "", met: f.met === undefined ? "" : f.met ? "yes" : "NO" }]),
      ),
    );
  }
}

export function fmt(v: number): string {
  if (Number.isInteger(v)) return String(v);
  if (Math.abs(v) >= 100) return v.toFixed(0);
  if (Math.abs(v) >= 1) return v.toFixed(2);
  return v.toPrecision(3);
}

/**
 * Untimed runs of each side before its timed ones, in the benches that time whole runs (kb's
 * rates, B14; rules' materializations, B16). In a fresh process our first runs pay V8
 * compiling the path: 5 000 single asserts took 76 and 61 us an assert, the next ones 45-53;
 * chain200's first three materializations took 56-67, 22-32 and 10-13 ms, later ones 7-9 ms.
 */
export const WARMUP_RUNS = 2;

export const nowNs = (): bigint => process.hrtime.bigint();
export const elapsedMs = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g) {
    g();
    g();
  }
}

export function heapUsed(): number {
  gc();
  return process.memoryUsage().heapUsed;
}

/** Resident memory (bytes) after a full GC: what the process holds from the OS, not only the JS heap. */
export function rss(): number {
  gc();
  return process.memoryUsage().rss;
}

export interface LoopResult {
  /** Operations completed (each answered). */
  ops: number;
  /** ops / seconds, the seconds from the first start to the last answer. */
  rps: number;
  /** Round trip of one operation, ms. */
  p50: number;
  p99: number;
  seconds: number;
}

/**
 * `clients` workers in this process, each running `op` in a closed loop (the next only once
 * the previous answered) until `ms` have passed; every operation's round trip is timed on
 * one clock. A figure and its baseline are driven by this same loop, so they differ only in
 * what `op` does. `op` gets the worker's index and must throw when its answer is a failure.
 */
export async function closedLoop(clients: number, ms: number, op: (client: number) => Promise<void>): Promise<LoopResult> {
  if (!(Number.isInteger(clients) && clients > 0 && ms > 0)) throw new Error(`invariant: closedLoop needs clients >= 1 and ms > 0, got ${clients}, ${ms}`);
  const lat: number[] = [];
  const t = nowNs();
  const deadline = t + BigInt(Math.round(ms * 1e6));
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      while (nowNs() < deadline) {
        const s = nowNs();
        await op(c);
        lat.push(Number(nowNs() - s) / 1e6);
      }
    }),
  );
  const seconds = elapsedMs(t) / 1000;
  lat.sort((a, b) => a - b);
  return { ops: lat.length, rps: lat.length / seconds, p50: percentile(lat, 50), p99: percentile(lat, 99), seconds };
}
