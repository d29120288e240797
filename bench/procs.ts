/** Child processes for benchmarks: the real daemon, baseline servers, a database on the provisioned PostgreSQL. */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import pg from "pg";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Proc {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

function waitForLine(child: ChildProcess, re: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const onData = (d: Buffer) => {
      buf += d.toString();
      const m = re.exec(buf);
      if (m) {
        child.stdout!.off("data", onData);
        resolve(m[1]!);
      }
    };
    child.stdout!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`process exited (${code}) before it listened: ${buf}`)));
  });
}

async function spawnServer(args: string[], re: RegExp, cleanup?: () => void): Promise<Proc> {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  const url = await waitForLine(child, re);
  return {
    url,
    child,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          // Already gone (a bench that SIGKILLed it): only the cleanup is left.
          cleanup?.();
          return resolve();
        }
        child.once("exit", () => {
          cleanup?.();
          resolve();
        });
        child.kill("SIGTERM");
      }),
  };
}

/**
 * The daemon as `koinii serve` runs it; `node` adds flags for node itself (e.g. `--cpu-prof`).
 * Without `durability` the daemon runs at serve's default.
 */
export async function startDaemon(opts: { durability?: "full" | "normal"; extra?: string[]; node?: string[] }): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), "koinii-bench-daemon-"));
  return spawnServer(
    [...(opts.node ?? []), "dist/src/cli/main.js", "serve", "--port", "0", "--data", dir, ...(opts.durability ? ["--durability", opts.durability] : []), ...(opts.extra ?? [])],
    /koinii listening on (http:\/\/[^\s]+)/,
    () => rmSync(dir, { recursive: true, force: true }),
  );
}

/** A baseline server (bench/fixtures/baseline-server.ts); `workUs` is the group servers' work per request. */
export const startBaseline = (mode: "bare" | "sqlite-full" | "sqlite-normal" | GroupPolicy, workUs = 0): Promise<Proc> =>
  spawnServer(["dist/bench/fixtures/baseline-server.js", mode, String(workUs)], /listening on (http:\/\/[^\s]+)/);

/** The group-commit baselines: the daemon's group commit with nothing else, by fsync policy. */
export type GroupPolicy = "group-normal" | "group-pool" | "group-inline";

/**
 * A fresh database on the provisioned PostgreSQL cluster (scripts/provision.sh postgres, the
 * same cluster the tests use; installed or started if need be, else the bench stops with the
 * line naming what to run), dropped again by stop(). `name` tells apart several databases
 * of one bench process; `url` is the database's connection string.
 */
export async function startPostgres(name = ""): Promise<{ config: pg.ClientConfig; url: string; stop(): Promise<void> }> {
  const r = spawnSync("bash", ["scripts/provision.sh", "postgres"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  const url = /^KOINII_TEST_PG_URL=(.*)$/m.exec(r.stdout ?? "")?.[1];
  if (r.status !== 0 || !url) throw new Error(`scripts/provision.sh postgres failed (exit ${r.status ?? r.signal})`);
  if (!/^[a-z0-9_]*$/.test(name)) throw new Error(`invariant: a database name part is [a-z0-9_], got ${JSON.stringify(name)}`);
  const db = `koinii_bench_${process.pid}${name ? `_${name}` : ""}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${db}`);
  await admin.query(`CREATE DATABASE ${db}`);
  const dbUrl = url.replace(/\/[^/]*$/, `/${db}`);
  return {
    config: { connectionString: dbUrl },
    url: dbUrl,
    stop: async () => {
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}
