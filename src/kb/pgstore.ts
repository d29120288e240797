/**
 * The store of record on PostgreSQL (K13), through kysely's PostgresDialect and `pg`: the
 * same schema and migrations as the SQLite store (schema.ts), one writer fenced by a lease.
 *
 *   const store = await PgStore.open({ url: "postgres://koinii@db/koinii" }); // resolves once elected
 *   const kb = await openKb({ path: "", store });
 *
 * Group commit (K8, K9): the engine applies a write synchronously and its rows go into the
 * turn's open group (plain values in memory). A `setImmediate` closes the group and queues
 * it; commits run one at a time, in order, each ONE statement (`koinii_commit`, schema.ts)
 * in autocommit mode, so its own transaction. Only after it returns are the group's events
 * published and its writers answered. The groups that queued while a commit was in flight
 * are merged into the next commit (up to MERGE_MAX_ROWS rows); with no commit in flight,
 * the next one waits up to GATHER_MS while fewer writes are queued than the writers the
 * last commit saw.
 *
 * Fencing (one writer): `open` returns only once this store holds the writer lease (the
 * `lease` row), elected while holding the writer lock, a session advisory lock the writer
 * keeps for as long as it writes (pg-election.ts: its release when the writer dies starts
 * the next election at once). The election bumps the epoch, and the epoch goes into each
 * event row. Every commit first UPDATEs the lease row where it names our holder id and
 * epoch and is unexpired, extending it (so a committing writer needs no renewal), then
 * moves `head_seq` by compare-and-set from the head we last committed. An election
 * updates the same row, so it waits for a commit in flight and the commit that follows it
 * sees the new epoch and fails: a deposed writer commits nothing, and the new writer, which
 * reads the store after its election, sees every group the old one committed (no gap).
 * Losing the lease (a renewal that finds it gone, a commit refused) is a store failure
 * (K12); a renewal that only timed out on the row's lock is not, while the lease is valid
 * by this process's own bound (`renew`).
 *
 * Bounds, set on every session: `statement_timeout`, `lock_timeout` and
 * `idle_in_transaction_session_timeout` (a writer paused inside a transaction loses its
 * session and its row lock, so it cannot hold an election back for longer than that).
 */
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { Kysely, Migrator, PostgresDialect, sql } from "kysely";
import type { StoredRow, RawRow } from "./write.js";
import { withLocators, type FeedEvent } from "./event.js";
import { HEAD_MOVED, LEASE_LOST, migrationProvider, type Schema } from "./schema.js";
import { checkMemberForget, PgMembers } from "./pgmembers.js";
import { WriterLock, readLeaseEvicting, sessionTag } from "./pg-election.js";
import { idempotencyRow, NotWriterError, type Cluster, type ClusterMember, type IdempotencyRow, type LoggedEvent, type PrincipalRow, type StoreMeta, type StoreOfRecord } from "./store-of-record.js";

/** Named bounds of the PostgreSQL store, each in milliseconds. */
export interface PgLimits {
  /** How long an election holds the writer lease without a renewal. */
  leaseMs: number;
  /** How often the writer renews its lease, and a standby tries to take an expired one. */
  leaseRenewMs: number;
  /** `statement_timeout` of every session. */
  statementTimeoutMs: number;
  /** `lock_timeout` of every session. */
  lockTimeoutMs: number;
  /** `idle_in_transaction_session_timeout` of every session. */
  idleInTransactionMs: number;
  /** A follower reads the head this often when no NOTIFY woke it (the fallback when notifications are lost). */
  followPollMs: number;
  /** A member row not seen for this long is deleted (pgmembers.ts); more than 3 x leaseMs. */
  memberForgetMs: number;
}

export const DEFAULT_PG_LIMITS: PgLimits = {
  leaseMs: 5_000,
  leaseRenewMs: 1_000,
  statementTimeoutMs: 5_000,
  lockTimeoutMs: 1_000,
  idleInTransactionMs: 5_000,
  followPollMs: 1_000,
  memberForgetMs: 3_600_000,
};

export interface PgStoreOptions {
  /** `postgres://...` connection URL. */
  url: string;
  /** This daemon's name in the lease row (default host:pid:random). */
  holder?: string;
  limits?: Partial<PgLimits>;
  /**
   * Not elected at once: open as a follower (and keep trying the lease) instead of waiting.
   * Default false: `open` waits until elected.
   */
  follow?: boolean;
  /** Rows (ops) up to which queued groups are merged into one commit; default MERGE_MAX_ROWS. */
  mergeMaxRows?: number;
  /** Longest a commit waits for the writers the previous one answered to come back, in ms; default GATHER_MS. */
  gatherMs?: number;
}

/**
 * Queued groups are merged into one commit up to this many rows: a bound on one commit
 * statement's size (and time, under `statement_timeout`) when many writes queued behind a
 * slow one. An edit at the daemon's limit (10 000 entries) is about that many rows and
 * commits alone.
 */
