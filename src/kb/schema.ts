/**
 * The store of record's schema and its one migration set, for both dialects (K8, K13).
 * SQLite keeps `integer` (a 64-bit value; `integer primary key` is the rowid); PostgreSQL
 * needs `bigint` for the same values (handles, seqs, epoch-ms times). The lease table
 * exists on PostgreSQL only: there several daemons share one database and one of them is
 * elected the writer (pgstore.ts); an SQLite file has one daemon by construction. For the
 * same reason only PostgreSQL keeps each event's write input (`event.write`, replayed by
 * followers), the epoch each event was committed under (`event.epoch`), the writer's URL
 * and lock session (`lease.url`, `lease.pid`), and the `member` table, where each daemon of a
 * cluster records itself (pgmembers.ts). Only SQLite keeps `event.next_handle`: its
 * counters ride on the newest event row instead of a `meta` update per group (store.ts);
 * and `event.changes` with `meta.checkpoint_seq`: its log is the store of record, the
 * sentex and tombstone tables a checkpoint of it (rowlog.ts).
 */
import { type Kysely, type Migration, type MigrationProvider, sql, type Generated } from "kysely";

export type Dialect = "sqlite" | "postgres";

interface SentexTable {
  handle: number;
  context: string;
  sentence: string;
  premise: number;
  creator: string | null;
  created_at: number;
  seq: number;
}
interface MetaTable {
  key: string;
  value: number;
}
/** SQLite: rows of one large write kept in the checkpoint as one row (segment.ts). */
interface SegmentTable {
  first_handle: number;
  last_handle: number;
  row_count: number;
  body: string;
}
interface EventTable {
  seq: number;
  body: string;
  /** PostgreSQL: the write's input, which a follower replays (pgstore.ts); absent on SQLite. */
  write?: string | null;
  /** PostgreSQL: the lease epoch of the transaction that committed it; absent on SQLite. */
  epoch?: number | null;
  /**
   * SQLite: `next_handle` as of this event (its seq is `head_seq`), so a group that writes an
   * event needs no `meta` row (store.ts); null on rows written before migration 008.
   */
  next_handle?: number | null;
  /**
   * SQLite: the row changes the group made since its previous event (rowlog.ts), while the
   * seq is after the checkpoint (`meta.checkpoint_seq`); null when there were none or the
   * group wrote them to the tables itself, and on rows written before migration 009.
   */
  changes?: string | null;
}
interface TombstoneTable {
  handle: number;
  reason: string;
  seq: number;
}
interface PrincipalTable {
  id: string;
  token_sha256: string;
  created_at: Generated<number>;
}
/**
 * One answered keyed write (an `Idempotency-Key`): written in the same group transaction as
 * the write, so the key is durable exactly when the write is (docs/daemon.md D18).
 */
export interface IdempotencyTable {
  caller: string;
  key: string;
  /** hex sha256 of the request's method, path and body: a retry with another is refused. */
  request_sha256: string;
  status: number;
  /** The answer's body, byte for byte as first sent. */
  answer: string;
  seq: number;
  created_at: number;
}
/** The writer's lease (PostgreSQL): one row, `name` = 'writer'. */
interface LeaseTable {
  name: string;
  holder: string;
  epoch: number;
  expires_at: Date;
  /** The writer's advertised URL (followers redirect writes there); null until it listens. */
  url: string | null;
  /** The backend pid of the writer's lock session (pg-election.ts). */
  pid: number | null;
}
/** One daemon of a cluster (PostgreSQL), as it last recorded itself; keyed by its lease holder id. */
interface MemberTable {
  holder: string;
  url: string | null;
  role: "writer" | "follower";
  epoch: number;
  applied_seq: number;
  lag_ms: number;
  /** `clock_timestamp()` of its last record: ages are read with the database's clock. */
  seen_at: Date;
}
export interface Schema {
  sentex: SentexTable;
  meta: MetaTable;
  event: EventTable;
  tombstone: TombstoneTable;
  segment: SegmentTable;
  principal: PrincipalTable;
  lease: LeaseTable;
  member: MemberTable;
  idempotency: IdempotencyTable;
}

