/**
 * The suite's provisioning (scripts/provision.sh, run by the vitest global setup): every
 * server it promises answers before a test runs, a check run (which installs and starts
 * nothing) finds them all up, and a missing package the script may not install stops the
 * run with one line naming the command.
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

  it("a check run (--check, which installs and starts nothing) finds everything up and prints the same environment", () => {
    const r = spawnSync("bash", ["scripts/provision.sh", "--check"], { encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const env = Object.fromEntries(r.stdout.trim().split("\n").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
    for (const [k, v] of Object.entries(env)) expect(process.env[k], k).toBe(v);
  });

  it("a package it may not install stops the run with one line naming the command", () => {
    // The refusal need_debs makes when it may not install (not root, or no apt-get), run
    // alone: this test reaches no install path.
    const r = spawnSync("bash", ["-c", ". scripts/provision/lib.sh; refuse_missing koinii-no-such-package; echo reached"], { encoding: "utf8" });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim().split("\n")).toEqual(["provision: missing koinii-no-such-package: run `sudo apt-get update && sudo apt-get install -y koinii-no-such-package` and start the tests again"]);
  });

  it("a check run names what is down instead of starting it", () => {
    const r = spawnSync("bash", ["scripts/provision.sh", "--check", "postgres"], { encoding: "utf8", env: { ...process.env, KOINII_PG_PORT: "1" } });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim()).toBe("provision: check: PostgreSQL is not up on 127.0.0.1:1");
  });

  it("an unknown server name is refused", () => {
    const r = spawnSync("bash", ["scripts/provision.sh", "--check", "redis"], { encoding: "utf8" });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/unknown server 'redis'/);
  });
});
