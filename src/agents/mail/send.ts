/**
 * Sending (ADR-0064 §4; M15, M20, M21): the policy decides; a receipt row with the pre-minted
 * Message-ID is written durably before anything reaches SMTP; the message is submitted as
 * raw bytes; the row is marked submitted. After a crash, `reconcileReceipts` (run on the
 * next sync, with the Sent folder's Message-IDs) marks what reached Sent delivered,
 * re-submits what provably never did, and holds what it cannot tell.
 */
import type { Account, MailContext, MailPolicyConfig } from "./config.js";
import { renderMessage, replyHeaders } from "./compose.js";
import { beginSend, idempotencyKey, markSubmitted, reconcile, type Receipt, type SendIntent } from "./idempotency.js";
import { connectImap, type ImapEndpoint } from "./imap.js";
import type { MailRef } from "./parse.js";
import { decide, priorContacts, type DraftReason, type RefusalReason } from "./policy.js";
import type { ReceiptStore, StoredReceipt } from "./receipts.js";
import type { Credentials } from "./secrets.js";
import type { Submitter } from "./smtp.js";

/** Where our copy goes when the server does not file submissions in Sent itself (M20). */
export interface SentCopy {
  append(raw: string): Promise<void>;
}

/** Test seams: a crash test kills the process inside these. */
export interface SendHooks {
  /** The receipt row is on disk; nothing has been sent. */
  afterReceipt?: (r: StoredReceipt) => void;
  /** The server answered 250; the row still says pending. */
  afterSubmit?: (r: Receipt) => void;
}

export type SendOutcome =
  | { status: "sent"; receipt: Receipt; response: string; sent_copy: "server" | "appended" | "append-failed" }
  | { status: "draft"; reason: DraftReason; message: string }
  | { status: "refused"; reason: RefusalReason | "duplicate-key"; detail: string }
  | { status: "failed"; receipt: Receipt; error: string };

export interface SubmitArgs {
  store: ReceiptStore;
  submitter: Submitter;
  intent: SendIntent;
  /** SMTP envelope sender: the account's address. */
  from: string;
  /** Renders the message around the receipt's pre-minted Message-ID. */
  render: (messageId: string) => string;
  now: string;
  /** Given when the account's server does not file submissions (M20). */
  sentCopy?: SentCopy | null;
  hooks?: SendHooks;
}

/**
 * Receipt, then submission (the policy has already said "send"). A failure leaves the row
 * pending: `reconcileReceipts` decides later, never this function.
 */
export async function submitWithReceipt(a: SubmitArgs): Promise<SendOutcome> {
  // Only a receipt with this key can refuse the intent: look it up by primary key.
  const existing = a.store.get(idempotencyKey(a.intent.account, a.intent.thread_id, a.intent.body));
  const begun = beginSend(existing ? [existing] : [], a.intent, a.now);
  if (!begun.ok) return { status: "refused", reason: "duplicate-key", detail: `already ${begun.refusal.existing.status} as ${begun.refusal.existing.message_id}` };
  const raw = a.render(begun.receipt.message_id);
  const ins = a.store.insert(begun.receipt, raw);
  if (!ins.ok) return { status: "refused", reason: "duplicate-key", detail: `already ${ins.existing.status} as ${ins.existing.message_id} (another process)` };
  a.hooks?.afterReceipt?.({ ...begun.receipt, message: raw });
  let response: string;
  try {
    const res = await a.submitter.submit({ from: a.from, to: begun.receipt.to, raw });
    if (res.accepted.length === 0) throw new Error(`no recipient accepted: ${res.response}`);
    response = res.response;
  } catch (e) {
    return { status: "failed", receipt: begun.receipt, error: (e as Error).message };
  }
  a.hooks?.afterSubmit?.(begun.receipt);
  const submitted = markSubmitted(begun.receipt);
  a.store.update(submitted);
  let sentCopy: "server" | "appended" | "append-failed" = "server";
  if (a.sentCopy) {
    try {
      await a.sentCopy.append(raw);
      sentCopy = "appended";
    } catch {
      sentCopy = "append-failed"; // the submitted receipt still counts as our message (M9)
    }
  }
  return { status: "sent", receipt: submitted, response, sent_copy: sentCopy };
}

export interface ReplyInput {
  account: Account;
  target: MailRef;
  /** The thread the target is in (`groupThreads`): part of the idempotency key. */
  threadId: string;
  body: string;
  ctx: MailContext;
  policy: MailPolicyConfig;
  /** All refs, for first-contact detection. */
  refs: readonly MailRef[];
  draft: boolean;
  now: string;
}

export const domainOf = (address: string) => address.slice(address.lastIndexOf("@") + 1);

