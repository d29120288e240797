/**
 * JMAP against a real server: Cyrus IMAP 3.6's JMAP (Debian's cyrus-caldav httpd), started
 * by scripts/provision/mail.sh. The same mailbox synced over JMAP and over the guarded IMAP
 * client gives the same refs (the JMAP client parses the raw blob, so body hashes agree).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { syncImapAccount } from "../../../src/agents/mail/imap.js";
import { parseAccountsConfig, type ImapAccount, type MailRef } from "../../../src/agents/mail/index.js";
import { JmapClient, JmapRefusal, syncJmapAccount } from "../../../src/agents/mail/jmap.js";
import { Secret } from "../../../src/agents/mail/secrets.js";
import { rawMail } from "./fixtures.js";
import { adminImap, mailServers, freshCyrusUser, type MailEnv } from "./servers.js";

let env: MailEnv;
beforeAll(async () => {
  env = await mailServers();
}, 120_000);

const comparable = (r: MailRef) => ({
  message_id: r.message_id,
  role: r.role,
  flags: [...r.flags].sort(),
  date: r.date,
  from: r.from,
  to: r.to,
  subject: r.subject,
  in_reply_to: r.in_reply_to,
  references: r.references,
  auto: r.auto,
  auth: r.auth,
  body_hash: r.body_hash,
  own: r.own,
});

describe("JMAP against Cyrus", () => {
  it("syncs INBOX and Sent by role; the refs equal those of an IMAP sync of the same mailbox; nothing is marked seen", async () => {
    const u = freshCyrusUser(env);
    const admin = await adminImap(env, u, env.cyrusImapPort);
    const theirs = (id: string, body: string, extra: Record<string, string> = {}) =>
      rawMail({ From: "Vincent <vincent@example.org>", To: `${u.user}@koinii.test`, Subject: "plan", Date: "Wed, 23 Sep 2026 10:00:00 +0000", "Message-ID": `<${id}@test>`, ...extra }, body);
    await admin.append("INBOX", theirs("j1", "Can you send the plan?"), ["\\Answered"]);
    await admin.append("INBOX", theirs("j2", "FYI: moved to Monday.", { Date: "sometime" }), []);
    await admin.append("Sent", rawMail({ From: `${u.user}@koinii.test`, To: "vincent@example.org", Subject: "Re: plan", Date: "Thu, 24 Sep 2026 18:22:20 -0000", "Message-ID": "<j3@test>", "In-Reply-To": "<j1@test>", References: "<j1@test>" }, "Here it is. Does it work?"), ["\\Seen"]);
    await admin.logout();

    const lines: string[] = [];
    let client: JmapClient | null = null;
    const j = await syncJmapAccount({ account: { name: "cy", url: `http://127.0.0.1:${env.cyrusHttpPort}` }, credentials: { user: u.user, pass: new Secret(u.pass) }, previous: [], since: new Date("2020-01-01"), now: () => new Date(), log: (l) => lines.push(l), allowHttpLoopback: true, onClient: (c) => (client = c) });
    if (!j.ok) throw new Error(j.error);
    expect(lines).toEqual(["cy Inbox: 2 messages, 2 bodies read (blob download), 0 unchanged refs reused", "cy Sent: 1 messages, 1 bodies read (blob download), 0 unchanged refs reused"]);
    expect(j.refs.every((r) => r.server_thread !== null && r.uid === null)).toBe(true);
    expect([...j.sentMessageIds]).toEqual(["<j3@test>"]);
    expect((client as JmapClient | null)!.requested.every((r) => r.includes(`127.0.0.1:${env.cyrusHttpPort}`))).toBe(true);

    const cfg = parseAccountsConfig({ account: [{ name: "cy", address: `${u.user}@koinii.test`, transport: "imap", host: env.host, port: env.cyrusImapPort, tls: "none", credentials: "/nonexistent" }] });
    if (!cfg.ok) throw new Error(cfg.problems.join("; "));
    const i = await syncImapAccount({ account: cfg.config.account[0] as ImapAccount, credentials: { user: u.user, pass: new Secret(u.pass) }, previous: [], since: new Date("2020-01-01"), now: () => new Date(), log: () => {} });
    if (!i.ok) throw new Error(i.error);
    const byId = (refs: MailRef[]) => refs.map(comparable).sort((a, b) => String(a.message_id).localeCompare(String(b.message_id)));
    const jr = byId(j.refs);
    const ir = byId(i.refs);
    // Dates from a bad Date header fall back to the server's date; receivedAt and INTERNALDATE are the same instant.
    expect(jr).toEqual(ir);
    expect(jr.find((r) => r.message_id === "<j1@test>")!.flags).toEqual(["\\Answered"]);
    expect(jr.find((r) => r.message_id === "<j3@test>")!.date).toBe("2026-09-24T18:22:20Z");

    const check = await adminImap(env, u, env.cyrusImapPort);
    const lock = await check.getMailboxLock("INBOX", { readOnly: true });
    const flags = (await check.fetchAll("1:*", { flags: true, envelope: true })).map((m) => [m.envelope?.messageId, [...(m.flags ?? [])].filter((f) => f !== "\\Recent").sort()]);
    lock.release();
    await check.logout();
    expect(flags).toEqual([["<j1@test>", ["\\Answered"]], ["<j2@test>", []]]);
  });

  it("refuses Email/set before it reaches Cyrus; a wrong password fails the account", async () => {
    const u = freshCyrusUser(env);
    const client = new JmapClient({ url: `http://127.0.0.1:${env.cyrusHttpPort}`, credentials: { user: u.user, pass: u.pass }, allowHttpLoopback: true });
    const s = await client.connect();
    const before = client.requested.length;
    await expect(client.call([["Email/set", { accountId: s.accountId, destroy: ["x"] }, "a"]])).rejects.toBeInstanceOf(JmapRefusal);
    expect(client.requested.length).toBe(before);
    const bad = await syncJmapAccount({ account: { name: "cy", url: `http://127.0.0.1:${env.cyrusHttpPort}` }, credentials: { user: u.user, pass: "wrong" }, previous: [], since: new Date("2020-01-01"), now: () => new Date(), log: () => {}, allowHttpLoopback: true });
    expect(bad).toMatchObject({ ok: false, error: "authentication failed" });
  });
});
