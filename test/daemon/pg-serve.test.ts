/**
 * `koinii serve --store postgres://...` (and KOINII_STORE): the real daemon keeps its store
 * of record in PostgreSQL. A write acknowledged over HTTP is in the database (read back
 * with `pg`), and a second daemon on the same database follows (serves, does not write)
 * until the first stops and hands the lease over.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it, onTestFinished } from "vitest";
import { spawnDaemon, call, MAIN } from "./helpers.js";
import { freshDatabase, pgQuery } from "../kb/pg.js";

describe("serve on PostgreSQL", () => {
  it("serve --help names the store and the lease bounds", () => {
    const help = execFileSync(process.execPath, [MAIN, "serve", "--help"], { encoding: "utf8" });
    for (const flag of ["--store <url>", "--lease-ms <ms>", "--lease-renew-ms <ms>", "--pg-lock-timeout-ms <ms>", "--pg-statement-timeout-ms <ms>", "--pg-idle-in-transaction-ms <ms>", "--follow-poll-ms <ms>", "--advertise-url <url>"]) expect(help).toContain(flag);
    expect(help).toMatch(/KOINII_STORE/);
  });

  it("an acknowledged write is in PostgreSQL; a second daemon follows, and takes over only after the first stops", async () => {
    const url = await freshDatabase();
    const a = await spawnDaemon({ env: { KOINII_STORE: url }, args: ["--lease-ms", "2000", "--lease-renew-ms", "200"] });
    onTestFinished(async () => void (await a.stop()));
    const w = await call(a.url, "POST", "/v1/assert", { sentence: "(dog Muffet)", context: "CxPets" });
    expect(w.status).toBe(200);
    const [row] = await pgQuery<{ seq: string }>(url, "select seq from sentex where handle = $1", [w.body.handle]);
    expect(Number(row!.seq)).toBe(w.body.seq);

    const b = await spawnDaemon({ args: ["--store", url, "--lease-ms", "2000", "--lease-renew-ms", "200"] });
    onTestFinished(async () => void (await b.stop()));
    await new Promise((r) => setTimeout(r, 1_000)); // several of B's election attempts (every 200 ms)
    const [lease] = await pgQuery<{ epoch: string }>(url, "select epoch from lease");
    expect(Number(lease!.epoch)).toBe(1);
    expect((await call(b.url, "GET", "/health")).body).toMatchObject({ role: "follower", epoch: 0 });
    await a.stop();
    await expect.poll(async () => (await call(b.url, "GET", "/health")).body.role, { timeout: 5_000 }).toBe("writer");
    const [after] = await pgQuery<{ epoch: string }>(url, "select epoch from lease");
    expect(Number(after!.epoch)).toBe(2);
    const next = await call(b.url, "POST", "/v1/assert", { sentence: "(dog Rex)", context: "CxPets" });
    expect(next.body.seq).toBe(w.body.seq + 1);
  });
});
