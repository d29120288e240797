/**
 * The WAL fsyncs of `full` durability (store.ts): committed groups wait here for the fsync
 * that makes them durable, and are answered in commit order when it returns.
 *
 * One fsync runs at a time. It runs on libuv's thread pool, off the event loop; the groups
 * committed while it runs wait for the next one, which starts as soon as it returns and
 * covers them all. One case runs it inline instead, on the loop: a lone writer (the fsync
 * covers at most one writer) on a fast disk (the last fsync took at most `maxMs`), while the
 * owner knows of no other writer (`othersWriting`: the daemon's clients). Nothing else
 * gathers behind a lone writer, and the thread pool's handoff there and back (a worker
 * woken, then the loop) cost more than the fsync itself on this machine's disk; what else
 * arrives meanwhile waits at most that one fsync, bounded by `maxMs` (docs/benchmarks.md,
 * "A lone writer's fsync"). Two other policies were measured in the wire bench and not kept
 * ("Group commit at `full` under 8 clients"): a second fsync in flight, and holding the next
 * fsync until as many writers wait as the last one answered.
 *
 *   const sync = new WalSync(fd, fs.fsync, (err) => store.abort(err), { fsyncSync: fs.fsyncSync, maxMs: 1 });
 *   sync.committed({ waiters: [w], after: [publish] }); // answered once an fsync covers it
 */
import { performance } from "node:perf_hooks";

/** The fsync seam: node's `fs.fsync` unless a test simulates the disk (a power cut). */
export type FsyncFn = (fd: number, callback: (err: NodeJS.ErrnoException | null) => void) => void;

export interface Waiter {
  resolve: () => void;
  reject: (e: unknown) => void;
}

/** The inline fsync of a lone writer: the synchronous call, and the slowest last fsync that still allows it. */
export interface InlineFsync {
  fsyncSync: (fd: number) => void;
  /** An fsync runs inline only while the last one took at most this long (ms); 0 = never. */
  maxMs: number;
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
  readonly stats = { count: 0, seconds: 0, inline: 0 };
  /** How long the last fsync kept its writers waiting (ms): above `inline.maxMs`, the next goes to the thread pool. */
  private lastMs = 0;
  /**
   * Whether the owner knows of other writers that may be waiting for the loop (the daemon:
   * another client wrote lately, see src/daemon/writers.ts); while it says so, no fsync runs
   * inline. Without an owner that knows (a KB used in process), a lone group is alone.
   */
  othersWriting: () => boolean = () => false;

  constructor(
    private readonly fd: number,
    private readonly fsyncFn: FsyncFn,
    /** The disk refused: every group not yet answered is rejected first (fail-stop). */
    private readonly onError: (err: NodeJS.ErrnoException) => void,
    /** Unset: every fsync goes to the thread pool. */
    private readonly inline?: InlineFsync,
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
    const returned = (err: NodeJS.ErrnoException | null): void => {
      this.lastMs = performance.now() - started;
      this.stats.count++;
      this.stats.seconds += this.lastMs / 1000;
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
    };
    if (this.inline && this.inline.maxMs > 0 && this.lastMs <= this.inline.maxMs && writers(run.groups) <= 1 && !this.othersWriting()) {
      this.stats.inline++;
      let err: NodeJS.ErrnoException | null = null;
      try {
        this.inline.fsyncSync(this.fd);
      } catch (e) {
        err = e as NodeJS.ErrnoException;
      }
      returned(err);
    } else {
      this.fsyncFn(this.fd, returned);
    }
  }
}

function writers(groups: Group[]): number {
  let n = 0;
  for (const g of groups) n += g.waiters.length;
  return n;
}
