/**
 * PostgreSQL for the store tests: KOINII_TEST_PG_URL when the shared setup provides one,
 * else a throwaway cluster started here (the bench's `startPostgres`: initdb as the
 * unprivileged postgres user, a random loopback port), stopped when the file's tests end.
 * Each call to `freshDatabase` creates an empty database on it.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll } from "vitest";
import { startPostgres } from "../../bench/procs.js";

let server: { url: string; stop(): void } | undefined;

function serverUrl(): string {
  const given = process.env.KOINII_TEST_PG_URL;
  if (given) return given;
  if (!server) {
    let s: ReturnType<typeof startPostgres>;
    for (let attempt = 1; ; attempt++) {
      try {
        s = startPostgres();
        break;
      } catch (e) {
        if (attempt === 3) throw e; // a random port taken three times: something else is wrong
      }
    }
    if (!s) throw new Error("PostgreSQL is not installed (/usr/lib/postgresql/*/bin) and KOINII_TEST_PG_URL is not set");
    server = { url: `postgres://postgres@${s.host}:${s.port}/postgres`, stop: s.stop };
    afterAll(() => server?.stop());
  }
  return server.url;
}

/** A URL on a new, empty database. */
export async function freshDatabase(): Promise<string> {
  const base = new URL(serverUrl());
  const name = `koinii_t_${randomBytes(6).toString("hex")}`;
  const c = new pg.Client({ connectionString: base.toString() });
  await c.connect();
  try {
    await c.query(`create database ${name}`);
  } finally {
    await c.end();
  }
  base.pathname = `/${name}`;
  return base.toString();
}

/** Run one query on `url` with a plain `pg` client (what the tests read back "from PostgreSQL directly"). */
export async function pgQuery<R extends pg.QueryResultRow>(url: string, text: string, params: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<R>(text, params)).rows;
  } finally {
    await c.end();
  }
}
