/**
 * The store of record (K8): one SQLite file through better-sqlite3 in WAL mode. kysely
 * holds the schema, the migrations and the typed SQL; hot statements are compiled once by
 * kysely and run as better-sqlite3 prepared statements, synchronously.
 *
 * Group commit (K8, K9): the first write of an event-loop turn opens a group; every write
 * of that turn appends to it; a `setImmediate` commits it, and only then are the turn's
 * writes answered and their events published. The group's BEGIN waits for a statement
 * that needs it: a group whose only statement is one event row (a lone assert) inserts it
 * at commit time in autocommit, one statement instead of three. With durability `normal` a group is
 * answered at its COMMIT (it survives a process kill, not a power loss). With `full` the
 * group is answered only after the WAL file is fsynced; that fsync runs on libuv's thread
 * pool, off the event loop (walsync.ts), so the writes arriving meanwhile are committed and
 * wait for the next fsync (one serves them all) instead of behind a blocked loop; only a lone
 * writer's fsync on a fast disk runs inline (`inlineFsyncMaxMs`). SQLite itself runs
 * with synchronous=NORMAL (it still syncs around checkpoints); our fsync of the WAL after
 * each COMMIT is what makes an acknowledged write survive a power loss.
 *
 * The log of record: a group's row changes ride in its next event row (`event.changes`,
 * rowlog.ts); the sentex and tombstone tables are a checkpoint of the log, brought up to it
 * by the group that reaches `CheckpointLimits`, which records `meta.checkpoint_seq`. The
 * changes since the checkpoint are kept in memory (`pending`, changed only after a COMMIT);
 * `rows()` merges them into the streamed checkpoint, `tombstone()` reads them too, and the
 * prune never passes the checkpoint. A large write's new rows join the checkpoint as
 * `segment` rows, many sentexes each (segment.ts), which `rows()` merges with the table's.
 *
 * Fail-stop (K12): the first failure (a statement, the COMMIT, the fsync) rolls back the
 * open transaction, rejects every writer not yet answered, refuses every later write, and
 * tells the owner once through `onFailure`. Groups already committed still finish their
 * fsync and are answered when it succeeds: they are durable.
 */
import Database from "better-sqlite3";
import { openSync, fsync, fsyncSync, closeSync, existsSync } from "node:fs";
import { Kysely, SqliteDialect, Migrator, sql, type CompiledQuery } from "kysely";
import type { StoredRow, RawRow } from "./write.js";
import { decodeEvent, encodeEvent, type FeedEvent } from "./event.js";
import { WalSync, release, type FsyncFn, type Group } from "./walsync.js";
import { migrationProvider, type IdempotencyTable, type Schema } from "./schema.js";
import { addedInserts, AS_ADDED, asAdded, mergeRows, Pending, pushDelete, pushInsert, pushUpdate, tombstoneIn, type Changes } from "./rowlog.js";
import { decodeSegment, encodeSegment, mergeByHandle, segmentRows, SegmentRanges } from "./segment.js";
import { idempotencyRow, type Durability, type IdempotencyRow, type PrincipalRow, type StoreMeta, type StoreOfRecord } from "./store-of-record.js";

export type { Durability, StoreMeta } from "./store-of-record.js";

export type { FsyncFn } from "./walsync.js";

/** The default of `StoreOptions.inlineFsyncMaxMs`. */
export const DEFAULT_INLINE_FSYNC_MAX_MS = 1;

export interface StoreOptions {
  /** How the WAL is fsynced at `full` durability (default `fs.fsync`). */
  fsync?: FsyncFn;
  /**
   * The synchronous fsync a lone writer's group uses (walsync.ts; default `fs.fsyncSync`).
   * A test that gives `fsync` without it simulates the disk: every fsync then goes through `fsync`.
   */
  fsyncSync?: (fd: number) => void;
  /** A lone writer's fsync runs on the loop only while the last fsync took at most this long (ms); 0 = never. */
  inlineFsyncMaxMs?: number;
  /** The log's checkpoint thresholds (see `CheckpointLimits`); each defaults to `DEFAULT_CHECKPOINT`'s. */
  checkpoint?: Partial<CheckpointLimits>;
}

/**
 * When the sentex and tombstone tables are brought up to the log. The group that reaches
 * `events` events or `rows` row changes since the last checkpoint checkpoints; an event with
 * more than `eventRows` row changes (an edit's) is not logged row by row: its group
 * checkpoints and keeps the write's new rows in segments of at most `segmentRows` rows
 * (segment.ts). The first two bound the reopen's tail and the memory that holds it.
 */
