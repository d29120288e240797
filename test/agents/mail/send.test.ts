/**
 * Sending against the real submission path (smtp-server -> Dovecot LMTP): receipt before
 * submission, duplicate refusal, Auto-Submitted and threading headers from the MailRef,
 * reconciliation against Sent, and the Sent copy when the server files none (M20).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { connectImap, folderMessageIds, syncImapAccount } from "../../../src/agents/mail/imap.js";
import { groupThreads, mailContext, parseAccountsConfig, type AccountsConfig, type ImapAccount, type MailRef } from "../../../src/agents/mail/index.js";
import { ReceiptStore } from "../../../src/agents/mail/receipts.js";
import { Secret } from "../../../src/agents/mail/secrets.js";
import { imapSentCopy, reconcileReceipts, sendReply, submitWithReceipt } from "../../../src/agents/mail/send.js";
import { smtpSubmitter } from "../../../src/agents/mail/smtp.js";
import { rawMail } from "./fixtures.js";
import { adminImap, doveadm, mailServers, freshUser, messageIdCounts, type MailEnv, type TestUser } from "./servers.js";

let env: MailEnv;
beforeAll(async () => {
  env = await mailServers();
}, 120_000);

const NOW = () => new Date().toISOString();
const store = () => new ReceiptStore(join(mkdtempSync(join(tmpdir(), "koinii-mail-")), "receipts.sqlite"));

function config(u: TestUser, filed = true): AccountsConfig {
  const r = parseAccountsConfig({
    policy: { first_contact: "send" },
    account: [
      {
        name: "t",
        address: u.user,
        display_name: "Kannaka",
        transport: "imap",
        host: env.host,
        port: env.imapPort,
        tls: "none",
        smtp: { host: env.host, port: env.smtpPort, tls: "none" },
        credentials: "/nonexistent",
        submissions_filed_in_sent: filed,
      },
    ],
  });
  if (!r.ok) throw new Error(r.problems.join("; "));
  return r.config;
}
const creds = (u: TestUser) => ({ user: u.user, pass: new Secret(u.pass) });

/** A person writes to us: their message in our INBOX (with a passing Authentication-Results), synced into a MailRef. */
async function theirMessage(u: TestUser, them: string, id: string): Promise<{ ref: MailRef; threadId: string; refs: MailRef[] }> {
  const admin = await adminImap(env, u);
  await admin.append(
    "INBOX",
    rawMail(
      {
        "Authentication-Results": `mx.koinii.test; dkim=pass header.d=example.org; spf=pass smtp.mailfrom=${them}; dmarc=pass header.from=example.org`,
        From: `Vincent <${them}>`,
        To: `Kannaka <${u.user}>`,
        Subject: "the plan",
        Date: new Date().toUTCString(),
        "Message-ID": `<${id}@example.org>`,
        References: `<root-${id}@example.org>`,
        "In-Reply-To": `<root-${id}@example.org>`,
      },
      "Can you send the plan?",
    ),
    [],
  );
  await admin.logout();
  const acc = config(u).account[0] as ImapAccount;
  const r = await syncImapAccount({ account: acc, credentials: creds(u), previous: [], since: new Date(Date.now() - 86_400_000), now: () => new Date(), log: () => {} });
  if (!r.ok) throw new Error(r.error);
  const ref = r.refs.find((x) => x.message_id === `<${id}@example.org>`)!;
  const thread = groupThreads(r.refs).find((t) => t.refs.includes(ref))!;
  return { ref, threadId: thread.id, refs: r.refs };
}

/** One header of the only message in a folder, unfolded (doveadm, on disk). */
const headerOf = (user: string, mailbox: string, name: string) =>
  doveadm(env, ["-f", "tab", "fetch", "-u", user, `hdr.${name}`, "mailbox", mailbox, "all"]).split("\n").slice(1).join(" ").replace(/\s+/g, " ").trim();