function migrationsFor(dialect: Dialect): Record<string, Migration> {
  const int = dialect === "sqlite" ? "integer" : "bigint";
  const nowMs = dialect === "sqlite" ? sql`(unixepoch() * 1000)` : sql`((extract(epoch from now()) * 1000)::bigint)`;
  return {
    "001-sentex-store": {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("sentex")
          .addColumn("handle", int, (c) => c.primaryKey())
          .addColumn("context", "text", (c) => c.notNull())
          .addColumn("sentence", "text", (c) => c.notNull())
          .addColumn("premise", "integer", (c) => c.notNull())
          .addColumn("creator", "text")
          .addColumn("created_at", int, (c) => c.notNull())
          .addColumn("seq", int, (c) => c.notNull())
          .execute();
        await db.schema.createTable("meta").addColumn("key", "text", (c) => c.primaryKey()).addColumn("value", int, (c) => c.notNull()).execute();
        await db.schema.createTable("event").addColumn("seq", int, (c) => c.primaryKey()).addColumn("body", "text", (c) => c.notNull()).execute();
        await db.schema
          .createTable("tombstone")
          .addColumn("handle", int, (c) => c.primaryKey())
          .addColumn("reason", "text", (c) => c.notNull())
          .addColumn("seq", int, (c) => c.notNull())
          .execute();
        await db.schema
          .createTable("principal")
          .addColumn("id", "text", (c) => c.primaryKey())
          .addColumn("token_sha256", "text", (c) => c.notNull().unique())
          .addColumn("created_at", int, (c) => c.notNull().defaultTo(nowMs))
          .execute();
        await (db as Kysely<Schema>).insertInto("meta").values([{ key: "next_handle", value: 1 }, { key: "head_seq", value: 0 }]).execute();
      },
    },
    ...(dialect === "postgres"
      ? {
          "002-writer-lease": {
            async up(db: Kysely<unknown>) {
              await db.schema
                .createTable("lease")
                .addColumn("name", "text", (c) => c.primaryKey())
                .addColumn("holder", "text", (c) => c.notNull())
                .addColumn("epoch", "bigint", (c) => c.notNull())
                .addColumn("expires_at", "timestamptz", (c) => c.notNull())
                .execute();
              // epoch 0, already expired: the first daemon to try is elected with epoch 1.
              await sql`insert into lease (name, holder, epoch, expires_at) values ('writer', '', 0, '-infinity')`.execute(db);
            },
          },
          "003-followers": {
            async up(db: Kysely<unknown>) {
              await db.schema.alterTable("event").addColumn("write", "text").execute();
              await db.schema.alterTable("lease").addColumn("url", "text").execute();
            },
          },
          "004-members": {
            async up(db: Kysely<unknown>) {
              await db.schema
                .createTable("member")
                .addColumn("holder", "text", (c) => c.primaryKey())
                .addColumn("url", "text")
                .addColumn("role", "text", (c) => c.notNull().check(sql`role in ('writer', 'follower')`))
                .addColumn("epoch", "bigint", (c) => c.notNull())
                .addColumn("applied_seq", "bigint", (c) => c.notNull())
                .addColumn("lag_ms", "bigint", (c) => c.notNull())
                .addColumn("seen_at", "timestamptz", (c) => c.notNull())
                .execute();
            },
          },
          "006-writer-lock": {
            async up(db: Kysely<unknown>) {
              // The backend pid of the writer's lock session, and the epoch each event was committed under.
              await db.schema.alterTable("lease").addColumn("pid", "integer").execute();
              await db.schema.alterTable("event").addColumn("epoch", "bigint").execute();
            },
          },
          "007-commit-function": {
            async up(db: Kysely<unknown>) {
              await sql.raw(COMMIT_FUNCTION).execute(db);
            },
          },
        }
      : {}),
    ...(dialect === "sqlite"
      ? {
          "008-sqlite-event-counters": {
            async up(db: Kysely<unknown>) {
              await db.schema.alterTable("event").addColumn("next_handle", "integer").execute();
            },
          },
          "009-sqlite-log-of-record": {
            async up(db: Kysely<unknown>) {
              // Every event already logged had its rows written to the tables: they are complete to the head.
              await db.schema.alterTable("event").addColumn("changes", "text").execute();
              await sql`insert into meta (key, value) select 'checkpoint_seq', max(coalesce((select value from meta where key = 'head_seq'), 0), coalesce((select max(seq) from event), 0))`.execute(db);
            },
          },
          "010-sqlite-checkpoint-segments": {
            async up(db: Kysely<unknown>) {
              await db.schema
                .createTable("segment")
                .addColumn("first_handle", "integer", (c) => c.primaryKey())
                .addColumn("last_handle", "integer", (c) => c.notNull())
                .addColumn("row_count", "integer", (c) => c.notNull())
                .addColumn("body", "text", (c) => c.notNull())
                .execute();
            },
          },
        }
      : {}),
    "005-idempotency-keys": {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("idempotency")
          .addColumn("caller", "text", (c) => c.notNull())
          .addColumn("key", "text", (c) => c.notNull())
          .addColumn("request_sha256", "text", (c) => c.notNull())
          .addColumn("status", "integer", (c) => c.notNull())
          .addColumn("answer", "text", (c) => c.notNull())
          .addColumn("seq", int, (c) => c.notNull())
          .addColumn("created_at", int, (c) => c.notNull())
          .addPrimaryKeyConstraint("idempotency_pk", ["caller", "key"])
          .execute();
        await db.schema.createIndex("idempotency_created_at").on("idempotency").column("created_at").execute();
      },
    },
  };
}

