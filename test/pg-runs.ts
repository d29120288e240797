/**
 * The names of the test databases a run creates on the suite's PostgreSQL cluster: each
 * carries its run's prefix, which names the process that ran it, so the next run can drop
 * what a killed run left behind (its teardown never ran) and leave a live run's alone.
 */
import { randomBytes } from "node:crypto";

/** Every test database's name starts with this. */
export const TEST_DB_STEM = "koinii_t_";

/** This run's prefix: the stem, the run's process id, a random tag. */
export function runPrefix(pid: number): string {
  return `${TEST_DB_STEM}${pid}_${randomBytes(4).toString("hex")}_`;
}

/** Whether a process with this id is running on this machine. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"; // alive, another user's
  }
}

/** A run's database name: the stem, the run's process id, its tag. */
const RUN_NAME = new RegExp(`^${TEST_DB_STEM}(\\d+)_[0-9a-f]{8}_`);

/**
 * Of the cluster's database names, the test databases of runs whose process is gone: a
 * name with the stem and a process id that is not alive. Names without a process id (an
 * older run's prefix) cannot be told from a live run's and are left alone.
 */
export function staleTestDatabases(names: readonly string[], alive: (pid: number) => boolean): string[] {
  return names.filter((n) => {
    const m = RUN_NAME.exec(n);
    return m !== null && !alive(Number(m[1]));
  });
}