export interface CheckpointLimits {
  /** Events since the last checkpoint (events). */
  events: number;
  /** Row changes since the last checkpoint (rows). */
  rows: number;
  /** Row changes one event row carries at most (rows); a write with more keeps its rows in segments. */
  eventRows: number;
  /** Rows one checkpoint segment holds at most (rows): what a change to one of them moves to the `sentex` table. */
  segmentRows: number;
}

export const DEFAULT_CHECKPOINT: CheckpointLimits = { events: 1_000, rows: 10_000, eventRows: 64, segmentRows: 1_000 };

/** The thresholds with defaults filled in; a threshold that is not a positive integer is refused. */
export function checkpointLimits(given: Partial<CheckpointLimits> = {}): CheckpointLimits {
  const limits = { ...DEFAULT_CHECKPOINT, ...given };
  for (const [k, v] of Object.entries(limits)) {
    if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`checkpoint ${k} must be a positive integer, got ${v}`);
  }
  return limits;
}

/** Rows per multi-row sentex INSERT, and the columns of one row (7 * 64 parameters, well under SQLite's 32 766). */
const INSERT_BATCH = 64;

const ROW_COLUMNS = 7;

/** A row as read raw (a checkpoint's, the log's) as the row a write hands the store. */
const storedRow = ([handle, context, sentence, premise, creator, createdAt, seq]: RawRow): StoredRow => ({ handle, context, sentence, premise, creator, createdAt, seq });

export class SqliteStore implements StoreOfRecord {
  readonly kind = "sqlite";
  readonly openMeta: StoreMeta;
  readonly db: Database.Database;
  private readonly kysely: Kysely<Schema>;
  private readonly stmts: Record<string, Database.Statement>;
  /** A group is open: its writes commit together on the next macrotask. */
  private inTx = false;
  /** The open group's BEGIN has run: at its first statement other than a lone event row (`open`). */
  private began = false;
  /**
   * The open group's first event row, held back while it is the group's only statement: a
   * lone write's row is inserted at COMMIT time in autocommit, one statement where BEGIN,
   * INSERT and COMMIT were three (a single assert's group, mostly).
   */
  private loneEvent: [seq: number, body: string, next: number | null, changes: string | null] | undefined;
  groupSerial = 0;
  private waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  private afterCommit: (() => void)[] = [];
  private failed: unknown;
  private pendingMeta: StoreMeta | undefined;
  /** The parameters of one `insertSentexBatch`, reused by every batch. */
  private readonly rowParams: (number | string | null)[] = new Array(INSERT_BATCH * ROW_COLUMNS);
  /** The counters the open group's newest event row carries; a `meta` update is needed only when they differ from `pendingMeta`. */
  private eventMeta: StoreMeta | undefined;
  /** The open group pruned events: `meta` is written, whatever the event rows carry. */
  private pruned = false;
  /** The open group's prune: events up to this seq, as far as the checkpoint allows. */
  private pruneUpto: number | undefined;
  /** `full` durability: the WAL's file descriptor, fsynced after each COMMIT. */
  private walFd: number | undefined;
  /** `full` durability: the fsyncs committed groups wait for. */
  private readonly walSync: WalSync | undefined;
  private readonly limits: CheckpointLimits;
  /** The committed checkpoint's segments (segment.ts). */
  private segments = new SegmentRanges();
  /** The open group's, once it changes them (a copy of `segments`, which it replaces at COMMIT). */
  private groupSegments: SegmentRanges | undefined;
  /**
   * The open group's removals of rows a segment holds, by the segment's first handle: the
   * segment is rewritten without them once, before COMMIT (`flushSegmentDeletes`), instead of
   * moving all its rows to the table and deleting them there one by one.
   */
  private readonly segmentDeletes = new Map<number, Set<number>>();
  /** The seq the sentex and tombstone tables are complete to; events after it carry the rows' changes. */
  checkpointSeq: number;
  /** The net row changes since that checkpoint, committed (only a COMMIT changes it: K12). */
  private pending: Pending;
  /** The open group's row changes not yet in the tables, and where those after its last event start. */
  private readonly groupChanges: Changes = [];
  private sinceEvent = 0;
  private sinceEventRows = 0;
  private groupRows = 0;
  private groupEvents = 0;
  /** The open group checkpoints: the pending changes are in the tables and its own go there directly. */
  private checkpointing = false;
  /** The newest seq given to the store (an event's or the counters'): what a checkpoint is complete to. */
  private headSeq: number;
  /** Commits so far (for metrics and tests). */
  commits = 0;
  /** The WAL fsyncs run so far and their total time (for metrics: what a group waits at `full`). */
  get walFsyncs(): { count: number; seconds: number; inline: number } | undefined {
    return this.walSync?.stats;
  }
  /** Called once, with the first failure (K12). */
  onFailure: ((e: unknown) => void) | undefined;

