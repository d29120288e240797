/**
 * PostgreSQL for the store tests: the cluster scripts/provision.sh brings up before the
 * suite (KOINII_TEST_PG_URL).
 * Each call to `freshDatabase` creates an empty database on it.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll } from "vitest";
import { startPostgres } from "../../bench/procs.js";
import { TEST_DB_STEM } from "../pg-runs.js";

let server: Promise<{ url: string; stop(): Promise<void> }> | undefined;

/**
 * The provisioned cluster (the global setup exports KOINII_TEST_PG_URL); run outside the
 * suite's setup, the bench's `startPostgres` provisions the same cluster.
 */
async function serverUrl(): Promise<string> {
  const given = process.env.KOINII_TEST_PG_URL;
  if (given) return given;
  server ??= startPostgres().then((s) => {
    afterAll(() => s.stop());
    return { url: String(s.config.connectionString), stop: s.stop };
  });
  return (await server).url;
}

/** A URL on a new, empty database. */
export async function freshDatabase(): Promise<string> {
  const base = new URL(await serverUrl());
  // The run's prefix (the global setup drops its databases when the run ends).
  const name = `${process.env.KOINII_TEST_DB_PREFIX ?? TEST_DB_STEM}${randomBytes(6).toString("hex")}`;
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
