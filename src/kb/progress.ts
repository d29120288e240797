/**
 * Long work says how far it got: a `ProgressMeter` counts units of work and, at most every
 * `intervalMs`, hands a `Progress` report (done, total when known, rate) to a sink. The
 * caller decides where a report goes (the CLI prints one line on stderr; `--quiet` passes
 * no sink). Used by the store's reopen and the mail agent's sync.
 *
 *   const sink = { report: (p) => process.stderr.write(progressLine(p) + "\n"), intervalMs: 2000 };
 *   const m = new ProgressMeter("reopening the store", "sentexes", sink, { total: 1_000_000 });
 *   for (const row of rows) { ...; m.tick(); }
 *   m.end(); // one last report when any was made
 */

/** How often a long job reports, unless its caller says otherwise. */
export const DEFAULT_PROGRESS_INTERVAL_MS = 2000;

export interface Progress {
  what: string;
  unit: string;
  done: number;
  total?: number;
  elapsedMs: number;
  /** Units per second since the start. */
  rate: number;
  final: boolean;
}

/** Where reports go and how often: the CLI's `--quiet` passes none, `--progress-interval-ms` sets the interval. */
export interface ProgressSink {
  report(p: Progress): void;
  intervalMs?: number;
}

export class ProgressMeter {
  private done = 0;
  private reported = false;
  private readonly startedMs: number;
  private nextReportMs: number;

  constructor(
    readonly what: string,
    readonly unit: string,
    private readonly sink: ProgressSink | undefined,
    private readonly opts: { total?: number; now?: () => number } = {},
  ) {
    this.startedMs = this.now();
    this.nextReportMs = this.startedMs + this.intervalMs;
  }

  private get intervalMs(): number {
    return this.sink?.intervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** Count `n` units; report when the interval has passed. */
  tick(n = 1): void {
    this.done += n;
    if (!this.sink) return;
    const t = this.now(); // Date.now is some 25 ns: a million ticks cost 25 ms
    if (t >= this.nextReportMs) {
      this.report(t, false);
      this.nextReportMs = t + this.intervalMs;
    }
  }

  /** The work is over: a last report, only if the job was long enough to report at all. */
  end(): void {
    if (this.sink && this.reported) this.report(this.now(), true);
  }

  private report(t: number, final: boolean): void {
    this.reported = true;
    const elapsedMs = Math.max(1, t - this.startedMs);
    const p: Progress = { what: this.what, unit: this.unit, done: this.done, elapsedMs, rate: (this.done * 1000) / elapsedMs, final };
    if (this.opts.total !== undefined) p.total = this.opts.total;
    this.sink!.report(p);
  }
}

/** One line for a person: `koinii: reopening the store: 120 000 / 1 000 000 sentexes (12%), 450 000/s, 0.3 s`. */
export function progressLine(p: Progress): string {
  const n = (x: number) => Math.round(x).toLocaleString("en-US").replace(/,/g, " ");
  const of = p.total !== undefined ? ` / ${n(p.total)}` : "";
  const pct = p.total ? ` (${Math.floor((100 * p.done) / p.total)}%)` : "";
  return `koinii: ${p.what}${p.final ? " done" : ""}: ${n(p.done)}${of} ${p.unit}${pct}, ${n(p.rate)}/s, ${(p.elapsedMs / 1000).toFixed(1)} s`;
}
