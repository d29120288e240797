/**
 * The WAL fsyncs of `full` durability (store.ts): committed groups wait here for the fsync
 * that makes them durable, and are answered in commit order when it returns.
 *
 * One fsync runs at a time, on libuv's thread pool, off the event loop; the groups committed
 * while it runs gather for the next one. A closed loop of HTTP writers splits into cohorts:
 * the writers one fsync answered come back while the others' group is already committed,
 * and if that group's fsync started at once the two cohorts would alternate for good, an
 * fsync each. So the next fsync **gathers**: it starts once as many writers wait as the
 * last fsync answered plus those that were already waiting then (the writers likely to be
 * back), or `gatherMs` after that fsync returned, whichever comes first. A lone writer is
 * never held (it is the one the last fsync answered); a writer that does not come back
 * costs the others at most `gatherMs`.
 *
 *   const sync = new WalSync(fd, fs.fsync, 1, (err) => store.abort(err));
 *   sync.committed({ waiters: [w], after: [publish] }); // answered once an fsync covers it
 */
import { performance } from "node:perf_hooks";

/** The fsync seam: node's `fs.fsync` unless a test simulates the disk (a power cut). */
export type FsyncFn = (fd: number, callback: (err: NodeJS.ErrnoException | null) => void) => void;

export interface Waiter {
  resolve: () => void;
  reject: (e: unknown) => void;
}

/** One committed group: its writers, and what runs before they are answered (publishing its events). */
export interface Group {
  waiters: Waiter[];
  after: (() => void)[];
}

/** A durable group: publish its events, then answer its writers. */
export function release(g: Group): void {
  for (const fn of g.after) fn();
  for (const w of g.waiters) w.resolve();
}

/** How long the next fsync may wait for the writers the last one answered, by default (ms). */
export const DEFAULT_FSYNC_GATHER_MS = 1;

const writers = (groups: readonly Group[]) => groups.reduce((n, g) => n + g.waiters.length, 0);

export class WalSync {
  /** Committed groups no fsync covers yet. */
  private unsynced: Group[] = [];
  /** The groups the running fsync covers, and its end. */
  private running: { groups: Group[]; returned: Promise<void> } | undefined;
  /** The next fsync starts once this many writers wait, or at `gatherUntil` (performance.now ms). */
  private gatherWriters = 0;
  private gatherUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  private failed = false;
  /** The fsyncs run so far and their total time (for metrics: what a group waits). */
  readonly stats = { count: 0, seconds: 0 };

  constructor(
    private readonly fd: number,
    private readonly fsyncFn: FsyncFn,
    private readonly gatherMs: number,
    /** The disk refused: every group not yet answered is rejected first (fail-stop). */
    private readonly onError: (err: NodeJS.ErrnoException) => void,
  ) {
    if (!Number.isFinite(gatherMs) || gatherMs < 0) throw new RangeError(`fsyncGatherMs must be a number of milliseconds >= 0, not ${gatherMs}`);
  }

  /** A group was committed: it is answered once an fsync started after this covers it. */
  committed(g: Group): void {
    this.unsynced.push(g);
    this.schedule();
  }

  /** The newest group not yet answered (a later `durable()` waits for it). */
  lastGroup(): Group | undefined {
    return this.unsynced[this.unsynced.length - 1] ?? this.running?.groups.at(-1);
  }

  /** Resolves once every group committed so far is answered (or rejected); gathering stops. */
  async drain(): Promise<void> {
    this.gatherUntil = 0;
    this.schedule();
    while (this.running) await this.running.returned;
  }

  private schedule(): void {
    if (this.running || this.failed || this.unsynced.length === 0) return;
    const wait = this.gatherUntil - performance.now();
    if (wait > 0 && writers(this.unsynced) < this.gatherWriters) {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.gatherUntil = 0;
        this.schedule();
      }, wait);
      return;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    this.start();
  }

  private start(): void {
    let done!: () => void;
    const run = { groups: this.unsynced, returned: new Promise<void>((r) => (done = r)) };
    this.unsynced = [];
    this.running = run; // before the call: a seam may answer synchronously
    const started = performance.now();
    this.fsyncFn(this.fd, (err) => {
      this.stats.count++;
      this.stats.seconds += (performance.now() - started) / 1000;
      this.running = undefined;
      if (err) {
        // Nothing the disk may have lost is acknowledged.
        this.failed = true;
        clearTimeout(this.timer);
        for (const g of [...run.groups, ...this.unsynced]) for (const w of g.waiters) w.reject(err);
        this.unsynced = [];
        this.onError(err);
      } else {
        const answered = writers(run.groups);
        this.gatherWriters = answered + writers(this.unsynced);
        this.gatherUntil = performance.now() + this.gatherMs;
        for (const g of run.groups) release(g);
        this.schedule();
      }
      done();
    });
  }
}
