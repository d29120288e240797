/**
 * Two PostgreSQL 15 clusters started by a test, and one address in front of them that moves:
 *
 *   const pair = await startPgPair();           // primary + synchronous standby, both running
 *   const proxy = await startProxy(pair.primary.port);
 *   const url = proxy.url("koinii");           // what the daemons are given
 *   await pair.stopImmediate(pair.primary);    // the primary dies
 *   await pair.promote(pair.standby);          // the standby takes over
 *   proxy.moveTo(pair.standby.port);           // the address moves; open connections drop
 *   await pair.stop();
 *
 * The primary runs with `wal_level=replica`, `synchronous_commit=on` and
 * `synchronous_standby_names` naming the standby; the standby is a `pg_basebackup -R` copy
 * whose `primary_conninfo` carries that `application_name`, so every COMMIT the primary
 * answers is flushed on the standby too. Each cluster lives in its own temp dir, on its own
 * free loopback port, with its socket in that dir. `initdb` refuses to run as root, so as
 * root every server command runs as `postgres` (the user scripts/provision/postgres.sh
 * creates); otherwise as the caller. Nothing is installed.
 *
 * Every command is spawned asynchronously: the proxy lives in the test's own event loop and
 * must keep forwarding while a server starts or stops.
 */
import { spawn } from "node:child_process";
import { appendFileSync, chownSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

export const PG_BIN = process.env.KOINII_PG_BIN ?? "/usr/lib/postgresql/15/bin";
/** The `application_name` the standby connects with, and the name the primary waits for. */
export const STANDBY_NAME = "koinii_standby";
/** Bound on a server start, stop or promotion (pg_ctl -t), in seconds. */
const PG_CTL_TIMEOUT_S = 60;

const isRoot = process.getuid?.() === 0;

export interface PgNode {
  name: "primary" | "standby";
  dir: string;
  port: number;
  /** A URL on this cluster's database `db`, reached directly (not through the proxy). */
  url(db?: string): string;
}

export interface PgPair {
  primary: PgNode;
  standby: PgNode;
  /** `pg_stat_replication.sync_state` of the standby as `on` sees it (undefined: not connected). */
  syncState(on: PgNode): Promise<string | undefined>;
  /** `pg_ctl stop -m immediate`: the server dies without a checkpoint, as in a crash. */
  stopImmediate(node: PgNode): Promise<void>;
  /** `pg_ctl promote -w`: the standby leaves recovery and accepts writes. */
  promote(node: PgNode): Promise<void>;
  /** `ALTER SYSTEM SET synchronous_standby_names` and reload: what an operator sets after a promotion. */
  setSynchronousStandbyNames(node: PgNode, names: string): Promise<void>;
  /** Stop both (immediately) and delete their directories. */
  stop(): Promise<void>;
}

/** Run a command (as `postgres` when we are root); resolves on exit 0, else rejects with its output. */
function run(cmd: string, args: string[]): Promise<string> {
  const [file, argv] = isRoot ? ["runuser", ["-u", "postgres", "--", cmd, ...args]] : [cmd, args];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.once("error", reject);
    // "exit", not "close": a server started by pg_ctl must not keep us waiting on a pipe.
    child.once("exit", (code, signal) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(" ")} exited ${code ?? signal}:\n${out}`))));
  });
}

/** A free TCP port on loopback (the kernel's pick, released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Bounds of `query`, in milliseconds: a server that is down or moving fails the query, never hangs it. */
const QUERY_LIMITS = { connectMs: 2_000, queryMs: 10_000 };

/** One query on `url` with a plain `pg` client. */
export async function query<R extends pg.QueryResultRow>(url: string, text: string, params: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: QUERY_LIMITS.connectMs, query_timeout: QUERY_LIMITS.queryMs });
  c.on("error", () => {});
  await c.connect();
  try {
    return (await c.query<R>(text, params)).rows;
  } finally {
    await c.end().catch(() => {});
  }
}

function node(name: PgNode["name"], root: string, port: number): PgNode {
  return { name, dir: join(root, name), port, url: (db = "postgres") => `postgres://postgres@127.0.0.1:${port}/${db}` };
}

/** Start the server in `n.dir` on `n.port`; port, socket dir and address are given on the command line. */
const start = (n: PgNode) =>
  run(join(PG_BIN, "pg_ctl"), ["-D", join(n.dir, "data"), "-w", "-t", String(PG_CTL_TIMEOUT_S), "-l", join(n.dir, "postgres.log"), "-o", `-p ${n.port} -k ${n.dir} -c listen_addresses=127.0.0.1`, "start"]);

/**
 * Bring up the primary (initdb, synchronous replication configured) and the standby
 * (`pg_basebackup -R` from it), both running; resolves once the primary reports the
 * standby `sync` and `databases` are created (after that: before it, a COMMIT would wait
 * for a standby that does not exist yet).
 */
export async function startPgPair(opts: { databases?: string[] } = {}): Promise<PgPair> {
  const root = mkdtempSync(join(tmpdir(), "koinii-pgpair-"));
  const primary = node("primary", root, await freePort());
  const standby = node("standby", root, await freePort());
  const running = new Set<PgNode>();
  const pair: PgPair = {
    primary,
    standby,
    async syncState(on) {
      const rows = await query<{ sync_state: string }>(on.url(), "select sync_state from pg_stat_replication where application_name = $1", [STANDBY_NAME]);
      return rows[0]?.sync_state;
    },
    async stopImmediate(n) {
      await run(join(PG_BIN, "pg_ctl"), ["-D", join(n.dir, "data"), "-w", "-t", String(PG_CTL_TIMEOUT_S), "-m", "immediate", "stop"]);
      running.delete(n);
    },
    async promote(n) {
      await run(join(PG_BIN, "pg_ctl"), ["-D", join(n.dir, "data"), "-w", "-t", String(PG_CTL_TIMEOUT_S), "promote"]);
    },
    async setSynchronousStandbyNames(n, names) {
      await query(n.url(), `alter system set synchronous_standby_names = '${names.replace(/'/g, "''")}'`);
      await query(n.url(), "select pg_reload_conf()");
    },
    async stop() {
      for (const n of running) await pair.stopImmediate(n).catch(() => {});
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    if (isRoot) chownSync(root, ...postgresIds());
    await run("mkdir", ["-p", primary.dir, standby.dir]);
    await run(join(PG_BIN, "initdb"), ["-D", join(primary.dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync"]);
    // postgresql.conf, not the command line: ALTER SYSTEM (the operator's tool after a
    // promotion) must be able to change synchronous_standby_names, and the standby copies it.
    appendFileSync(
      join(primary.dir, "data", "postgresql.conf"),
      [
        "wal_level = replica",
        "max_wal_senders = 4",
        "synchronous_commit = on",
        `synchronous_standby_names = '${STANDBY_NAME}'`,
        "hot_standby = on",
        "shared_buffers = 16MB",
        "max_connections = 60",
        "",
      ].join("\n"),
    );
    await start(primary);
    running.add(primary);
    // -R writes standby.signal and primary_conninfo from this connection, application_name included.
    await run(join(PG_BIN, "pg_basebackup"), ["-D", join(standby.dir, "data"), "-R", "-X", "stream", "-d", `host=127.0.0.1 port=${primary.port} user=postgres application_name=${STANDBY_NAME}`]);
    const conninfo = readFileSync(join(standby.dir, "data", "postgresql.auto.conf"), "utf8");
    if (!conninfo.includes(`application_name=${STANDBY_NAME}`)) throw new Error(`pg_basebackup -R did not keep application_name in primary_conninfo:\n${conninfo}`);
    await start(standby);
    running.add(standby);
    const end = Date.now() + PG_CTL_TIMEOUT_S * 1000;
    while ((await pair.syncState(primary)) !== "sync") {
      if (Date.now() > end) throw new Error(`the standby is not the synchronous standby after ${PG_CTL_TIMEOUT_S} s (sync_state ${await pair.syncState(primary)})`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Only now: with the standby named synchronous, a COMMIT on the primary waits for it.
    for (const db of opts.databases ?? []) await query(primary.url(), `create database ${db}`);
    return pair;
  } catch (e) {
    await pair.stop();
    throw e;
  }
}

function postgresIds(): [number, number] {
  const line = readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("postgres:"));
  if (!line) throw new Error("running as root and there is no postgres user: run scripts/provision.sh postgres first (it creates it)");
  const [, , uid, gid] = line.split(":");
  return [Number(uid), Number(gid)];
}

/**
 * A TCP forwarder on a free loopback port: every connection is piped to 127.0.0.1:`target`.
 * `moveTo` points it elsewhere and drops every connection open now (what HAProxy in front of
 * Patroni, or a managed service's endpoint, does when the primary changes).
 */
export interface Proxy {
  port: number;
  target: number;
  url(db: string): string;
  moveTo(port: number): void;
  close(): Promise<void>;
}

export async function startProxy(target: number): Promise<Proxy> {
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(proxy.target, "127.0.0.1");
    for (const s of [client, upstream]) {
      open.add(s);
      s.on("close", () => open.delete(s));
      s.on("error", () => {});
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const proxy: Proxy = {
    port: (server.address() as { port: number }).port,
    target,
    url: (db) => `postgres://postgres@127.0.0.1:${proxy.port}/${db}`,
    moveTo(port) {
      proxy.target = port;
      for (const s of open) s.destroy();
    },
    close() {
      for (const s of open) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