export const MERGE_MAX_ROWS = 20_000;

/**
 * When no commit is in flight and fewer writes are queued than the previous commit
 * carried, the next commit waits up to this long (ms) for the rest: the writers it answered
 * come back (a round trip of theirs), and one commit carries them all again instead of a
 * commit of the first one back followed by a commit of the others (measured: 8 closed-loop
 * clients settled into commits of 1 and 7). A lone writer never waits: the previous commit
 * carried one write.
 */
export const GATHER_MS = 5;

/** The channel the writer notifies in each commit transaction (payload: the new head seq). */
export const EVENT_CHANNEL = "koinii_events";

/** The channel the writer notifies when it stores a principal (an agent token). */
export const PRINCIPAL_CHANNEL = "koinii_principals";

/** Events a follower reads per round trip while catching up. */
const REPLAY_BATCH = 500;

/** Every elected writer commits only under this epoch; a higher one deposed it. */
export class FencedError extends Error {}

/**
 * A failure a cluster daemon recovers from by reopening the store (docs/cluster.md, "A
 * deposed writer rejoins"): deposed (fenced), or the connection to PostgreSQL lost or ended by
 * the server (a restart, a promotion, an eviction, a timeout). Anything else (a replay that
 * diverged, a pruned log) is a broken invariant.
 */
export function storeLost(e: unknown): boolean {
  if (e instanceof FencedError) return true;
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === "string" && (/^08/.test(code) || /^57P0[1-3]$/.test(code) || ["25P03", "57014", "55P03", "ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND"].includes(code))) return true;
  return e instanceof Error && /connection terminated|connection timeout|connection error|not queryable|lock ended/i.test(e.message);
}

type Op =
  | { k: "insert"; r: StoredRow }
  | { k: "update"; handle: number; premise: number; creator: string | null; createdAt: number }
  | { k: "delete"; handle: number; reason: string; seq: number }
  | { k: "event"; seq: number; body: string; write: string }
  | { k: "prune"; upto: number }
  | { k: "idempotency"; r: IdempotencyRow }
  | { k: "pruneIdempotency"; before: number };

interface Group {
  ops: Op[];
  meta: StoreMeta | undefined;
  waiters: { resolve: () => void; reject: (e: unknown) => void }[];
  after: (() => void)[];
}

const newGroup = (): Group => ({ ops: [], meta: undefined, waiters: [], after: [] });

