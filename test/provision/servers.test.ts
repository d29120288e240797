/**
 * The suite's provisioning (scripts/provision.sh, run once by the vitest global setup, which
 * also confirms it with a `--check` run): every server it promises answers before a test
 * runs. No test here runs the script: provisioning happens in one place, before the tests.
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import net from "node:net";
import pg from "pg";
import { describe, expect, it } from "vitest";

const listening = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = net.connect({ port, host: "127.0.0.1" });
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });

describe("provisioning (scripts/provision.sh)", () => {
  it("PostgreSQL answers at KOINII_TEST_PG_URL", async () => {
    const client = new pg.Client({ connectionString: process.env.KOINII_TEST_PG_URL });
    await client.connect();
    try {
      const r = await client.query<{ v: string }>("SELECT current_setting('server_version') AS v");
      expect(r.rows[0]!.v).toMatch(/^15\./);
    } finally {
      await client.end();
    }
  });

  it("nats-server and chromium-headless-shell are executables the tests can start", () => {
    for (const bin of [process.env.KOINII_TEST_NATS_SERVER, process.env.KOINII_TEST_CHROMIUM]) {
      expect(bin).toBeTruthy();
      accessSync(bin!, constants.X_OK);
    }
    const v = spawnSync(process.env.KOINII_TEST_NATS_SERVER!, ["--version"], { encoding: "utf8" });
    expect(v.stdout).toMatch(/nats-server: v\d/);
  });

  it("the mail servers (Dovecot IMAP and LMTP, SMTP submission, Cyrus IMAP and JMAP) listen", async () => {
    const ports = ["KOINII_MAIL_IMAP_PORT", "KOINII_MAIL_LMTP_PORT", "KOINII_MAIL_SMTP_PORT", "KOINII_CYRUS_IMAP_PORT", "KOINII_CYRUS_HTTP_PORT"].map((k) => Number(process.env[k]));
    expect(ports.every((p) => p > 0)).toBe(true);
    expect(await Promise.all(ports.map(listening))).toEqual(ports.map(() => true));
  });
});
