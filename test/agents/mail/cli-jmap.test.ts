/**
 * The documented CLI against the project's own Cyrus, which serves JMAP over plain HTTP on
 * loopback: `accounts.json` may name an `http://` URL for a loopback host (and for no other
 * host), and `koinii mail sync` then reads the mailbox over JMAP into the KB. Config
 * refusals reach the operator typed: http to another host, two accounts with one address.
 */
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN, spawnDaemon, tempDir, type Daemon } from "../../daemon/helpers.js";
import { rawMail } from "./fixtures.js";
import { adminImap, mailServers, freshCyrusUser, type MailEnv, type TestUser } from "./servers.js";

const run = promisify(execFile);

let env: MailEnv;
let daemon: Daemon;
let u: TestUser;
let dir: string;

async function mail(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [MAIN, "mail", ...args, "--dir", dir, "--url", daemon.url], { encoding: "utf8" });
    return { code: 0, ...r };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}

const jmapAccount = (name: string, url: string, address = `${u.user}@${env.domain}`) => ({ name, address, transport: "jmap", url, credentials: join(dir, "cy.env") });
const writeConfig = (account: unknown[]) => writeFileSync(join(dir, "accounts.json"), JSON.stringify({ account }));

beforeAll(async () => {
  env = await mailServers();
  daemon = await spawnDaemon();
  u = freshCyrusUser(env);
  dir = tempDir();
  writeFileSync(join(dir, "cy.env"), `KANNAKA_MAIL_USER=${u.user}\nKANNAKA_MAIL_PASS=${u.pass}\n`, { mode: 0o600 });
  const admin = await adminImap(env, u, env.cyrusImapPort);
  await admin.append("INBOX", rawMail({ From: "Vincent <vincent@example.org>", To: `${u.user}@${env.domain}`, Subject: "plan", Date: new Date(Date.now() - 3_600_000).toUTCString(), "Message-ID": `<cj1-${u.user}@test>` }, "Can you send the plan?"), []);
  await admin.logout();
}, 120_000);

afterAll(async () => {
  await daemon?.stop();
});

describe("koinii mail over JMAP (Cyrus, plain http on loopback)", () => {
  it("sync reads the Cyrus mailbox over JMAP at an http://127.0.0.1 URL; status shows the thread", async () => {
    writeConfig([jmapAccount("cy", `http://127.0.0.1:${env.cyrusHttpPort}`)]);
    const s = await mail(["sync"]);
    expect(s.stderr).toBe("");
    expect(s.code).toBe(0);
    expect(s.stdout).toContain("cy Inbox: 1 messages, 1 bodies read (blob download), 0 unchanged refs reused");
    const rows = (JSON.parse((await mail(["status", "--all", "--json"])).stdout) as { threads: { state: string; counterpart: string[]; subject: string }[] }).threads;
    expect(rows).toMatchObject([{ state: "needs_reply", counterpart: ["vincent@example.org"], subject: "plan" }]);
  }, 120_000);

  it("refuses http to a non-loopback host, and two accounts with one address, typed, before anything is read or written", async () => {
    const head = async () => ((await (await fetch(`${daemon.url}/health`)).json()) as { seq: number }).seq;
    const before = await head();
    writeConfig([jmapAccount("cy", "http://mail.example.org")]);
    const http = await mail(["sync"]);
    expect(http.code).toBe(1);
    expect(http.stderr).toContain("account.0.url: plain http is only allowed for a loopback host [http-not-loopback]");
    writeConfig([jmapAccount("cy", `http://127.0.0.1:${env.cyrusHttpPort}`), jmapAccount("cy2", `http://localhost:${env.cyrusHttpPort}`, `${u.user.toUpperCase()}@${env.domain}`)]);
    const dup = await mail(["status"]);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain(`account.1.address: the address of account cy2 is already account cy's [duplicate-address]`);
    expect(await head()).toBe(before);
  }, 120_000);
});
