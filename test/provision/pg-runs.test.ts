import { describe, expect, it } from "vitest";
import { processAlive, runPrefix, staleTestDatabases, TEST_DB_STEM } from "../pg-runs.js";

describe("the test databases a killed run leaves behind", () => {
  it("are the ones whose run's process is gone; a live run's and unprefixed names are kept", () => {
    const live = runPrefix(101);
    const dead = runPrefix(202);
    const names = [`${live}a1b2c3`, `${dead}d4e5f6`, `${dead}0718aa`, `${TEST_DB_STEM}9f8e7d6c_ffeedd`, "postgres", "koinii_prod", `${TEST_DB_STEM}303_zz_x`];
    expect(staleTestDatabases(names, (pid) => pid === 101)).toEqual([`${dead}d4e5f6`, `${dead}0718aa`]);
  });

  it("name the running process's own prefix as alive, and an id no process has as gone", () => {
    expect(processAlive(process.pid)).toBe(true);
    expect(staleTestDatabases([`${runPrefix(process.pid)}x`], processAlive)).toEqual([]);
    // Past the kernel's pid_max (at most 2^22), so no process can have it.
    expect(staleTestDatabases([`${runPrefix(2 ** 22 + 1)}x`], processAlive)).toHaveLength(1);
  });

  it("fit PostgreSQL's 63-byte names with the suite's 12 hex characters after them", () => {
    expect(`${runPrefix(2 ** 22)}${"f".repeat(12)}`.length).toBeLessThanOrEqual(63);
  });
});
