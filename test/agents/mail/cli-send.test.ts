/**
 * Issue 21, end to end: a thread the agent starts with `koinii mail send` is ours to wait
 * on. The CLI from dist/ against the SMTP submission server, Dovecot and a real daemon:
 * send, sync, status (waiting_on_them, the recipient as counterpart), their reply arrives
 * through the same submission server (needs_reply), our reply (waiting_on_them), and
 * `thread` shows all three under the one id `send` printed, which `close` also takes.
 */
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Secret } from "../../../src/agents/mail/secrets.js";
import { smtpSubmitter } from "../../../src/agents/mail/smtp.js";
import { MAIN, spawnDaemon, tempDir, type Daemon } from "../../daemon/helpers.js";
import { rawMail } from "./fixtures.js";
import { mailServers, freshUser, messageIdCounts, type MailEnv, type TestUser } from "./servers.js";

const run = promisify(execFile);

let env: MailEnv;
let daemon: Daemon;
let us: TestUser;
let them: TestUser;
let dir: string;
/** Every line the CLI printed, for the control-character check. */
const printed: string[] = [];

async function mail(args: string[]): Promise<string> {
  try {
    const r = await run(process.execPath, [MAIN, "mail", ...args, "--dir", dir, "--url", daemon.url], { encoding: "utf8" });
    printed.push(r.stdout, r.stderr);
    return r.stdout;
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    throw new Error(`koinii mail ${args.join(" ")} exited ${x.code}: ${x.stderr}`);
  }
}

interface Row {
  thread_id: string;
  state: string;
  rule: string;
  counterpart: string[];
  subject: string;
}
const statusRow = async (tid: string): Promise<Row> => {
  const rows = (JSON.parse(await mail(["status", "--all", "--json"])) as { threads: Row[] }).threads;
  const r = rows.find((x) => x.thread_id === tid);
  if (!r) throw new Error(`no thread ${tid} in status: ${rows.map((x) => `${x.thread_id} ${x.subject} ${x.state}`).join("; ")}`);
  expect(rows.filter((x) => x.subject.endsWith("the table"))).toHaveLength(1); // one thread, never two ids for it
  return r;
};

beforeAll(async () => {
  env = await mailServers();
  daemon = await spawnDaemon();
  us = freshUser(env, "snd");
  them = freshUser(env, "rcv");
  dir = tempDir();
  writeFileSync(join(dir, "us.env"), `KANNAKA_MAIL_USER=${us.user}\nKANNAKA_MAIL_PASS=${us.pass}\n`, { mode: 0o600 });
  writeFileSync(
    join(dir, "accounts.json"),
    JSON.stringify({
      policy: { first_contact: "send" },
      account: [{ name: "t", address: us.user, display_name: "Kannaka", transport: "imap", host: env.host, port: env.imapPort, tls: "none", smtp: { host: env.host, port: env.smtpPort, tls: "none" }, credentials: join(dir, "us.env") }],
    }),
  );
}, 120_000);

afterAll(async () => {
  await daemon?.stop();
});

/** A message from them to us through the submission server, stamped as the receiving MX would. */
async function fromThem(h: Record<string, string>, body: string): Promise<void> {
  const submitter = smtpSubmitter({ host: env.host, port: env.smtpPort, tls: "none" }, { user: them.user, pass: new Secret(them.pass) });
  try {
    const raw = rawMail(
      { "Authentication-Results": `mx.${env.domain}; dkim=pass header.d=${env.domain}; spf=pass smtp.mailfrom=${them.user}; dmarc=pass header.from=${env.domain}`, From: `Them <${them.user}>`, To: us.user, ...h },
      body,
    );
    expect((await submitter.submit({ from: them.user, to: [us.user], raw })).accepted).toEqual([us.user]);
  } finally {
    submitter.close();
  }
}