/** SQLSTATE of a commit refused because the lease is not ours (expired, or another holder or epoch). */
export const LEASE_LOST = "KF001";
/** SQLSTATE of a commit refused because `head_seq` is not the head this writer last committed. */
export const HEAD_MOVED = "KF002";

/**
 * One group commit in ONE statement (PostgreSQL; pgstore.ts calls it in autocommit mode, so
 * the statement is its own transaction and any exception rolls all of it back):
 * `koinii_commit(holder, epoch, lease_ms, expected_head, group)`. It first extends the lease
 * by `lease_ms` from `clock_timestamp()` through an UPDATE whose condition is the fence
 * (our holder, our epoch, not expired), so the lease row stays locked until this
 * transaction ends and an election waits for it; no row: LEASE_LOST. Then, when the group
 * moves the head, the compare-and-set of `head_seq` (else HEAD_MOVED), `next_handle` and the
 * NOTIFY (delivered at commit, only if it commits); then the group's rows, one multi-row
 * statement per kind, in this order: sentex inserts, updates, deletes and their
 * tombstones, event inserts (with the epoch), the event prune, the idempotency prune and
 * the idempotency upserts. `group` is jsonb: {head?, nextHandle?, insert, update, delete,
 * event, prune?, idem, idemPrune?} (arrays of row objects; pgstore.ts `groupJson`).
 */
const COMMIT_FUNCTION = `
create or replace function koinii_commit(p_holder text, p_epoch bigint, p_lease_ms float8, p_head bigint, g jsonb) returns void
language plpgsql as $fn$
begin
  update lease set expires_at = clock_timestamp() + make_interval(secs => p_lease_ms / 1000)
    where name = 'writer' and holder = p_holder and epoch = p_epoch and expires_at > clock_timestamp();
  if not found then
    raise exception using errcode = '${LEASE_LOST}', message = format('the writer lease of epoch %s is lost (expired or taken by another daemon)', p_epoch);
  end if;
  if g ? 'head' then
    update meta set value = (g->>'head')::bigint where key = 'head_seq' and value = p_head;
    if not found then
      raise exception using errcode = '${HEAD_MOVED}', message = format('head_seq is no longer %s: another writer committed (epoch %s is stale)', p_head, p_epoch);
    end if;
    update meta set value = (g->>'nextHandle')::bigint where key = 'next_handle';
    perform pg_notify('koinii_events', g->>'head');
  end if;
  insert into sentex (handle, context, sentence, premise, creator, created_at, seq)
    select x.handle, x.context, x.sentence, x.premise, x.creator, x.created_at, x.seq
    from jsonb_to_recordset(g->'insert') as x(handle bigint, context text, sentence text, premise integer, creator text, created_at bigint, seq bigint);
  update sentex s set premise = x.premise, creator = x.creator, created_at = x.created_at
    from jsonb_to_recordset(g->'update') as x(handle bigint, premise integer, creator text, created_at bigint)
    where s.handle = x.handle;
  delete from sentex where handle in (select x.handle from jsonb_to_recordset(g->'delete') as x(handle bigint));
  insert into tombstone (handle, reason, seq)
    select x.handle, x.reason, x.seq from jsonb_to_recordset(g->'delete') as x(handle bigint, reason text, seq bigint)
    on conflict (handle) do nothing;
  insert into event (seq, body, write, epoch)
    select x.seq, x.body, x.write, p_epoch from jsonb_to_recordset(g->'event') as x(seq bigint, body text, write text);
  if g ? 'prune' then
    delete from event where seq <= (g->>'prune')::bigint;
  end if;
  if g ? 'idemPrune' then
    delete from idempotency where created_at < (g->>'idemPrune')::bigint;
  end if;
  insert into idempotency (caller, key, request_sha256, status, answer, seq, created_at)
    select x.caller, x.key, x.request_sha256, x.status, x.answer, x.seq, x.created_at
    from jsonb_to_recordset(g->'idem') as x(caller text, key text, request_sha256 text, status integer, answer text, seq bigint, created_at bigint)
    on conflict (caller, key) do update set request_sha256 = excluded.request_sha256, status = excluded.status, answer = excluded.answer, seq = excluded.seq, created_at = excluded.created_at;
end
$fn$`;

export const migrationProvider = (dialect: Dialect): MigrationProvider => ({ getMigrations: async () => migrationsFor(dialect) });
