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