describe("a thread we start (koinii mail send) is ours to wait on", () => {
  it("send, sync, status, their reply, our reply, thread and close all use one thread id", async () => {
    // 1. We start the thread.
    const sent = await mail(["send", "--to", them.user, "--subject", "the table", "--body", "Here is the table for this week."]);
    const m = /^sent (<k\.[0-9a-f]{32}@[a-z0-9.-]+>) to (\S+) \(thread (t:[0-9a-f]{10}); Sent copy: server\)$/m.exec(sent);
    expect(m, sent).not.toBeNull();
    const [, mid, to, tid] = m!;
    expect(to).toBe(them.user);
    expect(messageIdCounts(env, them.user, "INBOX").get(mid!)).toBe(1);

    // 2. Sync: the Sent copy lands in the thread the send named; it waits on them.
    await mail(["sync"]);
    expect(await statusRow(tid!)).toMatchObject({ state: "waiting_on_them", rule: "ours-started", counterpart: [them.user], subject: "the table" });
    expect(await mail(["status"])).toMatch(new RegExp(`^waiting_on_them .*${tid}  t  ${them.user}  the table$`, "m"));

    // 3. Their reply arrives through the submission server (the receiving MX's Authentication-Results on top).
    await fromThem(
      {
        Subject: "Re: the table",
        Date: new Date(Date.now() + 1000).toUTCString(),
        "Message-ID": `<r1-${Date.now()}@${env.domain}>`,
        "In-Reply-To": mid,
        References: mid,
      },
      "Thanks! Which week does it cover?",
    );
    await mail(["sync"]);
    expect(await statusRow(tid!)).toMatchObject({ state: "needs_reply", rule: "theirs-unanswered", counterpart: [them.user] });

    // 4. Our reply, by the same id.
    const replied = await mail(["reply", tid!, "--body", "This week's. Does Friday work for the next one?"]);
    const r = /^sent (<k\.[0-9a-f]{32}@[a-z0-9.-]+>) to (\S+) \(thread (t:[0-9a-f]{10}); Sent copy: server\)$/m.exec(replied);
    expect(r, replied).not.toBeNull();
    expect(r![3]).toBe(tid);
    await mail(["sync"]);
    expect(await statusRow(tid!)).toMatchObject({ state: "waiting_on_them", rule: "ours-asks", counterpart: [them.user] });

    // 5. thread: all three, in order, under that id.
    const t = JSON.parse(await mail(["thread", tid!, "--json"])) as { status: { thread_id: string; state: string }; members: { role: string; sender: string | null }[] };
    expect(t.status).toMatchObject({ thread_id: tid, state: "waiting_on_them" });
    expect(t.members.map((x) => [x.role, x.sender])).toEqual([
      ["sent", us.user],
      ["inbox", them.user],
      ["sent", us.user],
    ]);
    expect((await mail(["thread", tid!])).split("\n")[0]).toMatch(new RegExp(`^${tid}  waiting_on_them \\(ours-asks:`));

    // 6. close takes the same id.
    expect(await mail(["close", tid!, "--note", "settled on the phone"])).toContain(`${tid} the table: waiting_on_them -> done`);

    // No output line carried a raw control character.
    for (const s of printed) expect(s.replace(/\n/g, "")).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  }, 300_000); // about fifteen CLI process starts on a shared machine

  it("a subject with control characters (RFC 2047 decoded) is printed escaped: it can neither break a line nor drive the terminal", async () => {
    const hostile = "red \u001b[31malert\u001b[0m\nInjected: line\u0007";
    await fromThem({ Subject: `=?UTF-8?B?${Buffer.from(hostile).toString("base64")}?=`, Date: new Date().toUTCString(), "Message-ID": `<h1-${Date.now()}@${env.domain}>` }, "Can you look at this?");
    await mail(["sync"]);
    const text = await mail(["status"]);
    const line = text.split("\n").find((l) => l.includes("alert"));
    // (the parser already turns the decoded newline into a blank; ESC and BEL reach the CLI)
    expect(line).toMatch(/^needs_reply .*  red \\u001b\[31malert\\u001b\[0m Injected: line\\u0007$/);
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(text.split("\n").filter((l) => l.startsWith("Injected"))).toEqual([]);
  }, 120_000);
});