  /** A lone writer's fsync runs inline only while `othersWriting` says no (walsync.ts); at `normal` there is no fsync to gate. */
  gateInlineFsync(othersWriting: () => boolean): void {
    if (this.walSync) this.walSync.othersWriting = othersWriting;
  }

  private constructor(db: Database.Database, kysely: Kysely<Schema>, walPath: string | undefined, opts: StoreOptions) {
    this.db = db;
    this.kysely = kysely;
    this.limits = checkpointLimits(opts.checkpoint);
    if (walPath) {
      this.walFd = openSync(walPath, "r+");
      const fsyncSyncFn = opts.fsyncSync ?? (opts.fsync ? undefined : fsyncSync);
      const maxMs = opts.inlineFsyncMaxMs ?? DEFAULT_INLINE_FSYNC_MAX_MS;
      if (!Number.isFinite(maxMs) || maxMs < 0) throw new RangeError(`inlineFsyncMaxMs must be a number of ms >= 0, got ${maxMs}`);
      this.walSync = new WalSync(this.walFd, opts.fsync ?? fsync, (err) => this.abort(err), fsyncSyncFn && { fsyncSync: fsyncSyncFn, maxMs });
    }
    const k = kysely;
    const prep = (q: CompiledQuery) => db.prepare(q.sql);
    const row = { handle: 0, context: "", sentence: "", premise: 0, creator: null, created_at: 0, seq: 0 };
    this.stmts = {
      insertSentex: prep(k.insertInto("sentex").values(row).compile()),
      insertSentexBatch: prep(k.insertInto("sentex").values(Array.from({ length: INSERT_BATCH }, () => row)).compile()),
      updateSentex: prep(k.updateTable("sentex").set({ premise: 0, creator: null, created_at: 0 }).where("handle", "=", 0).compile()),
      deleteSentex: prep(k.deleteFrom("sentex").where("handle", "=", 0).compile()),
      insertTombstone: prep(k.insertInto("tombstone").values({ handle: 0, reason: "", seq: 0 }).onConflict((oc) => oc.column("handle").doNothing()).compile()),
      // Both counters in one statement: one row per key, each set from its own parameter.
      setMeta: prep(
        k
          .updateTable("meta")
          .set({ value: sql<number>`case key when 'next_handle' then ${0} else ${0} end` })
          .where("key", "in", ["next_handle", "head_seq"])
          .compile(),
      ),
      begin: db.prepare("BEGIN"),
      commit: db.prepare("COMMIT"),
      insertEvent: prep(k.insertInto("event").values({ seq: 0, body: "", next_handle: 0, changes: "" }).compile()),
      tail: prep(k.selectFrom("event").select(["seq", "changes", "body"]).where("seq", ">", 0).orderBy("seq").compile()),
      setCheckpoint: prep(k.updateTable("meta").set({ value: 0 }).where("key", "=", "checkpoint_seq").compile()),
      newestCounters: prep(k.selectFrom("event").select(["seq", "next_handle"]).where("next_handle", "is not", null).orderBy("seq", "desc").limit(1).compile()),
      readEvents: prep(k.selectFrom("event").select(["seq", "body"]).where("seq", ">", 0).orderBy("seq").limit(0).compile()),
      oldestEvent: prep(k.selectFrom("event").select((eb) => eb.fn.min("seq").as("seq")).compile()),
      pruneEvents: prep(k.deleteFrom("event").where("seq", "<=", 0).compile()),
      tombstone: prep(k.selectFrom("tombstone").select(["reason", "seq"]).where("handle", "=", 0).compile()),
      allRows: prep(k.selectFrom("sentex").select(["handle", "context", "sentence", "premise", "creator", "created_at", "seq"]).orderBy("handle").compile()),
      rowCount: prep(k.selectFrom("sentex").select((eb) => eb.fn.countAll<number>().as("n")).compile()),
      insertSegment: prep(k.insertInto("segment").values({ first_handle: 0, last_handle: 0, row_count: 0, body: "" }).compile()),
      deleteSegment: prep(k.deleteFrom("segment").where("first_handle", "=", 0).compile()),
      segmentBody: prep(k.selectFrom("segment").select("body").where("first_handle", "=", 0).compile()),
      segmentBodies: prep(k.selectFrom("segment").select("body").orderBy("first_handle").compile()),
      segmentRanges: prep(k.selectFrom("segment").select(["first_handle", "last_handle"]).orderBy("first_handle").compile()),
      segmentRowCount: prep(k.selectFrom("segment").select((eb) => eb.fn.coalesce(eb.fn.sum<number>("row_count"), eb.lit(0)).as("n")).compile()),
      principalOf: prep(k.selectFrom("principal").select("token_sha256").where("id", "=", "").compile()),
      putPrincipal: prep(
        k
          .insertInto("principal")
          .values({ id: "", token_sha256: "" })
          .onConflict((oc) => oc.column("id").doUpdateSet((eb) => ({ token_sha256: eb.ref("excluded.token_sha256") })))
          .compile(),
      ),
      meta: prep(k.selectFrom("meta").select(["key", "value"]).compile()),
      putIdempotency: prep(
        k
          .insertInto("idempotency")
          .values({ caller: "", key: "", request_sha256: "", status: 0, answer: "", seq: 0, created_at: 0 })
          .onConflict((oc) =>
            oc.columns(["caller", "key"]).doUpdateSet((eb) => ({
              request_sha256: eb.ref("excluded.request_sha256"),
              status: eb.ref("excluded.status"),
              answer: eb.ref("excluded.answer"),
              seq: eb.ref("excluded.seq"),
              created_at: eb.ref("excluded.created_at"),
            })),
          )
          .compile(),
      ),
      pruneIdempotency: prep(k.deleteFrom("idempotency").where("created_at", "<", 0).compile()),
      idempotencyKeys: prep(
        k.selectFrom("idempotency").select(["caller", "key", "request_sha256", "status", "answer", "seq", "created_at"]).where("created_at", ">=", 0).orderBy("created_at").compile(),
      ),
    };
    this.openMeta = this.readMeta();
    this.headSeq = this.openMeta.headSeq;
    this.checkpointSeq = (this.stmts.meta!.all() as { key: string; value: number }[]).find((r) => r.key === "checkpoint_seq")!.value;
    this.pending = this.readTail();
    for (const r of this.stmts.segmentRanges!.all() as { first_handle: number; last_handle: number }[]) this.segments.add(r.first_handle, r.last_handle);
  }