export function checkPgLimits(limits: PgLimits): PgLimits {
  for (const [k, v] of Object.entries(limits)) {
    if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${k} must be a positive whole number of milliseconds, got ${v}`);
  }
  if (limits.leaseRenewMs * 2 > limits.leaseMs) throw new RangeError(`leaseRenewMs (${limits.leaseRenewMs}) must be at most half of leaseMs (${limits.leaseMs}), so one late renewal does not lose the lease`);
  checkMemberForget(limits);
  return limits;
}

/** int8 (bigint) as a JS number: handles, seqs and epoch-ms times stay below 2^53. */
const types = {
  getTypeParser: ((oid: number, format?: string) => {
    if (oid !== 20) return pg.types.getTypeParser(oid, format as "text");
    return (v: string) => {
      const n = Number(v);
      if (!Number.isSafeInteger(n)) throw new RangeError(`bigint ${v} is beyond 2^53`);
      return n;
    };
  }) as typeof pg.types.getTypeParser,
};

export class PgStore implements StoreOfRecord, Cluster {
  readonly kind = "postgres";
  readonly openMeta: StoreMeta;
  readonly holder: string;
  readonly limits: PgLimits;
  /** The epoch this store was elected with; 0 while it follows. */
  epoch: number;
  role: "writer" | "follower";
  writerUrl: string | undefined;
  private advertised: string | undefined;
  /** Follower: the replay callback (the KB's), the LISTEN session, what wakes the tail loop. */
  private replayer: ((e: LoggedEvent) => void) | undefined;
  private principalsChanged: () => void = () => {};
  private listener: pg.Client | undefined;
  private wake: (() => void) | undefined;
  private following: Promise<void> = Promise.resolve();
  private closing = false;
  /** The newest head this daemon has heard of, and since when it has been behind it (ms). */
  private knownHead: number;
  private behindSince: number | undefined;
  /** The counters of the last replayed write (checked against the database on promotion). */
  private replayedMeta: StoreMeta | undefined;
  commits = 0;
  /** The serial of the open group (see StoreOfRecord). */
  groupSerial = 0;
  onFailure: ((e: unknown) => void) | undefined;
  private failed: unknown;
  private open: Group | undefined;
  private queue: Group[] = [];
  private inFlight: Group | undefined;
  private drained: Promise<void> = Promise.resolve();
  /** head_seq as last committed: the compare-and-set's expected value. */
  private committedHead: number;
  private oldest: number | undefined;
  private readonly tombstones: Map<number, { reason: string; seq: number }>;
  private readonly loadedRows: RawRow[];
  private renewer: NodeJS.Timeout | undefined;
  private renewing = false;
  /** performance.now() when the last statement that extended the lease (an election, a renewal, a commit) was sent. */
  private renewedAt: number;
  /** A commit merges queued groups up to this many rows (PgStoreOptions.mergeMaxRows). */
  private readonly mergeMaxRows: number;
  /**
   * PgStoreOptions.gatherMs; the writers seen at the end of the last commit (the writes it
   * answered plus those queued behind it); the timer that ends a gathering.
   */
  private readonly gatherMs: number;
  private writers = 0;
  private gathering: NodeJS.Timeout | undefined;
  private readonly roster = new PgMembers();

  private constructor(
    private readonly pool: pg.Pool,
    private readonly kysely: Kysely<Schema>,
    private readonly url: string,
    /** The writer lock's session: held while this store writes; a follower waits on it. */
    private readonly lock: WriterLock,
    elected: { holder: string; epoch: number | undefined; limits: PgLimits; mergeMaxRows: number; gatherMs: number; electedAt: number },
    snapshot: { meta: StoreMeta; rows: RawRow[]; oldest: number | undefined; tombstones: Map<number, { reason: string; seq: number }> },
  ) {
    this.holder = elected.holder;
    this.epoch = elected.epoch ?? 0;
    this.role = elected.epoch === undefined ? "follower" : "writer";
    this.limits = elected.limits;
    this.mergeMaxRows = elected.mergeMaxRows;
    this.gatherMs = elected.gatherMs;
    this.renewedAt = elected.electedAt;
    this.openMeta = snapshot.meta;
    this.committedHead = snapshot.meta.headSeq;
    this.knownHead = snapshot.meta.headSeq;
    this.loadedRows = snapshot.rows;
    this.oldest = snapshot.oldest;
    this.tombstones = snapshot.tombstones;
    if (this.role === "writer") this.startRenewing();
  }

  get cluster(): Cluster {
    return this;
  }

  get retryAfterMs(): number {
    return this.limits.leaseRenewMs;
  }

  private startRenewing(): void {
    this.renewer = setInterval(() => void this.renew(), this.limits.leaseRenewMs);
    this.renewer.unref();
  }

  /**
   * Connect, migrate, wait until elected writer (polling every `leaseRenewMs`; `signal`
   * gives up), then read the store: the snapshot the engine is rebuilt from.
   */
  static async open(opts: PgStoreOptions, signal?: AbortSignal): Promise<PgStore> {
    const limits = checkPgLimits({ ...DEFAULT_PG_LIMITS, ...opts.limits });
    const mergeMaxRows = opts.mergeMaxRows ?? MERGE_MAX_ROWS;
    if (!(Number.isSafeInteger(mergeMaxRows) && mergeMaxRows >= 1)) throw new RangeError(`mergeMaxRows must be a positive whole number of rows, got ${mergeMaxRows}`);
    const gatherMs = opts.gatherMs ?? GATHER_MS;
    if (!(Number.isSafeInteger(gatherMs) && gatherMs >= 0)) throw new RangeError(`gatherMs must be a whole number of milliseconds >= 0, got ${gatherMs}`);
    const holder = opts.holder ?? `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
    // Every session carries the holder as application_name: an eviction ends them all.
    const session = {
      connectionString: opts.url,
      types,
      application_name: sessionTag(holder),
      connectionTimeoutMillis: limits.statementTimeoutMs,
      options: `-c statement_timeout=${limits.statementTimeoutMs} -c lock_timeout=${limits.lockTimeoutMs} -c idle_in_transaction_session_timeout=${limits.idleInTransactionMs}`,
    };
    const pool = new pg.Pool({ ...session, max: 4 });
    // An idle pooled session the server ended (idle_in_transaction, a restart) is dropped by the pool.
    pool.on("error", () => {});
    // A session lost while checked out fails its query (which stops the store); its 'error' event must not end the process.
    pool.on("connect", (client) => client.on("error", () => {}));
    const kysely = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
    let lock: WriterLock | undefined;
    let lost: ((e: Error) => void) | undefined;
    try {
      const { error } = await new Migrator({ db: kysely, provider: migrationProvider("postgres") }).migrateToLatest();
      if (error) throw error;
      lock = await WriterLock.connect(session, (e) => lost?.(e));
      let epoch: number | undefined;
      let electedAt = 0;
      for (;;) {
        if (await lock.tryTake()) {
          electedAt = performance.now();
          epoch = await lock.elect(holder, limits.leaseMs, null);
        }
        if (epoch !== undefined || opts.follow) break;
        await readLeaseEvicting(pool); // a writer paused past its lease gives the lock up
        await sleep(lock.held ? 0 : limits.leaseRenewMs, signal);
      }
      // A writer reads after its election committed; a follower reads whatever is committed:
      // either way one REPEATABLE READ snapshot, so the rows, counters and head agree.
      const snapshot = await readSnapshot(pool);
      const store = new PgStore(pool, kysely, opts.url, lock, { holder, epoch, limits, mergeMaxRows, gatherMs, electedAt }, snapshot);
      lost = (e) => store.abort(Object.assign(new FencedError(`the session of the writer lock ended (${e.message}); epoch ${store.epoch} can no longer be trusted`), { cause: e }));
      return store;
    } catch (e) {
      await lock?.end();
      await kysely.destroy();
      throw e;
    }
  }

  rows(): Iterable<RawRow> {
    return this.loadedRows.splice(0); // handed over once: the engine keeps what it needs
  }

  rowCount(): number {
    return this.loadedRows.length;
  }

  get failure(): unknown {
    return this.failed;
  }

  begin(): void {
    if (this.failed !== undefined) throw this.failed;
    if (this.open) return;
    if (this.role !== "writer") throw new NotWriterError(this.writerUrl, this.retryAfterMs);
    this.open = newGroup();
    this.groupSerial++;
    setImmediate(() => this.closeGroup());
  }

  private group(): Group {
    if (!this.open) throw new Error("invariant: a row was written outside a group (begin first)");
    return this.open;
  }

  insertSentexes(rows: readonly StoredRow[]): void {
    const ops = this.group().ops;
    for (const r of rows) ops.push({ k: "insert", r: { ...r } });
  }

  updateSentex(handle: number, premise: number, creator: string | null, createdAt: number): void {
    this.group().ops.push({ k: "update", handle, premise, creator, createdAt });
  }

  deleteSentex(handle: number, reason: string, seq: number): void {
    this.group().ops.push({ k: "delete", handle, reason, seq });
  }

  setMeta(meta: StoreMeta): void {
    this.group().meta = { ...meta };
  }

  insertEvent(event: FeedEvent, write: () => string): void {
    this.group().ops.push({ k: "event", seq: event.seq, body: JSON.stringify(withLocators(event)), write: write() });
  }

  pruneEvents(uptoSeq: number): void {
    this.group().ops.push({ k: "prune", upto: uptoSeq });
  }

  insertIdempotency(r: IdempotencyRow): void {
    this.group().ops.push({ k: "idempotency", r: { ...r } });
  }

  pruneIdempotency(beforeMs: number): void {
    this.group().ops.push({ k: "pruneIdempotency", before: beforeMs });
  }

  /** Read from the table: a writer at open, and a promoted follower once it writes (it replays no keys). */
  async idempotencyKeys(sinceMs: number): Promise<IdempotencyRow[]> {
    const rows = await this.kysely.selectFrom("idempotency").selectAll().where("created_at", ">=", sinceMs).orderBy("created_at").execute();
    return rows.map(idempotencyRow);
  }

  onCommit(fn: () => void): void {
    if (this.open) this.open.after.push(fn);
    else fn();
  }

  durable(): Promise<void> {
    if (this.failed !== undefined) return Promise.reject(this.failed);
    const last = this.open ?? this.queue[this.queue.length - 1] ?? this.inFlight;
    if (!last) return Promise.resolve();
    return new Promise((resolve, reject) => last.waiters.push({ resolve, reject }));
  }

  private closeGroup(): void {
    const g = this.open;
    if (!g) return;
    this.open = undefined;
    if (this.failed !== undefined) return; // abort already rejected it
    this.queue.push(g);
    if (this.inFlight) return; // the pump takes it when the commit in flight returns
    if (this.closing || queuedWrites(this.queue) >= this.writers) this.startPump();
    else this.gathering ??= setTimeout(() => this.startPump(), this.gatherMs);
  }

  /** Commit what is queued now (ending a gathering). */
  private startPump(): void {
    clearTimeout(this.gathering);
    this.gathering = undefined;
    if (!this.inFlight && this.queue.length) this.drained = this.pump();
  }

  /**
   * Commit the queued groups in order; the first failure stops the store. Every group that
   * closed while the previous commit was in flight (one per event-loop turn that wrote) is
   * merged into ONE commit, in order, up to `mergeMaxRows` rows (a single larger group
   * commits alone): a commit carries every write that queued behind it, not one each.
   */
  private async pump(): Promise<void> {
    while (this.failed === undefined && this.queue.length) {
      const g = (this.inFlight = mergeGroups(this.queue, this.mergeMaxRows));
      try {
        if (g.ops.length || g.meta) await this.commitGroup(g);
      } catch (e) {
        this.abort(e);
        return;
      }
      this.inFlight = undefined;
      if (this.failed !== undefined) return; // aborted while committing: its writers were rejected
      const waiting = queuedWrites(this.queue);
      this.writers = queuedWrites([g]) + waiting;
      this.applyCaches(g);
      for (const fn of g.after) fn();
      for (const w of g.waiters) w.resolve();
      if (this.queue.length && !this.closing && waiting < this.writers) {
        this.gathering = setTimeout(() => this.startPump(), this.gatherMs);
        return; // closeGroup ends the gathering early once the queue holds as many writes
      }
    }
  }

  /**
   * The group in ONE statement, its own transaction (`koinii_commit`, schema.ts): the fence
   * (the lease row updated, so locked, on our holder, epoch and expiry), the extension of the
   * lease, the head's compare-and-set, the NOTIFY and every row. A refusal of the fence or
   * of the compare-and-set is a FencedError.
   */
  private async commitGroup(g: Group): Promise<void> {
    const sent = performance.now();
    try {
      await this.pool.query("select koinii_commit($1, $2, $3, $4, $5::jsonb)", [this.holder, this.epoch, this.limits.leaseMs, this.committedHead, groupJson(g)]);
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      if (code === LEASE_LOST || code === HEAD_MOVED) throw Object.assign(new FencedError((e as Error).message), { cause: e });
      throw e;
    }
    this.leaseValid(sent);
    this.commits++;
    if (g.meta) this.committedHead = g.meta.headSeq;
  }

  /** The lease was extended by a statement sent at `sent` (performance.now()): it is ours until sent + leaseMs at the earliest. */
  private leaseValid(sent: number): void {
    this.renewedAt = Math.max(this.renewedAt, sent);
  }

  /** Run `fn` in one transaction that first proves this store still holds the lease. */
  private async transaction(fn: (c: pg.PoolClient) => Promise<void>): Promise<void> {
    const c = await this.pool.connect();
    let broken: unknown;
    try {
      await c.query("begin");
      const held = await c.query("select 1 from lease where name = 'writer' and holder = $1 and epoch = $2 and expires_at > clock_timestamp() for share", [this.holder, this.epoch]);
      if (held.rowCount !== 1) throw new FencedError(`the writer lease of epoch ${this.epoch} is lost (expired or taken by another daemon)`);
      await fn(c);
      if (this.failed !== undefined) throw this.failed; // stopped meanwhile: commit nothing more
      await c.query("commit");
    } catch (e) {
      broken = e;
      await c.query("rollback").catch(() => {});
      throw e;
    } finally {
      c.release(broken instanceof Error && !(broken instanceof FencedError) ? broken : undefined);
    }
  }

  /** The in-memory views of committed rows: the oldest event, the tombstones. */
  private applyCaches(g: Group): void {
    for (const op of g.ops) {
      if (op.k === "event") this.oldest ??= op.seq;
      else if (op.k === "prune" && this.oldest !== undefined && this.oldest <= op.upto) this.oldest = op.upto + 1 > this.committedHead ? undefined : op.upto + 1;
      else if (op.k === "delete" && !this.tombstones.has(op.handle)) this.tombstones.set(op.handle, { reason: op.reason, seq: op.seq });
    }
  }

  // ------------------------------------------------------------ the cluster

  lagMs(): number {
    return this.behindSince === undefined ? 0 : Date.now() - this.behindSince;
  }

  async advertise(url: string): Promise<void> {
    this.advertised = url;
    if (this.role === "writer") {
      await this.pool.query("update lease set url = $1 where name = 'writer' and holder = $2 and epoch = $3", [url, this.holder, this.epoch]);
      this.writerUrl = url;
    }
  }

  /** Heard of head `seq` (a NOTIFY, a read of meta): lag runs from the first time we are behind. */
  private noteHead(seq: number): void {
    if (seq > this.knownHead) this.knownHead = seq;
    if (this.committedHead >= this.knownHead) this.behindSince = undefined;
    else this.behindSince ??= Date.now();
  }

  onPrincipals(fn: () => void): void {
    this.principalsChanged = fn;
  }

  /** Record this daemon in the member table (each renewal, each election attempt; pgmembers.ts). */
  private beat(): void {
    void this.roster.beat(this.pool, this.limits, { holder: this.holder, url: this.advertised ?? null, role: this.role, epoch: this.epoch, appliedSeq: this.committedHead, lagMs: this.lagMs() });
  }

  members(): ClusterMember[] {
    return this.roster.list(this.limits.leaseMs);
  }

  follow(apply: (e: LoggedEvent) => void): void {
    if (this.role !== "follower" || this.replayer) throw new Error("invariant: follow() is called once, on a follower");
    this.replayer = apply;
    this.following = this.followLoop();
  }

  /**
   * The follower's one loop (so catching up, elections and promotion never overlap): try
   * the lease when due, apply what the log holds past our seq (up to the newest NOTIFY's
   * head, else the head read now) while the lease is read beside it, then, unless a NOTIFY
   * arrived meanwhile, sleep until a NOTIFY, `followPollMs`, or the next election attempt.
   * Any failure stops the store (K12).
   */
  private async followLoop(): Promise<void> {
    let nextLeaseRead = 0;
    try {
      await this.listen();
      // Blocks until the writer's lock session ends (it died, stepped down, was evicted): then elect at once.
      this.lock.wait().then(
        () => this.wake?.(),
        (e: unknown) => {
          if (!this.closing) this.abort(e);
        },
      );
      while (this.failed === undefined && !this.closing) {
        if (this.lock.held) {
          const sent = performance.now();
          const epoch = await this.lock.elect(this.holder, this.limits.leaseMs, this.advertised ?? null);
          if (epoch !== undefined) {
            this.leaseValid(sent);
            return await this.promote(epoch);
          }
        }
        // The lease read runs beside the catch-up (its own pooled session), not before it:
        // applying what was committed never waits for it.
        let leaseRead: Promise<void> | undefined;
        if (Date.now() >= nextLeaseRead) {
          nextLeaseRead = Date.now() + this.limits.leaseRenewMs;
          leaseRead = this.readLease().then(() => {
            this.principalsChanged();
            this.beat();
          });
        }
        // A NOTIFY's head is committed (notifications are delivered at commit, in commit
        // order): no read of the head is needed to apply up to it. The head is read when
        // no NOTIFY told us of a newer one (the polling fallback, and at start).
        const head = this.knownHead > this.committedHead ? Promise.resolve(this.knownHead) : readHead(this.pool);
        await Promise.all([head.then((h) => this.catchUp(h)), leaseRead]);
        if (this.lock.held) continue; // the row was locked past lock_timeout: try again now
        if (this.knownHead > this.committedHead) continue; // NOTIFYs that arrived while applying
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.max(0, Math.min(this.limits.followPollMs, nextLeaseRead - Date.now())));
          this.wake = () => (clearTimeout(t), resolve());
          if (this.lock.held || this.failed !== undefined) this.wake();
        });
        this.wake = undefined;
      }
    } catch (e) {
      if (!this.closing) this.abort(e);
    }
  }

  /** LISTEN on its own session; a lost session leaves the polling fallback. */
  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, types });
    client.on("error", () => {
      if (this.listener === client) this.listener = undefined;
    });
    client.on("notification", (n) => {
      if (n.channel === PRINCIPAL_CHANNEL) return this.principalsChanged();
      if (n.channel !== EVENT_CHANNEL) return;
      const head = Number(n.payload);
      if (Number.isSafeInteger(head)) this.noteHead(head);
      this.wake?.();
    });
    await client.connect();
    await client.query(`listen ${EVENT_CHANNEL}; listen ${PRINCIPAL_CHANNEL}`);
    this.listener = client;
  }

  /** Read the lease (who writes, where); when it has run out, evict its writer (which frees the writer lock). */
  private async readLease(): Promise<void> {
    const lease = await readLeaseEvicting(this.pool);
    this.writerUrl = lease.live ? (lease.url ?? undefined) : undefined;
  }

  /** Apply every committed event after our seq up to `head`, in order, with no gap. */
  private async catchUp(head: number): Promise<void> {
    this.noteHead(head);
    while (this.committedHead < head && this.failed === undefined) {
      const rows = (
        await this.pool.query<{ seq: number; body: string; write: string | null; oldest: number }>(
          "select seq, body, write, (select min(seq) from event) as oldest from event where seq > $1 and seq <= $2 order by seq limit $3",
          [this.committedHead, head, REPLAY_BATCH],
        )
      ).rows;
      if (rows[0]?.seq !== this.committedHead + 1) {
        throw new Error(`the event log no longer holds seq ${this.committedHead + 1} (pruned past this follower, oldest ${rows[0]?.oldest ?? "none"}): restart it to read a new snapshot`);
      }
      this.oldest = rows[0].oldest;
      for (const r of rows) {
        if (r.write === null) throw new Error(`seq ${r.seq} has no write input (written before followers existed): restart this follower to read a new snapshot`);
        this.replay({ seq: r.seq, body: r.body, write: r.write });
      }
    }
    this.noteHead(head);
  }

  /**
   * One logged write, replayed into the engine inside a group of its own that is never
   * committed: the KB fills it exactly as the writer's KB filled its group, and the event
   * and input it produced must be byte-equal to the logged ones (the engine is
   * deterministic; a difference is a broken invariant, and the store stops).
   */
  private replay(e: LoggedEvent): void {
    const g = (this.open = newGroup());
    try {
      this.replayer!(e);
    } finally {
      this.open = undefined;
    }
    const ev = g.ops.find((op): op is Extract<Op, { k: "event" }> => op.k === "event");
    if (!ev || ev.seq !== e.seq || ev.body !== e.body || ev.write !== e.write) {
      throw new Error(`invariant: the replay of seq ${e.seq} diverged from the writer's event${ev ? `: ${ev.body} != ${e.body}` : ""}`);
    }
    this.committedHead = e.seq;
    this.replayedMeta = g.meta;
    g.ops = g.ops.filter((op) => op.k !== "prune"); // the log's oldest seq is read from the log
    this.applyCaches(g);
    for (const fn of g.after) fn();
  }

  /**
   * Elected: renew at once, catch up to the head as the database holds it now (every group
   * of the old writer committed before our election could), check the counters, write.
   */
  private async promote(epoch: number): Promise<void> {
    this.epoch = epoch;
    this.startRenewing();
    const meta = await readMeta(this.pool);
    await this.catchUp(meta.headSeq);
    if (this.committedHead !== meta.headSeq) throw new Error(`invariant: promoted at seq ${this.committedHead}, the head is ${meta.headSeq}`);
    if (this.replayedMeta && this.replayedMeta.nextHandle !== meta.nextHandle) {
      throw new Error(`invariant: the replayed next handle ${this.replayedMeta.nextHandle} is not the stored ${meta.nextHandle}`);
    }
    this.role = "writer";
    this.writerUrl = this.advertised;
    this.behindSince = undefined;
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => {});
  }

  /**
   * Extend the lease, unless a commit (which extends it too) did so within the last
   * `leaseRenewMs`. Finding the lease gone (or PostgreSQL unreachable) stops the store (K12).
   * A renewal that timed out waiting for the lease row's lock (`lock_timeout`: a commit or
   * an election holds it) stops it only once the lease may have run out by this process's
   * own bound (`leaseMs` from the last statement that extended it was sent): until then the
   * lease is ours whoever holds the lock, and the next period tries again.
   */
  private async renew(): Promise<void> {
    if (this.failed !== undefined || this.renewing) return;
    this.renewing = true;
    const sent = performance.now();
    try {
      if (sent - this.renewedAt >= this.limits.leaseRenewMs) {
        const r = await this.pool.query(
          "update lease set expires_at = clock_timestamp() + make_interval(secs => $3::float8 / 1000) where name = 'writer' and holder = $1 and epoch = $2 and expires_at > clock_timestamp()",
          [this.holder, this.epoch, this.limits.leaseMs],
        );
        if (r.rowCount !== 1) throw new FencedError(`the writer lease of epoch ${this.epoch} is lost (expired or taken by another daemon)`);
        this.leaseValid(sent);
      }
      this.beat();
    } catch (e) {
      const waited = (e as { code?: unknown }).code === "55P03";
      if (!(waited && performance.now() - this.renewedAt < this.limits.leaseMs)) this.abort(e);
    } finally {
      this.renewing = false;
    }
  }

  async readEvents(afterSeq: number, limit: number): Promise<FeedEvent[]> {
    const rows = await this.kysely.selectFrom("event").select(["seq", "body"]).where("seq", ">", afterSeq).orderBy("seq").limit(limit).execute();
    return rows.map((r) => JSON.parse(r.body) as FeedEvent);
  }

  oldestEventSeq(): number | undefined {
    return this.oldest;
  }

  tombstone(handle: number): { reason: string; seq: number } | undefined {
    return this.tombstones.get(handle);
  }

  principals(): Promise<PrincipalRow[]> {
    return this.kysely.selectFrom("principal").select(["id", "token_sha256"]).execute();
  }

  async putPrincipal(id: string, tokenSha256: string): Promise<string | undefined> {
    if (this.failed !== undefined) throw this.failed;
    if (this.role !== "writer") throw new NotWriterError(this.writerUrl, this.retryAfterMs);
    let old: string | undefined;
    try {
      await this.transaction(async (c) => {
        old = (await c.query<{ token_sha256: string }>("select token_sha256 from principal where id = $1", [id])).rows[0]?.token_sha256;
        await c.query("insert into principal (id, token_sha256) values ($1, $2) on conflict (id) do update set token_sha256 = excluded.token_sha256", [id, tokenSha256]);
        await c.query("select pg_notify($1, '')", [PRINCIPAL_CHANNEL]);
      });
    } catch (e) {
      this.abort(e);
      throw e;
    }
    return old;
  }

  abort(e: unknown): void {
    const first = this.failed === undefined;
    if (first) this.failed = e;
    const pending = [this.inFlight, ...this.queue, this.open].filter((g): g is Group => g !== undefined);
    this.inFlight = undefined;
    this.queue = [];
    this.open = undefined;
    clearTimeout(this.gathering);
    this.gathering = undefined;
    for (const g of pending) for (const w of g.waiters) w.reject(this.failed);
    clearInterval(this.renewer);
    this.wake?.();
    // Give the writer lock up at once: a follower need not wait for the lease to run out.
    void this.lock.cancel(this.pool).then(() => this.lock.end());
    if (first) this.onFailure?.(e);
  }

  async close(): Promise<void> {
    clearInterval(this.renewer);
    this.closing = true;
    this.wake?.();
    await this.lock.cancel(this.pool);
    await this.following;
    await this.listener?.end().catch(() => {});
    this.closeGroup();
    this.startPump();
    await this.drained.catch(() => {});
    if (this.failed === undefined && this.role === "writer") {
      // Step down at once: a standby need not wait for the lease to run out.
      await this.pool.query("update lease set expires_at = '-infinity' where name = 'writer' and holder = $1 and epoch = $2", [this.holder, this.epoch]).catch(() => {});
    }
    await this.lock.end();
    await this.kysely.destroy();
  }
}

