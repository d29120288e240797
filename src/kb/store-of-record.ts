/**
 * The seam between the KB and its store of record (K8, K9, K12, K13). Two stores implement
 * it: the embedded SQLite file (store.ts) and PostgreSQL (pgstore.ts).
 *
 * The engine applies a write synchronously (K9); the KB then hands the write's rows to the
 * store's open **group** (`begin` opens one per event-loop turn; the row methods append to
 * it). The store commits the group as one transaction, synchronously or not, and only after
 * that commit (and its fsync, where the store owns one) runs the group's `onCommit`
 * callbacks (the KB publishes its events there) and resolves `durable()` (the writers are
 * answered). Groups commit in the order they were opened.
 *
 * Fail-stop (K12): the first failure rejects every writer not yet answered, refuses every
 * later write and calls `onFailure` once; what was not committed is never visible.
 *
 *   const store = await SqliteStore.open("./data/koinii.db", "full");
 *   store.begin(); store.setMeta({ nextHandle: 1, headSeq: 1 }); store.insertEvent({ seq: 1, added: [], removed: [] }, () => "{}");
 *   await store.durable(); // committed
 */
import type { StoredRow, RawRow } from "./write.js";
import type { IdempotencyTable } from "./schema.js";
import type { FeedEvent } from "./event.js";

export type Durability = "full" | "normal";

export interface StoreMeta {
  nextHandle: number;
  headSeq: number;
}

/** One answered keyed write (see the `idempotency` table in schema.ts). */
export interface IdempotencyRow {
  caller: string;
  key: string;
  requestSha256: string;
  status: number;
  answer: string;
  seq: number;
  /** When the first answer was made (epoch ms); the key is honoured for the retention after it. */
  createdAt: number;
}

/** An `idempotency` table row (as either database returns it) in the seam's shape. */
export const idempotencyRow = (r: IdempotencyTable): IdempotencyRow => ({
  caller: r.caller,
  key: r.key,
  requestSha256: r.request_sha256,
  status: r.status,
  answer: r.answer,
  seq: r.seq,
  createdAt: r.created_at,
});

/** A stored agent principal: its id and the hex sha256 of its token. */
export interface PrincipalRow {
  id: string;
  token_sha256: string;
}

export interface StoreOfRecord {
  /** Which engine holds the rows ("sqlite" | "postgres"), for logs and /health. */
  readonly kind: "sqlite" | "postgres";
  /** The counters as of open (the KB keeps them in memory afterwards). */
  readonly openMeta: StoreMeta;
  /** Every stored row in handle order, as read at open. */
  rows(): Iterable<RawRow>;
  /** How many rows `rows()` holds (the reopen's progress total). */
  rowCount(): number;

  /** Open the turn's group if none is open; it commits on a later macrotask. Throws once failed. */
  begin(): void;
  /** The serial of the group rows join now (grows by one at each `begin` that opens a group). */
  readonly groupSerial: number;
  /** The rows of the sentexes one write (or the reopen's repairs) created, in handle order. */
  insertSentexes(rows: readonly StoredRow[]): void;
  updateSentex(handle: number, premise: number, creator: string | null, createdAt: number): void;
  deleteSentex(handle: number, reason: string, seq: number): void;
  /** The group's counters, written once per group inside its transaction. */
  setMeta(meta: StoreMeta): void;
  /**
   * The event of `event.seq`, each store encoding it its own way, and `write`: the write's
   * input as applied, encoded on demand (a follower replays it; see Cluster; a store without
   * followers never calls it).
   */
  insertEvent(event: FeedEvent, write: () => string): void;
  pruneEvents(uptoSeq: number): void;
  /** Record a keyed write's answer in the open group (replacing an expired row of the same key). */
  insertIdempotency(row: IdempotencyRow): void;
  /** Drop, in the open group, every key made before `beforeMs` (epoch ms). */
  pruneIdempotency(beforeMs: number): void;
  /** The committed keys made at or after `sinceMs`, oldest first. */
  idempotencyKeys(sinceMs: number): Promise<IdempotencyRow[]>;
  /** Run `fn` once the open group is committed (before its writers are answered); at once if none is open. */
  onCommit(fn: () => void): void;
  /** Resolves once everything written so far is committed (durably, per mode). */
  durable(): Promise<void>;
  /** Groups committed so far. */
  readonly commits: number;
  /** The WAL fsyncs this store ran itself (`full` durability on SQLite) and their total time; undefined where the store runs none. */
  readonly walFsyncs?: { count: number; seconds: number; inline: number };