  /** The changes of the events after the checkpoint (the tail), folded in seq order. */
  private readTail(): Pending {
    const p = new Pending();
    for (const r of this.stmts.tail!.iterate(this.checkpointSeq) as Iterable<{ seq: number; changes: string | null; body: string }>) {
      p.events++;
      if (r.changes === AS_ADDED) p.apply(addedInserts(decodeEvent(r.seq, r.body).added));
      else if (r.changes !== null) p.apply(JSON.parse(r.changes) as Changes);
    }
    return p;
  }

  /**
   * The counters: the `meta` row, or the newest event row that carries them where it is
   * ahead. Both only grow, and every committed group left its final counters in one of the
   * two (see `flushMeta`), so the larger of each is exact. Rows written before migration 008
   * carry no `next_handle`; their groups all wrote `meta`.
   */
  private readMeta(): StoreMeta {
    const rows = this.stmts.meta!.all() as { key: string; value: number }[];
    const get = (key: string) => rows.find((r) => r.key === key)?.value ?? 0;
    const newest = this.stmts.newestCounters!.get(1) as { seq: number; next_handle: number | null } | undefined;
    return { nextHandle: Math.max(get("next_handle"), newest?.next_handle ?? 0), headSeq: Math.max(get("head_seq"), newest?.seq ?? 0) };
  }

  /** Open (creating and migrating as needed) the store file at `path`. */
  static async open(path: string, durability: Durability, opts: StoreOptions = {}): Promise<SqliteStore> {
    const db = new Database(path);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("busy_timeout = 5000");
    const kysely = new Kysely<Schema>({ dialect: new SqliteDialect({ database: db }) });
    const { error } = await new Migrator({ db: kysely, provider: migrationProvider("sqlite") }).migrateToLatest();
    if (error) throw error;
    const wal = `${path}-wal`;
    const ownSync = durability === "full" && path !== ":memory:" && existsSync(wal);
    // Without a WAL file to fsync ourselves, `full` falls back to SQLite's own fsync per COMMIT.
    if (durability === "full" && !ownSync) db.pragma("synchronous = FULL");
    return new SqliteStore(db, kysely, ownSync ? wal : undefined, opts);
  }

