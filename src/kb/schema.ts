/**
 * The store of record's schema and its one migration set, for both dialects (K8, K13).
 * SQLite keeps `integer` (a 64-bit value; `integer primary key` is the rowid); PostgreSQL
 * needs `bigint` for the same values (handles, seqs, epoch-ms times). The lease table
 * exists on PostgreSQL only: there several daemons share one database and one of them is
 * elected the writer (pgstore.ts); an SQLite file has one daemon by construction. For the
 * same reason only PostgreSQL keeps each event's write input (`event.write`, replayed by
 * followers), the epoch each event was committed under (`event.epoch`), the writer's URL
 * and lock session (`lease.url`, `lease.pid`), and the `member` table, where each daemon of a
 * cluster records itself (pgmembers.ts).
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
interface EventTable {
  seq: number;
  body: string;
  /** PostgreSQL: the write's input, which a follower replays (pgstore.ts); absent on SQLite. */
  write?: string | null;
  /** PostgreSQL: the lease epoch of the transaction that committed it; absent on SQLite. */
  epoch?: number | null;
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

export const migrationProvider = (dialect: Dialect): MigrationProvider => ({ getMigrations: async () => migrationsFor(dialect) });