describe("sending through the real submission path", () => {
  it("writes the receipt before SMTP, sends once with headers from the MailRef, refuses the retry, reconciles against Sent", async () => {
    const u = freshUser(env, "send");
    const them = `v-${Date.now().toString(36)}@example.org`;
    const { ref, threadId, refs } = await theirMessage(u, them, "q1");
    const cfg = config(u);
    const account = cfg.account[0];
    const receipts = store();
    const submitter = smtpSubmitter(account.smtp!, creds(u));
    let seenBeforeSubmit: string | null = null;
    let deliveredBeforeSubmit = -1;
    const input = { account, target: ref, threadId, body: "Here is the plan: deploy Monday.", ctx: mailContext(cfg), policy: cfg.policy, refs, draft: false, now: NOW() };
    const out = await sendReply(input, {
      store: receipts,
      submitter,
      hooks: {
        afterReceipt: (r) => {
          seenBeforeSubmit = receipts.get(r.key)?.status ?? null;
          deliveredBeforeSubmit = messageIdCounts(env, them, "INBOX").size;
        },
      },
    });
    expect(out.status).toBe("sent");
    if (out.status !== "sent") return;
    expect(seenBeforeSubmit).toBe("pending");
    expect(deliveredBeforeSubmit).toBe(0);
    expect(out.sent_copy).toBe("server");
    expect(receipts.get(out.receipt.key)?.status).toBe("submitted");

    expect([...messageIdCounts(env, them, "INBOX")]).toEqual([[out.receipt.message_id, 1]]);
    expect(headerOf(them, "INBOX", "auto-submitted")).toBe("auto-replied");
    expect(headerOf(them, "INBOX", "in-reply-to")).toBe("<q1@example.org>");
    expect(headerOf(them, "INBOX", "references")).toBe("<root-q1@example.org> <q1@example.org>");

    const again = await sendReply({ ...input, body: "Here is the plan:   deploy Monday.\n" }, { store: receipts, submitter });
    expect(again).toMatchObject({ status: "refused", reason: "duplicate-key" });
    expect(messageIdCounts(env, them, "INBOX").get(out.receipt.message_id)).toBe(1);

    // Next sync: the Sent copy (filed by the server) proves delivery.
    const { client } = await connectImap({ host: env.host, port: env.imapPort, tls: "none" }, creds(u));
    const sentIds = await folderMessageIds(client, "Sent");
    await client.logout();
    const rep = await reconcileReceipts({ store: receipts, account, sentMessageIds: sentIds, now: NOW(), minPendingAgeMs: 0, submitter });
    expect(rep).toMatchObject({ delivered: 1, resubmitted: [], held: [] });
    expect(receipts.get(out.receipt.key)).toMatchObject({ status: "delivered", message: null });
    submitter.close();
  });

  it("a crash between receipt and submission is re-submitted once on the next sync, with the same Message-ID", async () => {
    const u = freshUser(env, "crash1");
    const them = `w-${Date.now().toString(36)}@example.org`;
    const cfg = config(u);
    const account = cfg.account[0];
    const receipts = store();
    const submitter = smtpSubmitter(account.smtp!, creds(u));
    const intent = { account: "t", thread_id: "t:0000000001", domain: "koinii.test", to: [them], body: "One." };
    const render = (mid: string) => rawMail({ From: u.user, To: them, Subject: "x", Date: new Date().toUTCString(), "Message-ID": mid, "Auto-Submitted": "auto-replied" }, "One.");
    await expect(
      submitWithReceipt({ store: receipts, submitter, intent, from: u.user, render, now: NOW(), hooks: { afterReceipt: () => { throw new Error("crash"); } } }),
    ).rejects.toThrow("crash");
    const [pending] = receipts.all();
    expect(pending.status).toBe("pending");
    expect(messageIdCounts(env, them, "INBOX").size).toBe(0);
    // Too young: maybe still in flight elsewhere.
    expect(await reconcileReceipts({ store: receipts, account, sentMessageIds: new Set(), now: NOW(), minPendingAgeMs: 60_000, submitter })).toMatchObject({ resubmitted: [], unchanged: 1 });
    const rep = await reconcileReceipts({ store: receipts, account, sentMessageIds: new Set(), now: NOW(), minPendingAgeMs: 0, submitter });
    expect(rep.resubmitted).toEqual([pending.message_id]);
    expect([...messageIdCounts(env, them, "INBOX")]).toEqual([[pending.message_id, 1]]);
    // The retry of the same intent is refused; the next reconcile finds it in Sent.
    expect(await submitWithReceipt({ store: receipts, submitter, intent, from: u.user, render, now: NOW() })).toMatchObject({ status: "refused", reason: "duplicate-key" });
    const { client } = await connectImap({ host: env.host, port: env.imapPort, tls: "none" }, creds(u));
    const sentIds = await folderMessageIds(client, "Sent");
    await client.logout();
    expect(await reconcileReceipts({ store: receipts, account, sentMessageIds: sentIds, now: NOW(), minPendingAgeMs: 0, submitter })).toMatchObject({ delivered: 1, resubmitted: [] });
    expect(messageIdCounts(env, them, "INBOX").get(pending.message_id)).toBe(1);
    submitter.close();
  });

  it("a server that files no Sent copy: the sender APPENDs its own (guard: APPEND to Sent only); a crash before submission is held, never re-sent", async () => {
    const u = freshUser(env, "nosent"); // the submission server files nothing for nosent* senders
    const them = `x-${Date.now().toString(36)}@example.org`;
    const cfg = config(u, false);
    const account = cfg.account[0] as ImapAccount;
    const receipts = store();
    const submitter = smtpSubmitter(account.smtp!, creds(u));
    const sentCopy = imapSentCopy({ host: env.host, port: env.imapPort, tls: "none" }, creds(u), "Sent");
    const render = (body: string) => (mid: string) => rawMail({ From: u.user, To: them, Subject: "x", Date: new Date().toUTCString(), "Message-ID": mid }, body);
    const intent = (body: string) => ({ account: "t", thread_id: "t:0000000002", domain: "koinii.test", to: [them], body });
    const out = await submitWithReceipt({ store: receipts, submitter, intent: intent("Two."), from: u.user, render: render("Two."), now: NOW(), sentCopy });
    expect(out).toMatchObject({ status: "sent", sent_copy: "appended" });
    if (out.status !== "sent") return;
    expect([...messageIdCounts(env, u.user, "Sent")]).toEqual([[out.receipt.message_id, 1]]);
    expect([...messageIdCounts(env, them, "INBOX")]).toEqual([[out.receipt.message_id, 1]]);

    await expect(
      submitWithReceipt({ store: receipts, submitter, intent: intent("Three."), from: u.user, render: render("Three."), now: NOW(), sentCopy, hooks: { afterReceipt: () => { throw new Error("crash"); } } }),
    ).rejects.toThrow("crash");
    const { client } = await connectImap({ host: env.host, port: env.imapPort, tls: "none" }, creds(u));
    const sentIds = await folderMessageIds(client, "Sent");
    await client.logout();
    const rep = await reconcileReceipts({ store: receipts, account, sentMessageIds: sentIds, now: NOW(), minPendingAgeMs: 0, submitter });
    expect(rep.delivered).toBe(1);
    expect(rep.resubmitted).toEqual([]);
    expect(rep.held).toEqual([{ message_id: expect.any(String), why: "this server does not file submissions in Sent" }]);
    expect(messageIdCounts(env, them, "INBOX").size).toBe(1);
    submitter.close();
  });
});
