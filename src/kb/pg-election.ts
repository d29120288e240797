/**
 * The writer election on PostgreSQL (docs/cluster.md, "The election"): the writer lock, a
 * SESSION-level advisory lock the writer holds on a dedicated session for as long as it
 * writes, and the lease row it is elected through.
 *
 *   const lock = await WriterLock.connect(config, (e) => store.abort(e));
 *   if (await lock.tryTake()) epoch = await lock.elect(holder, leaseMs, url); // holding the lock: take over
 *   else { await evictExpired(pool); await lock.wait(); ... }               // blocks until the writer's session ends
 *
 * Liveness: PostgreSQL ends a dead process's sessions (its sockets close) and so frees its
 * lock at once; a follower blocked in `pg_advisory_lock` is granted it and is elected
 * without waiting for the lease to run out. Only the lock's holder runs for election, so
 * contenders never race on the row, and holding the lock is itself the proof that whoever
 * the lease names has lost its lock session: the holder takes over (epoch + 1) whether the
 * lease has run out or not.
 *
 * The lease stays the rule for a writer that is alive but paused or cut off (it still holds
 * the lock): once the lease has run out by PostgreSQL's clock, any follower ends that
 * writer's sessions (`pg_terminate_backend` of every backend with the old holder's
 * `application_name`, its lock session among them), which frees the lock and the row locks
 * its commit transactions held.
 *
 * Safety does not rest on the lock: every commit transaction checks the lease's holder and
 * epoch (pgstore.ts). The lock only decides WHEN an election may run.
 */
import pg from "pg";

/** The writer lock's key (session-scoped): "koinii-w" in ASCII, as a bigint. */
export const WRITER_LOCK = "7741522207408991607";

/** A session's `application_name` is at most 63 bytes (NAMEDATALEN - 1): the tag every session of one store carries. */
export const sessionTag = (holder: string): string => Buffer.from(holder).subarray(0, 63).toString();

export class WriterLock {
  /** True once this session holds the writer lock (until it ends). */
  held = false;
  private waiting = false;
  private ended = false;

  private constructor(
    private readonly client: pg.Client,
    /** This session's backend pid: the lease row records it while this daemon writes. */
    readonly pid: number,
  ) {}

  /** A dedicated session; `onLost` hears it end unexpectedly (the server ended it, the network cut it). */
  static async connect(config: pg.ClientConfig, onLost: (e: Error) => void): Promise<WriterLock> {
    const client = new pg.Client(config);
    await client.connect();
    let lock: WriterLock | undefined;
    const lost = (e: Error) => {
      if (lock && !lock.ended) {
        lock.ended = true;
        onLost(e);
      }
    };
    client.on("error", lost);
    client.on("end", () => lost(new Error("the session holding (or waiting for) the writer lock ended")));
    try {
      const pid = (await client.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]!.pid;
      lock = new WriterLock(client, pid);
      return lock;
    } catch (e) {
      await client.end().catch(() => {});
      throw e;
    }
  }

  /** Take the lock if it is free (no wait). */
  async tryTake(): Promise<boolean> {
    if (this.held) return true;
    this.held = (await this.client.query<{ ok: boolean }>("select pg_try_advisory_lock($1::bigint) as ok", [WRITER_LOCK])).rows[0]!.ok;
    return this.held;
  }

  /**
   * Block until the lock is ours: the writer's session ended (it died, stepped down, or was
   * evicted). The wait is a statement with no timeout; `cancel` ends it.
   */
  async wait(): Promise<void> {
    if (this.held) return;
    this.waiting = true;
    try {
      await this.client.query("set statement_timeout = 0; set lock_timeout = 0");
      await this.client.query("select pg_advisory_lock($1::bigint)", [WRITER_LOCK]);
      this.held = true;
      await this.client.query("reset statement_timeout; reset lock_timeout");
    } finally {
      this.waiting = false;
    }
  }

  /** End a `wait` in flight (from another session of `pool`). */
  async cancel(pool: pg.Pool): Promise<void> {
    if (this.waiting) await pool.query("select pg_cancel_backend($1)", [this.pid]).catch(() => {});
  }

  /**
   * The election, run while holding the lock: take the lease row (it waits for a commit
   * in flight, which holds its lock, up to lock_timeout), name this holder
   * with epoch + 1. Undefined when the row stayed locked past lock_timeout (try again).
   */
  async elect(holder: string, leaseMs: number, url: string | null): Promise<number | undefined> {
    if (!this.held) throw new Error("invariant: only the writer lock's holder runs for election");
    try {
      const r = await this.client.query<{ epoch: number }>(
        "update lease set holder = $1, epoch = epoch + 1, expires_at = clock_timestamp() + make_interval(secs => $2::float8 / 1000), url = $3, pid = $4 where name = 'writer' returning epoch",
        [holder, leaseMs, url, this.pid],
      );
      return r.rows[0]!.epoch;
    } catch (e) {
      if ((e as { code?: string }).code === "55P03") return undefined;
      throw e;
    }
  }

  /** End the session (and so release the lock, if held). */
  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    await this.client.end().catch(() => {});
  }
}

/**
 * Read the lease; when it has run out by PostgreSQL's clock, end every session of the daemon
 * it names (its lock session, whose pid the row records, and the sessions whose row locks a
 * paused commit may hold), so the lock is freed for the next election. Returns the lease as
 * read: the writer's URL while it is live.
 */
export async function readLeaseEvicting(pool: pg.Pool): Promise<{ url: string | null; live: boolean; evicted: number }> {
  const lease = (await pool.query<{ url: string | null; live: boolean; holder: string }>("select url, holder, expires_at > clock_timestamp() as live from lease where name = 'writer'")).rows[0]!;
  if (lease.live || lease.holder === "") return { url: lease.url, live: lease.live, evicted: 0 };
  const r = await pool.query<{ n: number }>(
    "select count(*)::int as n from (select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and datname = current_database() and pid <> pg_backend_pid()) t",
    [sessionTag(lease.holder)],
  );
  return { url: lease.url, live: false, evicted: r.rows[0]!.n };
}