/** The counters as committed now. */
async function readMeta(q: pg.Pool | pg.PoolClient): Promise<StoreMeta> {
  const meta = (await q.query<{ key: string; value: number }>("select key, value from meta")).rows;
  const get = (k: string) => meta.find((r) => r.key === k)?.value ?? 0;
  return { nextHandle: get("next_handle"), headSeq: get("head_seq") };
}

/** The committed head seq. */
async function readHead(pool: pg.Pool): Promise<number> {
  return (await pool.query<{ value: number }>("select value from meta where key = 'head_seq'")).rows[0]!.value;
}

/** The store as a new writer or follower finds it, read in one snapshot. */
async function readSnapshot(pool: pg.Pool) {
  const c = await pool.connect();
  try {
    await c.query("begin isolation level repeatable read read only");
    const meta = await readMeta(c);
    const rows = (await c.query<RawRow>({ text: "select handle, context, sentence, premise, creator, created_at, seq from sentex order by handle", rowMode: "array" })).rows;
    const oldest = (await c.query<{ seq: number | null }>("select min(seq) as seq from event")).rows[0]!.seq ?? undefined;
    const tombstones = new Map<number, { reason: string; seq: number }>();
    for (const t of (await c.query<{ handle: number; reason: string; seq: number }>("select handle, reason, seq from tombstone")).rows) tombstones.set(t.handle, { reason: t.reason, seq: t.seq });
    await c.query("commit");
    return { meta, rows, oldest, tombstones };
  } finally {
    c.release();
  }
}

