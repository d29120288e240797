/**
 * Idempotent sending (ADR-0064 §4, P2; no source exists, so the whole model is ours: M14,
 * M15). A receipt row is written before submission; a second intent with the same key is
 * refused; after a crash the receipts are reconciled against the Sent folder.
 */
import { createHash } from "node:crypto";
import { ownText, stripQuoted } from "./parse.js";
import { threadId, type ThreadId } from "./thread.js";

/**
 * The body as the key sees it (M14):
 * 1. Unicode NFC; CRLF and CR become LF;
 * 2. runs of spaces and tabs become one space; each line trimmed;
 * 3. cut at the first quote boundary or signature delimiter, and lines starting with `>`
 *    dropped (the same cut as a MailRef's own text, but URLs are kept: two replies that
 *    differ only in a link are two replies);
 * 4. blank-line runs become one blank line; leading and trailing blank lines dropped.
 * Case and punctuation are kept: "ok" and "OK!" are different replies.
 */
export function normaliseBody(body: string): string {
  const spaced = body
    .normalize("NFC")
    .replace(/\r\n?/g, "\n")
    .split("\n")
    .map((l) => l.replace(/[ \t]+/g, " ").trim())
    .join("\n");
  const lines = stripQuoted(spaced).split("\n");
  const out: string[] = [];
  for (const l of lines) if (l !== "" || (out.length > 0 && out.at(-1) !== "")) out.push(l);
  while (out.at(-1) === "") out.pop();
  return out.join("\n");
}

export type IdempotencyKey = string & { readonly __brand: "IdempotencyKey" };

/**
 * sha256 over the JSON array [account, thread, normalised body], hex. JSON framing keeps
 * ("a\nb", "c") and ("a", "b\nc") apart.
 *
 * @example idempotencyKey("zoho", "t:0123456789", "Thanks, will do.\n")
 */
export function idempotencyKey(account: string, thread: ThreadId | string, body: string): IdempotencyKey {
  return createHash("sha256").update(JSON.stringify([account, thread, normaliseBody(body)])).digest("hex") as IdempotencyKey;
}

/**
 * The Message-ID minted before submission: derived from the key, so every process and every
 * retry of one intent carries the same id, and the Sent folder can be searched for it.
 *
 * @example mintMessageId(key, "spacechild.love") // "<k.3f9a...@spacechild.love>"
 */
export function mintMessageId(key: IdempotencyKey, domain: string): string {
  if (!/^[a-z0-9.-]+$/i.test(domain)) throw new Error(`mintMessageId: not a domain: ${JSON.stringify(domain)}`);
  return `<k.${key.slice(0, 32)}@${domain.toLowerCase()}>`;
}

/**
 * pending: written, submission not known to have succeeded;
 * submitted: the SMTP server accepted it;
 * delivered: its Message-ID was seen in Sent;
 * held: reconciliation could not tell and will not guess; the operator decides.
 */
export type ReceiptStatus = "pending" | "submitted" | "delivered" | "held";

export interface Receipt {
  key: IdempotencyKey;
  account: string;
  thread_id: string;
  message_id: string;
  to: string[];
  /** Our own text asks a question (feeds the thread state like a Sent ref would). */
  asks: boolean;
  created_at: string;
  status: ReceiptStatus;
  attempts: number;
}

export interface SendIntent {
  account: string;
  /** The key's scope: the thread replied in, or `new:<to>\n<subject>` for a message that starts one. */
  thread_id: ThreadId | string;
  domain: string;
  to: string[];
  body: string;
  /** The message starts a thread: the receipt names the thread sync will give it (`startedThreadId`). */
  starts_thread?: boolean;
}

/**
 * The thread a message that starts one lands in: it has no In-Reply-To or References, so
 * `groupThreads` keys its thread by its own Message-ID, which is minted from the key. The id
 * is therefore known before submission and equals the one the synced Sent copy gets.
 *
 * @example startedThreadId({ account: "zoho", thread_id: "new:v@x.org\nplan", domain: "spacechild.love", to: ["v@x.org"], body: "Hi" })
 */