  /**
   * Every row as of the head in handle order, as [handle, context, sentence, premise,
   * creator, createdAt, seq]: the checkpoint's, streamed, with the tail's changes applied.
   */
  rows(): Iterable<RawRow> {
    const table = this.stmts.allRows!.raw(true).iterate() as Iterable<RawRow>;
    // Read before the table's rows stream: the connection runs one statement at a time.
    const bodies = this.segments.size ? (this.stmts.segmentBodies!.all() as { body: string }[]) : [];
    const checkpoint = bodies.length ? mergeByHandle(table, segmentRows(bodies)) : table;
    return this.pending.map.size ? mergeRows(checkpoint, this.pending) : checkpoint;
  }

  /** How many sentexes are stored as of the head (for the reopen's progress). */
  rowCount(): number {
    const segmented = this.segments.size ? (this.stmts.segmentRowCount!.get() as { n: number }).n : 0;
    return (this.stmts.rowCount!.get() as { n: number }).n + segmented + this.pending.countDelta();
  }

  /** Open the turn's group if none is open; it commits on the next macrotask. Its BEGIN waits for a statement that needs it (`open`). */
  begin(): void {
    if (this.failed) throw this.failed;
    if (this.inTx) return;
    this.inTx = true;
    this.groupSerial++;
    setImmediate(() => this.commit());
  }

  /** Before a statement of the open group: its transaction is begun, with the held-back event row first. */
  private open(): void {
    if (!this.inTx || this.began) return;
    this.stmts.begin!.run(); // the daemon is the only writer: a deferred BEGIN takes the lock at the first insert
    this.began = true;
    const e = this.loneEvent;
    if (e) {
      this.loneEvent = undefined;
      this.stmts.insertEvent!.run(...e);
    }
  }

  /** Every write statement runs here: inside the open group's transaction (outside a group, on its own). */
  private write(st: Database.Statement, ...params: unknown[]): void {
    this.open();
    st.run(...params);
  }