/** The writes (event rows) the groups carry. */
function queuedWrites(groups: Group[]): number {
  let n = 0;
  for (const g of groups) for (const op of g.ops) if (op.k === "event") n++;
  return n;
}

/**
 * Take the first queued group and merge into it every following one while the rows stay
 * within `maxRows`: ops in order, the last counters, every waiter and callback in order.
 * The merged groups were closed, so no write can reach them any more.
 */
function mergeGroups(queue: Group[], maxRows: number): Group {
  const g = queue.shift()!;
  while (queue.length && g.ops.length + queue[0]!.ops.length <= maxRows) {
    const next = queue.shift()!;
    g.ops.push(...next.ops);
    g.meta = next.meta ?? g.meta;
    g.waiters.push(...next.waiters);
    g.after.push(...next.after);
  }
  return g;
}

/**
 * The group as `koinii_commit`'s jsonb argument (schema.ts): rows by kind, in the order the
 * function applies them. Within a group a handle is inserted before it is updated or
 * deleted (handles are never reused), so applying kinds in that order equals applying the
 * ops in order; an update keeps the last one per handle, a tombstone the first, an
 * idempotency key its last answer, each prune its highest bound (the events and keys a
 * group writes are newer than any bound it prunes to).
 */
function groupJson(g: Group): string {
  const insert: object[] = [];
  const update = new Map<number, object>();
  const del = new Map<number, object>();
  const event: object[] = [];
  const idem = new Map<string, object>();
  let prune: number | undefined;
  let idemPrune: number | undefined;
  for (const op of g.ops) {
    switch (op.k) {
      case "insert": {
        const r = op.r;
        insert.push({ handle: r.handle, context: r.context, sentence: r.sentence, premise: r.premise, creator: r.creator, created_at: r.createdAt, seq: r.seq });
        break;
      }
      case "update":
        update.set(op.handle, { handle: op.handle, premise: op.premise, creator: op.creator, created_at: op.createdAt });
        break;
      case "delete":
        if (!del.has(op.handle)) del.set(op.handle, { handle: op.handle, reason: op.reason, seq: op.seq });
        break;
      case "event":
        event.push({ seq: op.seq, body: op.body, write: op.write });
        break;
      case "prune":
        prune = Math.max(prune ?? op.upto, op.upto);
        break;
      case "idempotency": {
        const r = op.r;
        idem.set(JSON.stringify([r.caller, r.key]), { caller: r.caller, key: r.key, request_sha256: r.requestSha256, status: r.status, answer: r.answer, seq: r.seq, created_at: r.createdAt });
        break;
      }
      case "pruneIdempotency":
        idemPrune = Math.max(idemPrune ?? op.before, op.before);
        break;
    }
  }
  return JSON.stringify({
    ...(g.meta ? { head: g.meta.headSeq, nextHandle: g.meta.nextHandle } : {}),
    insert,
    update: [...update.values()],
    delete: [...del.values()],
    event,
    idem: [...idem.values()],
    ...(prune !== undefined ? { prune } : {}),
    ...(idemPrune !== undefined ? { idemPrune } : {}),
  });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });
}

/** True for a `postgres://` or `postgresql://` URL (what `--store` accepts). */
export const isPostgresUrl = (s: string): boolean => /^postgres(ql)?:\/\//.test(s);