/**
 * `mail reply`: policy, then receipt and submission. Headers come from the MailRef only
 * (M16); the body is ours. A draft is rendered (with the Message-ID a send would use) and
 * returned for the operator; no receipt is written for it.
 */
export async function sendReply(input: ReplyInput, deps: { store: ReceiptStore; submitter: Submitter; sentCopy?: SentCopy | null; hooks?: SendHooks }): Promise<SendOutcome> {
  const receipts = deps.store.all();
  const decision = decide({
    intent: { kind: "reply", target: input.target },
    account: input.account.name,
    ctx: input.ctx,
    policy: input.policy,
    receipts,
    contacts: priorContacts(input.refs, receipts, input.ctx),
    draft: input.draft,
    now: input.now,
  });
  if (decision.verdict === "refuse") return { status: "refused", reason: decision.reason, detail: decision.detail };
  const intent: SendIntent = { account: input.account.name, thread_id: input.threadId, domain: domainOf(input.account.address), to: [input.target.from!.email], body: input.body };
  const render = (mid: string) => renderMessage(replyHeaders(input.target, input.account, mid, input.now), input.body);
  if (decision.verdict === "draft") {
    const begun = beginSend(receipts, intent, input.now);
    return { status: "draft", reason: decision.reason, message: render(begun.ok ? begun.receipt.message_id : begun.refusal.existing.message_id) };
  }
  return submitWithReceipt({ store: deps.store, submitter: deps.submitter, intent, from: input.account.address, render, now: input.now, sentCopy: deps.sentCopy, hooks: deps.hooks });
}

export interface ReconcileReport {
  delivered: number;
  resubmitted: string[];
  held: { message_id: string; why: string }[];
  unchanged: number;
  /** Re-submissions that failed; they stay pending for the next round. */
  failed: { message_id: string; error: string }[];
}

/**
 * Reconcile one account's receipts with the Message-IDs of its Sent folder (M15): run after
 * each sync. Re-submission uses the stored bytes, so the Message-ID is the pre-minted one.
 */
export async function reconcileReceipts(a: {
  store: ReceiptStore;
  account: Pick<Account, "name" | "address" | "submissions_filed_in_sent">;
  sentMessageIds: ReadonlySet<string>;
  now: string;
  minPendingAgeMs: number;
  submitter: Submitter | null;
  hooks?: SendHooks;
}): Promise<ReconcileReport> {
  const stored = new Map(a.store.all(a.account.name).map((r) => [r.key, r]));
  const rec = reconcile([...stored.values()], a.sentMessageIds, { now: a.now, minPendingAgeMs: a.minPendingAgeMs, sentIsAuthoritative: a.account.submissions_filed_in_sent });
  const report: ReconcileReport = { delivered: rec.delivered.length, resubmitted: [], held: [], unchanged: rec.unchanged.length, failed: [] };
  for (const r of rec.delivered) a.store.update(r);
  for (const h of rec.hold) {
    a.store.update(h.receipt);
    report.held.push({ message_id: h.receipt.message_id, why: h.why });
  }
  for (const r of rec.resubmit) {
    const raw = stored.get(r.key)?.message ?? null;
    if (a.submitter === null || raw === null) {
      const why = raw === null ? "the stored message is missing" : "no SMTP submitter configured";
      a.store.update({ ...r, status: "held" });
      report.held.push({ message_id: r.message_id, why });
      continue;
    }
    a.store.update(r); // attempts + 1, still pending, before the bytes go out again
    try {
      const res = await a.submitter.submit({ from: a.account.address, to: r.to, raw });
      if (res.accepted.length === 0) throw new Error(`no recipient accepted: ${res.response}`);
    } catch (e) {
      report.failed.push({ message_id: r.message_id, error: (e as Error).message });
      continue;
    }
    a.hooks?.afterSubmit?.(r);
    a.store.update(markSubmitted(r));
    report.resubmitted.push(r.message_id);
  }
  return report;
}

/**
 * Our copy into Sent over IMAP, for a server that does not file submissions (M20). The
 * connection's guard allows the read-only commands plus APPEND to this one folder.
 */
export function imapSentCopy(endpoint: ImapEndpoint, creds: Credentials, sentPath: string): SentCopy {
  return {
    async append(raw: string) {
      const { client } = await connectImap(endpoint, creds, { kind: "append-sent", mailbox: sentPath });
      try {
        const r = await client.append(sentPath, raw, ["\\Seen"]);
        if (r === false) throw new Error(`APPEND to ${sentPath} failed`);
      } finally {
        await client.logout().catch(() => client.close());
      }
    },
  };
}
