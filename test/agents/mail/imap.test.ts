/**
 * IMAP sync against a real Dovecot (scripts/provision/mail.sh): the read-only guard, BODY.PEEK,
 * a failed account keeping its refs, per-folder progress.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ImapFlow } from "imapflow";
import {
  IMAP_READ_ONLY_COMMANDS,
  ImapGuardError,
  applySync,
  checkImapCommand,
  connectImap,
  findMessageIds,
  folderMessageIds,
  syncImapAccount,
  type ImapEndpoint,
} from "../../../src/agents/mail/imap.js";
import { parseAccountsConfig, type ImapAccount } from "../../../src/agents/mail/index.js";
import { Secret } from "../../../src/agents/mail/secrets.js";
import { adminImap, mailServers, freshUser, recordingProxy, serverFlags, type MailEnv, type TestUser } from "./servers.js";
import { rawMail } from "./fixtures.js";

let env: MailEnv;
beforeAll(async () => {
  env = await mailServers();
}, 120_000);

function account(u: TestUser, port?: number): ImapAccount {
  const r = parseAccountsConfig({ account: [{ name: "t", address: u.user, transport: "imap", host: env.host, port: port ?? env.imapPort, tls: "none", credentials: "/nonexistent" }] });
  if (!r.ok) throw new Error(r.problems.join("; "));
  return r.config.account[0] as ImapAccount;
}
const creds = (u: TestUser, pass = u.pass) => ({ user: u.user, pass: new Secret(pass) });
const mail = (id: string, body = "Can you look at this?") =>
  rawMail({ From: "Vincent <vincent@example.org>", To: "t@koinii.test", Subject: `s ${id}`, Date: "Wed, 23 Sep 2026 10:00:00 +0000", "Message-ID": `<${id}@test>` }, body);

describe("the guard's decisions (the reference's vectors)", () => {
  const allowed = [
    "1 LOGIN user pass",
    "2 LIST \"\" \"*\"",
    '3 EXAMINE "INBOX"',
    "4 UID SEARCH SINCE 26-Aug-2026",
    "5 UID FETCH 1:5 (UID FLAGS INTERNALDATE)",
    "6 UID FETCH 1:5 (UID BODY.PEEK[])",
    "7 UID FETCH 1:5 (BODY.PEEK[HEADER.FIELDS (FROM TO)] RFC822.SIZE)",
    "8 LOGOUT",
    "9 CAPABILITY",
    "A ENABLE CONDSTORE",
  ];
  const refused = [
    "1 SELECT INBOX",
    "2 UID STORE 1 +FLAGS (\\Seen)",
    "3 STORE 1 +FLAGS (\\Answered)",
    '4 APPEND "Sent" {10}',
    "5 EXPUNGE",
    "6 UID EXPUNGE 1:3",
    "7 UID FETCH 1:5 (BODY[])",
    "8 UID FETCH 1 (UID BODY[TEXT])",
    "9 UID FETCH 7 RFC822",
    "A UID COPY 1 Trash",
    "B UID MOVE 1 Trash",
    "C DELETE Sent",
    "D IDLE",
    "E COMPRESS DEFLATE",
    "F CLOSE",
    "10 CREATE x",
    "11 FETCH 1 BINARY[]",
    "12 FETCH 1 RFC822.TEXT",
    "13 LOGIN a b\r\n14 STORE 1 +FLAGS (\\Seen)",
    "14 LOGIN \"é\" x",
    "15 LOGIN a {0+}\r\n\r\n16 STORE 1 +FLAGS (\\Seen)",
    "16 UID FETCH 1 (BODY.PEEK[HEADER.FIELDS {4+}\r\nFROM])",
  ];
  it.each(allowed)("allows %s", (line) => expect(checkImapCommand(line)).toBeNull());
  it.each(refused)("refuses %s", (line) => expect(checkImapCommand(line)).not.toBeNull());
  it("literal data is skipped by its length, not read as commands", () => {
    expect(checkImapCommand("1 LOGIN {4+}\r\nuser {14+}\r\nSTORE\r\nBODY[] x")).toBeNull();
  });
  it("a quoted string cannot smuggle or hide a FETCH item", () => {
    expect(checkImapCommand('1 UID FETCH 1 (BODY.PEEK[HEADER.FIELDS ("BODY[]")])')).toBeNull();
  });
  it("the sender's profile allows APPEND to its Sent folder only", () => {
    const p = { kind: "append-sent", mailbox: "Sent" } as const;
    expect(checkImapCommand('4 APPEND "Sent" (\\Seen) {10}', p)).toBeNull();
    expect(checkImapCommand('4 APPEND Sent {10}', p)).toBeNull();
    expect(checkImapCommand('4 APPEND Sent (\\Seen) {5+}\r\n\r\nA\r\n', p)).toBeNull(); // LITERAL+: data in the same frame
    expect(checkImapCommand('4 APPEND Sent {3+}\r\nabc\r\n5 STORE 1 +FLAGS (\\Seen)', p)).not.toBeNull();
    expect(checkImapCommand('4 APPEND "INBOX" {10}', p)).toMatch(/only to Sent/);
    expect(checkImapCommand("4 STORE 1 +FLAGS (\\Seen)", p)).toMatch(/allowlist/);
  });
  it("the allowlist has no writing verb", () => {
    for (const v of ["SELECT", "STORE", "UID STORE", "APPEND", "COPY", "MOVE", "EXPUNGE", "CLOSE", "CREATE", "DELETE", "RENAME", "SUBSCRIBE", "IDLE", "COMPRESS"]) expect(IMAP_READ_ONLY_COMMANDS.has(v)).toBe(false);
  });
});

describe("the guarded client against Dovecot", () => {
  let u: TestUser;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let client: ImapFlow;
  let guard: Awaited<ReturnType<typeof connectImap>>["guard"];
  beforeAll(async () => {
    u = freshUser(env, "guard");
    const admin = await adminImap(env, u);
    await admin.append("INBOX", mail("g1"), []);
    await admin.logout();
    proxy = await recordingProxy(env.imapPort);
    const endpoint: ImapEndpoint = { host: "127.0.0.1", port: proxy.port, tls: "none" };
    ({ client, guard } = await connectImap(endpoint, creds(u)));
  });
  afterAll(async () => {
    await client?.logout().catch(() => {});
    await proxy?.close();
  });

  it("refuses STORE before the server sees it: \\Seen stays unset on the server", async () => {
    const lock = await client.getMailboxLock("INBOX", { readOnly: true });
    try {
      // imapflow's own messageFlagsAdd already declines on a read-only mailbox; the guard is
      // what stops a STORE that is sent anyway (here through imapflow's internal exec).
      expect(await client.messageFlagsAdd("1:*", ["\\Seen"], { uid: true }).catch((e: unknown) => e)).not.toBe(true);
      const internal = client as unknown as { exec(c: string, a: unknown[]): Promise<unknown> };
      const store = internal.exec("UID STORE", [{ type: "SEQUENCE", value: "1:*" }, { type: "ATOM", value: "+FLAGS" }, [{ type: "ATOM", value: "\\Seen" }]]);
      await expect(store).rejects.toBeInstanceOf(ImapGuardError);
    } finally {
      lock.release();
    }
    expect(guard.refused.map((x) => x.verb)).toContain("UID STORE");
    expect(proxy.clientBytes()).not.toMatch(/^\S+ (UID )?STORE/im);
    expect(serverFlags(env, u.user, "INBOX").get("<g1@test>")).not.toContain("\\Seen");
  });

  it("refuses SELECT (opening a folder read-write), APPEND, EXPUNGE and a BODY[] fetch; none reaches the wire", async () => {
    await expect(client.mailboxOpen("INBOX")).rejects.toBeInstanceOf(ImapGuardError);
    const appended = await client.append("INBOX", mail("g2"), []).catch((e: unknown) => e);
    expect(appended === false || appended instanceof ImapGuardError).toBe(true);
    const internal = client as unknown as { exec(c: string, a: unknown[]): Promise<unknown> };
    await expect(internal.exec("EXPUNGE", [])).rejects.toBeInstanceOf(ImapGuardError);
    await client.mailboxOpen("INBOX", { readOnly: true });
    await expect(internal.exec("UID FETCH", [{ type: "SEQUENCE", value: "1:*" }, { type: "ATOM", value: "BODY", section: [] }])).rejects.toBeInstanceOf(ImapGuardError);
    const wire = proxy.clientBytes();
    expect(wire).not.toMatch(/^\S+ (SELECT|APPEND|EXPUNGE)\b/im);
    expect(wire).not.toMatch(/BODY\[/i);
    expect(wire).toMatch(/^\S+ EXAMINE /m);
    expect([...serverFlags(env, u.user, "INBOX").keys()]).toEqual(["<g1@test>"]);
    expect(guard.refused.map((r) => r.verb)).toEqual(expect.arrayContaining(["SELECT", "APPEND", "EXPUNGE", "UID FETCH"]));
  });
});

describe("sync against Dovecot", () => {
  it("reads INBOX and Sent with EXAMINE and BODY.PEEK[]: \\Seen stays unset, progress is printed per folder", async () => {
    const u = freshUser(env, "peek");
    const admin = await adminImap(env, u);
    await admin.append("INBOX", mail("p1"), []);
    await admin.append("INBOX", mail("p2", "Thanks."), ["\\Answered"]);
    await admin.append("Sent", rawMail({ From: u.user, To: "vincent@example.org", Subject: "Re: s p1", Date: "Wed, 23 Sep 2026 11:00:00 +0000", "Message-ID": "<p3@test>", "In-Reply-To": "<p1@test>" }, "Done."), ["\\Seen"]);
    await admin.logout();
    const proxy = await recordingProxy(env.imapPort);
    const lines: string[] = [];
    const acc = account(u, proxy.port);
    const r = await syncImapAccount({ account: acc, credentials: creds(u), previous: [], since: new Date("2026-01-01"), now: () => new Date("2026-09-25T12:00:00Z"), log: (l) => lines.push(l) });
    await proxy.close();
    if (!r.ok) console.log(r.error);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.refs.map((x) => [x.role, x.message_id]).sort()).toEqual([["inbox", "<p1@test>"], ["inbox", "<p2@test>"], ["sent", "<p3@test>"]]);
    expect(r.refs.find((x) => x.message_id === "<p2@test>")!.flags).toContain("\\Answered");
    expect([...r.sentMessageIds]).toEqual(["<p3@test>"]);
    expect(lines).toEqual([`t INBOX: 2 messages, 2 bodies read (BODY.PEEK), 0 unchanged refs reused`, `t Sent: 1 messages, 1 bodies read (BODY.PEEK), 0 unchanged refs reused`]);
    const wire = proxy.clientBytes();
    expect(wire).toMatch(/BODY\.PEEK\[\]/);
    expect(wire).not.toMatch(/^\S+ (SELECT|(UID )?STORE)\b|BODY\[/im);
    const flags = serverFlags(env, u.user, "INBOX");
    expect(flags.get("<p1@test>")).not.toContain("\\Seen");
    expect(flags.get("<p2@test>")).not.toContain("\\Seen");
    // A second sync reads no body again and refreshes flags.
    const again: string[] = [];
    const r2 = await syncImapAccount({ account: account(u), credentials: creds(u), previous: r.refs, since: new Date("2026-01-01"), now: () => new Date(), log: (l) => again.push(l) });
    expect(r2.ok && r2.folders.map((f) => [f.fetched, f.reused])).toEqual([[0, 2], [0, 1]]);
    expect(JSON.stringify(r.refs)).not.toContain("Can you look");
  });

  it("a failed account (wrong password) keeps its previous refs; the other account is replaced", async () => {
    const u = freshUser(env, "fail");
    const admin = await adminImap(env, u);
    await admin.append("INBOX", mail("f1"), []);
    await admin.logout();
    const ok = await syncImapAccount({ account: account(u), credentials: creds(u), previous: [], since: new Date("2026-01-01"), now: () => new Date(), log: () => {} });
    expect(ok.ok).toBe(true);
    const store = applySync([], [ok]);
    expect(store).toHaveLength(1);
    const lines: string[] = [];
    const bad = await syncImapAccount({ account: account(u), credentials: creds(u, "wrong-password"), previous: store, since: new Date("2026-01-01"), now: () => new Date(), log: (l) => lines.push(l) });
    expect(bad).toMatchObject({ ok: false, error: "authentication failed" });
    expect(applySync(store, [bad])).toEqual(store);
    expect(lines.join("\n")).toMatch(/sync failed, previous refs kept/);
    expect(lines.join("\n")).not.toContain("wrong-password");
  });

  it("folderMessageIds reads Message-IDs from headers only; findMessageIds searches for given ones", async () => {
    const u = freshUser(env, "ids");
    const admin = await adminImap(env, u);
    await admin.append("Sent", mail("m1"), []);
    await admin.append("Sent", mail("m2"), []);
    await admin.logout();
    const { client, guard } = await connectImap({ host: env.host, port: env.imapPort, tls: "none" }, creds(u));
    expect([...(await folderMessageIds(client, "Sent"))].sort()).toEqual(["<m1@test>", "<m2@test>"]);
    expect([...(await findMessageIds(client, "Sent", ["<m2@test>", "<m9@test>"]))]).toEqual(["<m2@test>"]);
    await client.logout();
    expect(guard.refused).toEqual([]);
    expect(serverFlags(env, u.user, "Sent").get("<m1@test>")).not.toContain("\\Seen");
  });
});