  /**
   * SQLite at `full`: a lone writer's WAL fsync runs inline only while `othersWriting` says
   * no other writer may be waiting (the daemon tells; store.ts). Absent where no fsync is ours.
   */
  gateInlineFsync?(othersWriting: () => boolean): void;

  /** Committed events after `afterSeq`, oldest first, at most `limit`. */
  readEvents(afterSeq: number, limit: number): Promise<FeedEvent[]>;
  /** The oldest seq the event log still holds; undefined when it is empty. */
  oldestEventSeq(): number | undefined;
  /** Why a handle left the store, if it did. */
  tombstone(handle: number): { reason: string; seq: number } | undefined;

  /** The stored agent principals. */
  principals(): Promise<PrincipalRow[]>;
  /** Store (or replace) an agent's token digest, committed before it resolves; returns the digest it replaced. */
  putPrincipal(id: string, tokenSha256: string): Promise<string | undefined>;

  /** Stop for good (K12): roll back what is not committed, reject its writers and every later one. */
  abort(e: unknown): void;
  /** Called once, with the first failure. */
  onFailure: ((e: unknown) => void) | undefined;
  /** The first failure, once the store has stopped. */
  readonly failure: unknown;
  /** Commit what is pending, wait for it, release the store. */
  close(): Promise<void>;

  /** The store's place in a cluster of daemons (PostgreSQL); undefined: a lone writer (SQLite). */
  readonly cluster?: Cluster;
}

/** One committed event as the log holds it: its seq, its belief diff (body) and the write's input. */
export interface LoggedEvent {
  seq: number;
  body: string;
  write: string;
}

/**
 * A daemon in a cluster on one database: the writer (holds the lease, commits) or a
 * follower (replays the log into its engine, serves reads at the seq it applied).
 */
export interface Cluster {
  readonly role: "writer" | "follower";
  /** The lease epoch this daemon writes under; 0 while it follows. */
  readonly epoch: number;
  /** The writer's advertised URL as last read from the lease; undefined when none is live. */
  readonly writerUrl: string | undefined;
  /** How long a client should wait before retrying a write no writer can take (ms). */
  readonly retryAfterMs: number;
  /** Milliseconds this daemon has known of a committed seq it has not applied; 0 when caught up. */
  lagMs(): number;
  /** Publish this daemon's URL in the lease while (or once) it is the writer. */
  advertise(url: string): Promise<void>;
  /**
   * Start following: `apply` is called with each committed event in seq order, inside a
   * replay group (the row methods fill it; `onCommit` callbacks run once it is checked).
   */
  follow(apply: (e: LoggedEvent) => void): void;
  /**
   * Hear that the principal table may have changed (the writer stored a token): on a
   * follower, at each notification and at each election attempt (the fallback).
   */
  onPrincipals(fn: () => void): void;
  /** Every daemon of the cluster as the member table last showed it (GET /v1/cluster). */
  members(): ClusterMember[];
}

/** One daemon of a cluster, as it last recorded itself (see src/kb/pgmembers.ts). */
export interface ClusterMember {
  /** Its advertised URL; null until it listens. */
  url: string | null;
  role: "writer" | "follower";
  /** The lease epoch it writes under; 0 while it follows. */
  epoch: number;
  /** The newest seq it had applied when last seen. */
  appliedSeq: number;
  /** Its apply lag when last seen (ms). */
  lagMs: number;
  /** How long ago it last recorded itself, by the database's clock (ms). */
  seenAgoMs: number;
  /** `unreachable`: not seen for UNREACHABLE_LEASES lease periods. */
  state: "live" | "unreachable";
}

/** A write sent to a follower: the writer's URL when one is known. */
export class NotWriterError extends Error {
  constructor(readonly writerUrl: string | undefined, readonly retryAfterMs: number) {
    super(writerUrl ? `this daemon follows; the writer is ${writerUrl}` : "this daemon follows and no writer is known (an election is under way); retry later");
    this.name = "NotWriterError";
  }
}
