/**
 * The WAL fsyncs of `full` durability (store.ts): committed groups wait here for the fsync
 * that makes them durable, and are answered in commit order when it returns.
 *
 * One fsync runs at a time, on libuv's thread pool, off the event loop; the groups committed
 * while it runs wait for the next one, which starts as soon as it returns and covers them
 * all. Two other policies were measured in the wire bench and not kept (docs/benchmarks.md,
 * "Group commit at `full` under 8 clients"): a second fsync in flight, and holding the next
 * fsync until as many writers wait as the last one answered.
 *
 *   const sync = new WalSync(fd, fs.fsync, (err) => store.abort(err));
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

export class WalSync {
  /** Committed groups no fsync covers yet. */
  private unsynced: Group[] = [];
  /** The groups the running fsync covers, and its end. */
  private running: { groups: Group[]; returned: Promise<void> } | undefined;
  private failed = false;
  /** The fsyncs run so far and their total time (for metrics: what a group waits). */
  readonly stats = { count: 0, seconds: 0 };

  constructor(
    private readonly fd: number,
    private readonly fsyncFn: FsyncFn,
    /** The disk refused: every group not yet answered is rejected first (fail-stop). */
    private readonly onError: (err: NodeJS.ErrnoException) => void,
  ) {}

  /** A group was committed: it is answered once an fsync started after this covers it. */
  committed(g: Group): void {
    this.unsynced.push(g);
    this.syncNext();
  }

  /** The newest group not yet answered (a later `durable()` waits for it). */
  lastGroup(): Group | undefined {
    return this.unsynced[this.unsynced.length - 1] ?? this.running?.groups.at(-1);
  }

  /** Resolves once every group committed so far is answered (or rejected). */
  async drain(): Promise<void> {
    while (this.running) await this.running.returned;
  }

  /** Start an fsync covering every group committed so far, unless one runs (its return starts the next). */
  private syncNext(): void {
    if (this.running || this.failed || this.unsynced.length === 0) return;
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
        for (const g of [...run.groups, ...this.unsynced]) for (const w of g.waiters) w.reject(err);
        this.unsynced = [];
        this.onError(err);
      } else {
        for (const g of run.groups) release(g);
        this.syncNext();
      }
      done();
    });
  }
}