  /** Resolves once everything written so far is committed (durably, per mode). */
  durable(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.inTx) return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
    const last = this.walSync?.lastGroup();
    if (last) return new Promise((resolve, reject) => last.waiters.push({ resolve, reject }));
    return Promise.resolve();
  }

  /** Run `fn` once the current group is durable (before its writers are answered). */
  onCommit(fn: () => void): void {
    if (this.inTx) this.afterCommit.push(fn);
    else fn();
  }

  /** The first failure, once the store has stopped (K12). */
  get failure(): unknown {
    return this.failed;
  }

  private commit(): void {
    if (!this.inTx) return;
    const waiters = this.waiters;
    const after = this.afterCommit;
    this.waiters = [];
    this.afterCommit = [];
    try {
      this.flushRows();
      this.flushMeta();
      const lone = this.loneEvent;
      if (this.began) this.stmts.commit!.run();
      else if (lone) this.stmts.insertEvent!.run(...lone); // the group's only statement, in autocommit
      if (this.began || lone) this.commits++;
      this.began = false;
      this.loneEvent = undefined;
    } catch (e) {
      this.waiters = waiters;
      this.abort(e);
      return;
    }
    this.inTx = false;
    this.committedRows();
    const group: Group = { waiters, after };
    if (this.walSync) this.walSync.committed(group);
    else release(group);
  }

  /**
   * Stop for good (K12): roll back the open transaction (its writes were never committed,
   * so never visible to a reader), reject its writers and every later one. Groups already
   * committed finish their fsync. Idempotent; `onFailure` hears the first failure only.
   */
  abort(e: unknown): void {
    const first = this.failed === undefined;
    if (first) this.failed = e;
    if (this.inTx) {
      this.inTx = false;
      this.loneEvent = undefined;
      if (this.began) {
        this.began = false;
        try {
          this.db.exec("ROLLBACK");
        } catch {
          // SQLite already rolled back (an I/O error does); nothing is left open either way
        }
      }
      const waiters = this.waiters;
      this.waiters = [];
      this.afterCommit = [];
      this.pendingMeta = this.eventMeta = undefined;
      this.pruned = false;
      this.resetGroup(); // the pending set is as the file: the group's changes never joined it
      for (const w of waiters) w.reject(this.failed);
    }
    if (first) this.onFailure?.(e);
  }

  /**
   * INSERT_BATCH rows per statement while a whole batch is left (an edit's rows), through
   * one reused parameter array; the rest one statement each. One statement per 64 rows
   * costs a third less per row than one per row (a better-sqlite3 call and a VDBE run each).
   */
  insertSentexes(rows: readonly StoredRow[]): void {
    const large = rows.length > this.limits.eventRows;
    if (!this.checkpointing && large) this.startCheckpoint();
    if (!this.checkpointing) {
      for (const r of rows) pushInsert(this.groupChanges, r);
      this.logged(rows.length);
      return;
    }
    if (large) this.writeSegments(rows);
    else this.writeRows(rows);
  }

  /** A large write's new rows (fresh handles, in order) into the checkpoint as segments of at most `segmentRows`. */
  private writeSegments(rows: readonly StoredRow[]): void {
    const ranges = (this.groupSegments ??= this.segments.copy());
    const size = this.limits.segmentRows;
    for (let i = 0; i < rows.length; i += size) {
      const part = rows.length <= size ? rows : rows.slice(i, i + size);
      for (let j = 1; j < part.length; j++) if (part[j]!.handle <= part[j - 1]!.handle) throw new Error(`invariant: a write's rows are in handle order (${part[j]!.handle} after ${part[j - 1]!.handle})`);
      const first = part[0]!.handle;
      const last = part[part.length - 1]!.handle;
      ranges.add(first, last);
      this.write(this.stmts.insertSegment!, first, last, part.length, encodeSegment(part));
    }
  }

  /** The first handle of the segment whose range holds `handle`, if one does. */
  private segmentHolding(handle: number): number | undefined {
    const ranges = this.groupSegments ?? this.segments;
    return ranges.size === 0 ? undefined : ranges.holding(handle);
  }

  /** A segment's rows, without those the open group removed from it; the segment row goes. */
  private takeSegment(first: number): StoredRow[] {
    const { body } = this.stmts.segmentBody!.get(first) as { body: string };
    this.write(this.stmts.deleteSegment!, first);
    (this.groupSegments ??= this.segments.copy()).remove(first);
    const rows = decodeSegment(body).map(storedRow);
    const removed = this.segmentDeletes.get(first);
    if (removed === undefined) return rows;
    this.segmentDeletes.delete(first);
    const kept = rows.filter((r) => !removed.has(r.handle));
    if (kept.length + removed.size !== rows.length) throw new Error(`invariant: the segment at ${first} lost ${removed.size} rows it does not hold`);
    return kept;
  }

  /** Before a checkpoint row is updated: the segment holding it, if one does, moves to the `sentex` table. */
  private unsegment(handle: number): void {
    const first = this.segmentHolding(handle);
    if (first !== undefined) this.writeRows(this.takeSegment(first));
  }

  /** Before COMMIT: each segment the group removed rows from is written again without them (or goes, when none is left). */
  private flushSegmentDeletes(): void {
    if (this.segmentDeletes.size === 0) return;
    for (const first of [...this.segmentDeletes.keys()]) {
      const kept = this.takeSegment(first);
      if (kept.length) this.writeSegments(kept);
    }
  }

  /** `n` row changes went to the group's log instead of the tables. */
  private logged(n: number): void {
    this.sinceEventRows += n;
    this.groupRows += n;
  }

  /**
   * A row removed from the tables: it goes (unless the checkpoint never had it; from its
   * segment before COMMIT when one holds it), its tombstone comes.
   */
  private writeDelete(handle: number, reason: string, seq: number, inTable = true): void {
    if (inTable) {
      const first = this.segmentHolding(handle);
      if (first === undefined) this.write(this.stmts.deleteSentex!, handle);
      else {
        let removed = this.segmentDeletes.get(first);
        if (removed === undefined) this.segmentDeletes.set(first, (removed = new Set()));
        removed.add(handle);
      }
    }
    this.write(this.stmts.insertTombstone!, handle, reason, seq);
  }

  /** Rows straight into the sentex table. */
  private writeRows(rows: readonly StoredRow[]): void {
    const buf = this.rowParams;
    let i = 0;
    for (; i + INSERT_BATCH <= rows.length; i += INSERT_BATCH) {
      for (let j = 0; j < INSERT_BATCH; j++) {
        const r = rows[i + j]!;
        const o = j * ROW_COLUMNS;
        buf[o] = r.handle;
        buf[o + 1] = r.context;
        buf[o + 2] = r.sentence;
        buf[o + 3] = r.premise;
        buf[o + 4] = r.creator;
        buf[o + 5] = r.createdAt;
        buf[o + 6] = r.seq;
      }
      this.write(this.stmts.insertSentexBatch!, buf);
    }
    for (; i < rows.length; i++) {
      const r = rows[i]!;
      this.write(this.stmts.insertSentex!, r.handle, r.context, r.sentence, r.premise, r.creator, r.createdAt, r.seq);
    }
  }

  updateSentex(handle: number, premise: number, creator: string | null, createdAt: number): void {
    if (this.checkpointing) {
      this.unsegment(handle);
      this.write(this.stmts.updateSentex!, premise, creator, createdAt, handle);
    }
    else {
      pushUpdate(this.groupChanges, handle, premise, creator, createdAt);
      this.logged(1);
    }
  }

  deleteSentex(handle: number, reason: string, seq: number): void {
    if (this.checkpointing) this.writeDelete(handle, reason, seq);
    else {
      pushDelete(this.groupChanges, handle, reason, seq);
      this.logged(1);
    }
  }

  /**
   * Checkpoint in the open group: write the pending changes and the group's so far to the
   * tables (the pending set itself changes only once the group commits), and send the
   * group's later changes there directly. Its COMMIT records the checkpoint's seq.
   */
  private startCheckpoint(): void {
    const all = this.pending.copy().apply(this.groupChanges);
    const inserts: StoredRow[] = [];
    for (const [h, e] of all.map) {
      if (e.del) this.writeDelete(h, e.del.reason, e.del.seq, !e.fresh); // a handle inserted since the checkpoint has no row there
      if (e.ins) inserts.push(storedRow(e.ins));
      else if (e.upd && !e.del) {
        this.unsegment(h);
        this.write(this.stmts.updateSentex!, e.upd[0], e.upd[1], e.upd[2], h);
      }
    }
    this.writeRows(inserts.sort((a, b) => a.handle - b.handle));
    this.groupChanges.length = 0;
    this.sinceEvent = this.sinceEventRows = 0;
    this.checkpointing = true;
  }

  /**
   * Before COMMIT: a group whose last row changes have no event after them (the reopen's
   * repairs), or that reaches a threshold, checkpoints; a checkpointing group records the
   * seq the tables are now complete to.
   */
  private flushRows(): void {
    const p = this.pending;
    const due = this.sinceEvent < this.groupChanges.length || p.events + this.groupEvents >= this.limits.events || p.rows + this.groupRows >= this.limits.rows;
    if (!this.checkpointing && due && (this.groupChanges.length || this.groupEvents)) this.startCheckpoint();
    this.flushSegmentDeletes();
    if (this.checkpointing) this.write(this.stmts.setCheckpoint!, this.headSeq, "checkpoint_seq");
    if (this.pruneUpto !== undefined) {
      this.write(this.stmts.pruneEvents!, Math.min(this.pruneUpto, this.checkpointing ? this.headSeq : this.checkpointSeq));
      this.pruned = true;
    }
  }

  /** After COMMIT: the pending set is the file's again. */
  private committedRows(): void {
    if (this.groupSegments) this.segments = this.groupSegments;
    if (this.checkpointing) {
      this.pending = new Pending();
      this.checkpointSeq = this.headSeq;
    } else if (this.groupChanges.length || this.groupEvents) {
      this.pending.apply(this.groupChanges);
      this.pending.events += this.groupEvents;
    }
    this.resetGroup();
  }

  private resetGroup(): void {
    this.groupSegments = undefined;
    if (this.segmentDeletes.size) this.segmentDeletes.clear(); // clearing allocates a new table even when empty
    this.groupChanges.length = 0;
    this.sinceEvent = this.sinceEventRows = this.groupEvents = this.groupRows = 0;
    this.checkpointing = false;
    this.pruneUpto = undefined;
  }

  /** Record the counters; they reach the file with the group's newest event row, or in `meta` just before COMMIT. */
  setMeta(meta: StoreMeta): void {
    this.pendingMeta = meta;
    if (meta.headSeq > this.headSeq) this.headSeq = meta.headSeq;
  }

  /**
   * A group whose newest event row carries its final counters (a write's event: its seq is
   * the head) writes no `meta` row: one page fewer per commit. A group without one (the
   * reopen's repairs), or that pruned events (the row carrying them may be gone), does.
   */
  private flushMeta(): void {
    const m = this.pendingMeta;
    const e = this.eventMeta;
    if (m && (this.pruned || e?.headSeq !== m.headSeq || e.nextHandle !== m.nextHandle)) {
      this.write(this.stmts.setMeta!, m.nextHandle, m.headSeq, "next_handle", "head_seq");
    }
    this.pendingMeta = this.eventMeta = undefined;
    this.pruned = false;
  }

  /**
   * The event in its compact encoding (event.ts). The write's input is not kept: one SQLite
   * file has one daemon, and nobody replays it. The row carries `next_handle` when the
   * counters set last are this event's (the KB sets them just before it inserts the event).
   * Its row changes ride in its `changes` (`+` when they are its added records' inserts,
   * rowlog.ts); a group's first event row waits for COMMIT while it is the only statement.
   */
  insertEvent(event: FeedEvent, _write: () => string): void {
    const seq = event.seq;
    const m = this.pendingMeta;
    const next = m?.headSeq === seq ? m.nextHandle : null;
    if (!this.checkpointing && this.sinceEventRows > this.limits.eventRows) this.startCheckpoint();
    const c = this.groupChanges;
    const from = this.sinceEvent;
    const changes = this.checkpointing || from === c.length ? null : asAdded(c, from, event.added) ? AS_ADDED : JSON.stringify(from === 0 ? c : c.slice(from));
    const body = encodeEvent(event);
    if (this.inTx && !this.began && this.loneEvent === undefined) this.loneEvent = [seq, body, next, changes];
    else this.write(this.stmts.insertEvent!, seq, body, next, changes);
    this.eventMeta = next === null ? undefined : { headSeq: seq, nextHandle: next };
    this.sinceEvent = c.length;
    this.sinceEventRows = 0;
    this.groupEvents++;
    if (seq > this.headSeq) this.headSeq = seq;
  }

  /** Durable events after `afterSeq`, oldest first, at most `limit`. */
  async readEvents(afterSeq: number, limit: number): Promise<FeedEvent[]> {
    return (this.stmts.readEvents!.all(afterSeq, limit) as { seq: number; body: string }[]).map((r) => decodeEvent(r.seq, r.body));
  }

  oldestEventSeq(): number | undefined {
    const r = this.stmts.oldestEvent!.get() as { seq: number | null };
    return r.seq ?? undefined;
  }

  /**
   * At the group's COMMIT, and never past the checkpoint as it stands then (the group's own,
   * if it checkpoints): the events after it are the only record of their rows.
   */
  pruneEvents(uptoSeq: number): void {
    this.pruneUpto = Math.max(this.pruneUpto ?? 0, uptoSeq);
  }

  insertIdempotency(r: IdempotencyRow): void {
    this.write(this.stmts.putIdempotency!, r.caller, r.key, r.requestSha256, r.status, r.answer, r.seq, r.createdAt);
  }

  pruneIdempotency(beforeMs: number): void {
    this.write(this.stmts.pruneIdempotency!, beforeMs);
  }

  async idempotencyKeys(sinceMs: number): Promise<IdempotencyRow[]> {
    return (this.stmts.idempotencyKeys!.all(sinceMs) as IdempotencyTable[]).map(idempotencyRow);
  }

  /** The checkpoint's tombstone, else the tail's, else the open group's (a tombstone is never replaced). */
  tombstone(handle: number): { reason: string; seq: number } | undefined {
    const t = this.stmts.tombstone!.get(handle) as { reason: string; seq: number } | undefined;
    return t ?? this.pending.map.get(handle)?.del ?? tombstoneIn(this.groupChanges, handle);
  }

  principals(): Promise<PrincipalRow[]> {
    return this.kysely.selectFrom("principal").select(["id", "token_sha256"]).execute();
  }

  /**
   * Written synchronously into the turn's group, so that group's COMMIT (and, at `full`, its
   * fsync) makes the row durable; resolves only then, with the digest it replaced.
   */
  async putPrincipal(id: string, tokenSha256: string): Promise<string | undefined> {
    const old = (this.stmts.principalOf!.get(id) as { token_sha256: string } | undefined)?.token_sha256;
    this.begin();
    this.write(this.stmts.putPrincipal!, id, tokenSha256);
    await this.durable();
    return old;
  }

  async close(): Promise<void> {
    if (this.failed === undefined) this.commit();
    await this.walSync?.drain();
    if (this.walFd !== undefined) {
      closeSync(this.walFd);
      this.walFd = undefined;
    }
    this.db.close();
  }
}