export function startedThreadId(intent: SendIntent): ThreadId {
  return threadId(intent.account, mintMessageId(idempotencyKey(intent.account, intent.thread_id, intent.body), intent.domain));
}

export type BeginResult =
  | { ok: true; receipt: Receipt }
  | { ok: false; refusal: { code: "duplicate-key"; existing: Receipt } };

/**
 * Step 1 of a send: the receipt row to write, durably, before anything reaches SMTP; or a
 * refusal when a receipt with this key already exists, whatever its status (a retry goes
 * through `reconcile`, never through a second intent).
 *
 * @example const r = beginSend(receipts, intent, now); if (r.ok) store.append(r.receipt)
 */
export function beginSend(receipts: readonly Receipt[], intent: SendIntent, now: string): BeginResult {
  const key = idempotencyKey(intent.account, intent.thread_id, intent.body);
  const existing = receipts.find((r) => r.key === key);
  if (existing) return { ok: false, refusal: { code: "duplicate-key", existing } };
  return {
    ok: true,
    receipt: {
      key,
      account: intent.account,
      thread_id: intent.starts_thread ? startedThreadId(intent) : intent.thread_id,
      message_id: mintMessageId(key, intent.domain),
      to: intent.to.map((t) => t.toLowerCase()),
      asks: ownText(intent.body).includes("?"),
      created_at: now,
      status: "pending",
      attempts: 1,
    },
  };
}

/** Step 2: the SMTP server accepted the message. */
export function markSubmitted(r: Receipt): Receipt {
  return r.status === "pending" || r.status === "held" ? { ...r, status: "submitted" } : r;
}

export interface ReconcileOptions {
  now: string;
  /** A pending receipt younger than this may belong to a send still in flight. */
  minPendingAgeMs: number;
  /** The server files submissions into Sent itself (config `submissions_filed_in_sent`). */
  sentIsAuthoritative: boolean;
}

export interface Reconciliation {
  /** Message-ID seen in Sent: mark delivered. */
  delivered: Receipt[];
  /** Never reached the server: submit again with the same pre-minted Message-ID. */
  resubmit: Receipt[];
  /** Cannot tell without risking a duplicate: hold for the operator. */
  hold: { receipt: Receipt; why: string }[];
  /** Nothing to do. */
  unchanged: Receipt[];
}

/**
 * Reconcile receipts with the Message-IDs found in the Sent folder (M15). Every receipt
 * lands in exactly one bucket. A receipt is re-submitted only when the Sent folder is
 * authoritative, its id is absent, it is pending and old enough, and no other receipt
 * shares its key; anything else that is unclear is held.
 *
 * @example reconcile(receipts, new Set(sentIds), { now, minPendingAgeMs: 600_000, sentIsAuthoritative: true })
 */
export function reconcile(receipts: readonly Receipt[], sentMessageIds: ReadonlySet<string>, opts: ReconcileOptions): Reconciliation {
  const out: Reconciliation = { delivered: [], resubmit: [], hold: [], unchanged: [] };
  const byKey = new Map<string, number>();
  for (const r of receipts) byKey.set(r.key, (byKey.get(r.key) ?? 0) + 1);
  const now = Date.parse(opts.now);
  for (const r of receipts) {
    if (sentMessageIds.has(r.message_id)) {
      if (r.status === "delivered") out.unchanged.push(r);
      else out.delivered.push({ ...r, status: "delivered" });
      continue;
    }
    if (r.status !== "pending") {
      out.unchanged.push(r); // submitted/delivered/held: a missing Sent copy never triggers a second send
      continue;
    }
    if (byKey.get(r.key)! > 1) out.hold.push({ receipt: { ...r, status: "held" }, why: "two receipts share this key" });
    else if (now - Date.parse(r.created_at) < opts.minPendingAgeMs) out.unchanged.push(r);
    else if (!opts.sentIsAuthoritative) out.hold.push({ receipt: { ...r, status: "held" }, why: "this server does not file submissions in Sent" });
    else out.resubmit.push({ ...r, attempts: r.attempts + 1 });
  }
  return out;
}
