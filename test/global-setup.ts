import { spawnSync, execFileSync } from "node:child_process";
import pg from "pg";
import { processAlive, runPrefix, staleTestDatabases, TEST_DB_STEM } from "./pg-runs.js";

/**
 * Before any test: bring up every real server the suite needs (scripts/provision.sh: nats,
 * the mail servers, PostgreSQL, Chromium), the same way with or without CI, and hand their
 * addresses to the tests through the environment (confirmed by a `--check` run that must
 * print the same); then build dist/ once, because
 * integration tests spawn the real daemon and agent processes from it.
 *
 * The databases this run's tests create on the shared cluster carry the run's own prefix
 * (KOINII_TEST_DB_PREFIX, naming this process) and are dropped when the run ends; before
 * the tests, those of earlier runs whose process is gone (killed, so their teardown never
 * ran) are dropped too. Runs do not pile them up: a cluster with a thousand left over took
 * minutes to recover after a restart.
 */
export default async function setup(): Promise<() => Promise<void>> {
  provision();
  process.env.KOINII_TEST_DB_PREFIX = runPrefix(process.pid);
  await dropStaleDatabases();
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.json"], { stdio: "inherit" });
  return dropRunDatabases;
}

/** Drop every database this run created (open connections to them are ended first). */
async function dropRunDatabases(): Promise<void> {
  const prefix = process.env.KOINII_TEST_DB_PREFIX;
  if (!prefix) return;
  const n = await dropDatabases((names) => names.filter((d) => d.startsWith(prefix)));
  if (n !== undefined) process.stderr.write(`teardown: dropped this run's ${n} test databases (${prefix}*)\n`);
}

/** Drop the test databases of earlier runs whose process is gone. */
async function dropStaleDatabases(): Promise<void> {
  const n = await dropDatabases((names) => staleTestDatabases(names, processAlive));
  if (n) process.stderr.write(`setup: dropped ${n} test databases that killed runs left behind\n`);
}

/** Drop the cluster's test databases that `pick` chooses; how many, or undefined without a cluster. */
async function dropDatabases(pick: (names: string[]) => string[]): Promise<number | undefined> {
  const url = process.env.KOINII_TEST_PG_URL;
  if (!url) return undefined;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const names = (await c.query<{ datname: string }>("select datname from pg_database where starts_with(datname, $1)", [TEST_DB_STEM])).rows.map((r) => r.datname);
    const chosen = pick(names);
    for (const d of chosen) await c.query(`drop database "${d}" with (force)`);
    return chosen.length;
  } finally {
    await c.end();
  }
}

function provision(): void {
  const r = spawnSync("bash", ["scripts/provision.sh"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  process.stderr.write(r.stderr ?? "");
  if (r.status !== 0) {
    // The script's last line (already printed above) names the command to run: stop here,
    // before any test, without a stack trace burying it.
    if (!r.stderr?.trim()) process.stderr.write(`scripts/provision.sh exited ${r.status ?? r.signal}\n`);
    process.exit(1);
  }
  const env = exported(r.stdout);
  Object.assign(process.env, env);
  // Confirm it: a check run (which installs and starts nothing) must find every server up
  // and print the same environment.
  const check = spawnSync("bash", ["scripts/provision.sh", "--check"], { encoding: "utf8" });
  const checked = exported(check.stdout ?? "");
  if (check.status !== 0 || JSON.stringify(checked) !== JSON.stringify(env)) {
    process.stderr.write(`${check.stderr ?? ""}scripts/provision.sh --check disagrees with the provisioning it follows (exit ${check.status ?? check.signal})\n`);
    process.exit(1);
  }
}

/** The KOINII_* lines the script prints, as an environment. */
function exported(stdout: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const l of stdout.split("\n")) {
    const m = /^(KOINII_[A-Z0-9_]+)=(.*)$/.exec(l);
    if (m) env[m[1]!] = m[2]!;
  }
  return env;
}
