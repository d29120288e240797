/**
 * The thread situations, one row per rule of the state table (reference §2.4 plus our
 * P1/P2 rows). Shared by state.test.ts (pure) and threads.test.ts (each row a real Dovecot
 * mailbox).
 */
import { expect } from "vitest";
import { groupThreads, type Closure, type Commitment, type Receipt, type Thread, type ThreadStatus } from "../../../src/agents/mail/index.js";
import { CTX, OURS, msg, type MsgSpec } from "./fixtures.js";
export const NOW = "2026-09-25T12:00:00Z";
export const at = (h: number) => `Wed, 23 Sep 2026 ${String(h).padStart(2, "0")}:00:00 +0000`;
export const iso = (h: number) => `2026-09-23T${String(h).padStart(2, "0")}:00:00Z`;

export function oneThread(specs: MsgSpec[]): Thread {
  const threads = groupThreads(specs.map((s) => msg(s).ref));
  expect(threads).toHaveLength(1);
  return threads[0];
}

export function commitment(thread: Thread, over: Partial<Commitment>): Commitment {
  return {
    id: "c:1",
    who_owes: "us",
    what: "send the plan",
    due: null,
    due_text: null,
    source: "zoho:Sent:1",
    account: "zoho",
    thread_id: thread.id,
    counterpart: "vincent@example.org",
    origin: "rule",
    origin_detail: "promise",
    status: "open",
    confirmed_by: null,
    closed_by: null,
    ...over,
  };
}

export function receipt(thread: Thread, over: Partial<Receipt>): Receipt {
  return {
    key: "k".repeat(64) as Receipt["key"],
    account: "zoho",
    thread_id: thread.id,
    message_id: "<k.receipt@spacechild.love>",
    to: ["vincent@example.org"],
    asks: false,
    created_at: iso(15),
    status: "submitted",
    attempts: 1,
    ...over,
  };
}

export interface Case {
  name: string;
  msgs: MsgSpec[];
  closures?: (t: Thread) => Closure[];
  receipts?: (t: Thread) => Receipt[];
  commitments?: (t: Thread) => Commitment[];
  /** Config `status.started_wait_days` (default 14). */
  startedWaitDays?: number;
  state: ThreadStatus["state"];
  rule: string;
  reason?: RegExp;
  /** The thread's outstanding commitments listed beside the state, as "us: what" / "them: what (broken)". */
  promised?: string[];
}

/** A case's StateInput over a thread built from its messages. */
export const inputOf = (c: Case, thread: Thread) => ({ thread, ctx: CTX, closures: c.closures?.(thread), receipts: c.receipts?.(thread), commitments: c.commitments?.(thread), startedWaitDays: c.startedWaitDays, now: NOW });
export const promisedOf = (s: ThreadStatus): string[] => s.promised.map((p) => `${p.who_owes}: ${p.what}${p.status === "broken" ? " (broken)" : ""}`);

export const theirQ: MsgSpec = { id: "a", date: at(9), body: "Can you deploy the five steps?" };
export const ourQ: MsgSpec = { id: "b", role: "sent", inReplyTo: "a", references: "a", date: at(10), body: "Which server should I use?" };
export const ourS: MsgSpec = { id: "b", role: "sent", inReplyTo: "a", references: "a", date: at(10), body: "Deployed, all five steps." };
/** A message the agent sent (it carries Auto-Submitted, as everything the agent sends does) that starts a thread. */
export const startedByUs: MsgSpec = { id: "k.new", role: "sent", date: at(10), body: "Here is the table for this week.", extra: { "Auto-Submitted": "auto-replied" } };
export const closedAt = (h: number | null, note = "done on 09-23 by another session") => (t: Thread): Closure[] => [
  { account: "zoho", thread_id: t.id, note, covers_through: h === null ? null : iso(h), closed_at: NOW },
];

export const CASES: Case[] = [
  // R1 closed
  { name: "a close covering the focus makes it done", msgs: [theirQ], closures: closedAt(9), state: "done", rule: "closed", reason: /^closed: done on 09-23/ },
  { name: "the last matching close wins", msgs: [theirQ], closures: (t) => [...closedAt(8, "old")(t), ...closedAt(9, "new")(t)], state: "done", rule: "closed", reason: /new/ },
  { name: "a close matched by thread key works too", msgs: [theirQ], closures: (t) => [{ account: "zoho", thread_key: t.key, note: "k", covers_through: iso(9), closed_at: NOW }], state: "done", rule: "closed" },
  { name: "a close without covers_through covers everything", msgs: [theirQ], closures: closedAt(null), state: "done", rule: "closed" },
  { name: "a newer person-facing message re-opens a closed thread", msgs: [theirQ, { id: "c", inReplyTo: "a", date: at(11), body: "One more thing: can you check the logs?" }], closures: closedAt(9), state: "needs_reply", rule: "theirs-unanswered" },
  { name: "a close for another account does not apply", msgs: [theirQ], closures: (t) => [{ account: "np", thread_id: t.id, note: "x", covers_through: null, closed_at: NOW }], state: "needs_reply", rule: "theirs-unanswered" },
  { name: "a newer automated message does not re-open", msgs: [theirQ, { id: "c", inReplyTo: "a", date: at(11), from: "noreply@example.org" }], closures: closedAt(9), state: "done", rule: "closed" },
  // R2 no person-facing message
  { name: "internal traffic only (agent to agent)", msgs: [{ id: "a", from: "rogue@ninja-portal.com", to: "kannaka@ninja-portal.com" }], state: "ignored", rule: "no-person", reason: /internal traffic only/ },
  { name: "a mailing list (List-Id)", msgs: [{ id: "a", extra: { "List-Id": "<team.example.org>" } }], state: "ignored", rule: "no-person", reason: /list-id/ },
  { name: "a newsletter (List-Unsubscribe)", msgs: [{ id: "a", extra: { "List-Unsubscribe": "<mailto:u@x>" } }], state: "ignored", rule: "no-person", reason: /list-unsubscribe/ },
  { name: "Auto-Submitted: auto-replied", msgs: [{ id: "a", extra: { "Auto-Submitted": "auto-replied" } }], state: "ignored", rule: "no-person", reason: /auto-submitted/ },
  { name: "Auto-Submitted: no is a person", msgs: [{ id: "a", extra: { "Auto-Submitted": "no" }, body: "Question?" }], state: "needs_reply", rule: "theirs-unanswered" },
  { name: "Precedence: bulk", msgs: [{ id: "a", extra: { Precedence: "bulk" } }], state: "ignored", rule: "no-person", reason: /precedence: bulk/ },
  { name: "Precedence: auto_reply", msgs: [{ id: "a", extra: { Precedence: "auto_reply" } }], state: "ignored", rule: "no-person", reason: /precedence: auto_reply/ },
  { name: "Feedback-ID (bulk sender)", msgs: [{ id: "a", extra: { "Feedback-ID": "a:b:c" } }], state: "ignored", rule: "no-person", reason: /feedback-id/ },
  { name: "an empty Return-Path (a bounce)", msgs: [{ id: "a", extra: { "Return-Path": "<>" } }], state: "ignored", rule: "no-person", reason: /empty return-path/ },
  { name: "a Return-Path with bounce in it", msgs: [{ id: "a", extra: { "Return-Path": "<bounce-123@mail.example.org>" } }], state: "ignored", rule: "no-person", reason: /bounce address/ },
  { name: "a VERP Return-Path", msgs: [{ id: "a", extra: { "Return-Path": "<news+k=spacechild.love@example.org>" } }], state: "ignored", rule: "no-person", reason: /VERP/ },
  { name: "a noreply sender", msgs: [{ id: "a", from: "GitHub <noreply@github.com>" }], state: "ignored", rule: "no-person", reason: /sender noreply/ },
  { name: "a no-reply-prefixed sender", msgs: [{ id: "a", from: "no-reply-alerts@example.org" }], state: "ignored", rule: "no-person", reason: /no-reply-alerts/ },
  { name: "mailer-daemon", msgs: [{ id: "a", from: "MAILER-DAEMON@zoho.com" }], state: "ignored", rule: "no-person", reason: /mailer-daemon/ },
  { name: "notifications@", msgs: [{ id: "a", from: "notifications@example.org" }], state: "ignored", rule: "no-person" },
  { name: "our tool's mail (Auto-Submitted on ours)", msgs: [{ id: "a", role: "sent", extra: { "Auto-Submitted": "auto-generated" }, body: "Report?" }], state: "ignored", rule: "no-person", reason: /auto-generated/ },
  { name: "our address under another display name (a script)", msgs: [{ id: "a", role: "sent", from: `Deploy Bot <${OURS}>`, body: "Status?" }], state: "ignored", rule: "no-person", reason: /Deploy Bot/ },
  { name: "the agent's own vouched reply is person-facing despite Auto-Submitted", msgs: [theirQ, { ...ourQ, id: "k.receipt", extra: { "Auto-Submitted": "auto-replied" } }], receipts: (t) => [receipt(t, { message_id: "<k.receipt@test>", status: "delivered", asks: true })], state: "waiting_on_them", rule: "ours-asks" },
  // R3 theirs unanswered
  { name: "a person asks; nobody answered", msgs: [theirQ], state: "needs_reply", rule: "theirs-unanswered" },
  { name: "their reply after our statement", msgs: [theirQ, ourS, { id: "c", inReplyTo: "b", date: at(11), body: "Thanks, but the second step failed for me. Here is the full log from the server and what I tried after that." }], state: "needs_reply", rule: "theirs-unanswered" },
  { name: "an unread message counts like a read one (\\Seen is not consulted)", msgs: [{ ...theirQ, flags: ["\\Seen"] }], state: "needs_reply", rule: "theirs-unanswered" },
  { name: "a pending receipt proves nothing", msgs: [theirQ], receipts: (t) => [receipt(t, { status: "pending" })], state: "needs_reply", rule: "theirs-unanswered" },
  { name: "a held receipt proves nothing", msgs: [theirQ], receipts: (t) => [receipt(t, { status: "held" })], state: "needs_reply", rule: "theirs-unanswered" },
  { name: "a short reply to someone else's message is not an ack", msgs: [{ id: "x", date: at(8) }, { id: "c", inReplyTo: "x", date: at(9), body: "ok" }], state: "needs_reply", rule: "theirs-unanswered" },
  { name: "a short reply with a question is not an ack", msgs: [theirQ, ourS, { id: "c", inReplyTo: "b", date: at(11), body: "Great, when?" }], state: "needs_reply", rule: "theirs-unanswered" },
  { name: "a reply of 81 own characters is not an ack", msgs: [theirQ, ourS, { id: "c", inReplyTo: "b", date: at(11), body: "x".repeat(81) }], state: "needs_reply", rule: "theirs-unanswered" },
  // Commitments are listed beside the state and never decide it (M10)
  { name: "we replied but promised in prose: done, the promise beside it", msgs: [theirQ, ourS], commitments: (t) => [commitment(t, {})], state: "done", rule: "ours-said", promised: ["us: send the plan"] },
  { name: "an overdue commitment of ours is listed as broken; the label stays", msgs: [theirQ, ourS], commitments: (t) => [commitment(t, { status: "broken" })], state: "done", rule: "ours-said", promised: ["us: send the plan (broken)"] },
  { name: "a proposed commitment is not listed", msgs: [theirQ, ourS], commitments: (t) => [commitment(t, { status: "proposed", origin: "model" })], state: "done", rule: "ours-said", promised: [] },
  { name: "a kept commitment is not listed", msgs: [theirQ, ourS], commitments: (t) => [commitment(t, { status: "kept" })], state: "done", rule: "ours-said", promised: [] },
  { name: "a commitment of another thread is not listed", msgs: [theirQ, ourS], commitments: (t) => [commitment(t, { thread_id: "t:0000000000" })], state: "done", rule: "ours-said", promised: [] },
  { name: "an outstanding promise of ours does not re-open their unanswered question", msgs: [theirQ], commitments: (t) => [commitment(t, {})], state: "needs_reply", rule: "theirs-unanswered", promised: ["us: send the plan"] },
  // R5 ours asks
  { name: "we asked and they have not answered", msgs: [theirQ, ourQ], state: "waiting_on_them", rule: "ours-asks" },
  { name: "a submitted receipt with no Sent copy counts as our message (Stalwart)", msgs: [theirQ], receipts: (t) => [receipt(t, { asks: true })], state: "waiting_on_them", rule: "ours-asks" },
  // R6 a thread the agent started
  { name: "a message the agent sent starts a thread that waits on them", msgs: [startedByUs], receipts: (t) => [receipt(t, { message_id: "<k.new@test>", status: "delivered" })], state: "waiting_on_them", rule: "ours-started", reason: /we started this thread/ },
  { name: "a started thread ages out after started_wait_days", msgs: [startedByUs], receipts: (t) => [receipt(t, { message_id: "<k.new@test>", status: "delivered" })], startedWaitDays: 1, state: "done", rule: "ours-said" },
  { name: "a receipt filed under another thread id is linked by its Message-ID", msgs: [startedByUs], receipts: (t) => [receipt(t, { message_id: "<k.new@test>", thread_id: "new:vincent@example.org\nplan" })], state: "waiting_on_them", rule: "ours-started" },
  { name: "our started thread with a follow-up of ours still waits", msgs: [startedByUs, { ...ourS, id: "k.more", inReplyTo: "k.new", references: "k.new", date: at(12), body: "Attached the second part too." }], receipts: (t) => [receipt(t, { message_id: "<k.new@test>" })], state: "waiting_on_them", rule: "ours-started" },
  { name: "their answer to a started thread needs our reply", msgs: [startedByUs, { id: "c", inReplyTo: "k.new", references: "k.new", date: at(12), body: "Thanks. Which week is it for?" }], receipts: (t) => [receipt(t, { message_id: "<k.new@test>" })], state: "needs_reply", rule: "theirs-unanswered" },
  { name: "a thread our mail client started (no receipt) follows the reference: a statement is done", msgs: [{ ...startedByUs, extra: undefined }], state: "done", rule: "ours-said" },
  { name: "they promised something and ours is latest: done, their promise beside it", msgs: [theirQ, ourS], commitments: (t) => [commitment(t, { who_owes: "them", what: "send the logs" })], state: "done", rule: "ours-said", promised: ["them: send the logs"] },
  // R7 ours said
  { name: "our statement is the latest", msgs: [theirQ, ourS], state: "done", rule: "ours-said" },
  { name: "a submitted receipt with no question answers them", msgs: [theirQ], receipts: (t) => [receipt(t, {})], state: "done", rule: "ours-said" },
  { name: "a question inside a link in ours does not count", msgs: [theirQ, { ...ourS, body: "Done: https://example.org/run?id=4" }], state: "done", rule: "ours-said" },
  // R8 answered
  { name: "\\Answered on the server", msgs: [{ ...theirQ, flags: ["\\Seen", "\\Answered"] }], state: "done", rule: "answered" },
  // R9 fyi
  { name: "an FYI", msgs: [{ id: "a", body: "FYI: the deploy moved to Monday. Anything else?" }], state: "done", rule: "fyi" },
  // R10 ack
  { name: "a short thanks replying to ours", msgs: [theirQ, ourS, { id: "c", inReplyTo: "b", date: at(11), body: "Thanks, works!\n\nOn Wed, Kannaka wrote:\n> Deployed?" }], state: "done", rule: "ack" },
  { name: "an ack of a receipt-only reply", msgs: [theirQ, { id: "c", inReplyTo: "k.receipt", references: "a k.receipt", date: at(16), body: "Got it, thanks." }], receipts: (t) => [receipt(t, { message_id: "<k.receipt@test>" })], state: "done", rule: "ack" },
  { name: "an ack with an outstanding commitment by us is done, the promise beside it", msgs: [theirQ, ourS, { id: "c", inReplyTo: "b", date: at(11), body: "Thanks!" }], commitments: (t) => [commitment(t, {})], state: "done", rule: "ack", promised: ["us: send the plan"] },
  { name: "'I owe you a reply' after our closing thanks is done, their promise beside it", msgs: [theirQ, { ...ourS, body: "Thanks, that settles it." }, { id: "c", inReplyTo: "b", date: at(11), body: "I owe you a reply." }], commitments: (t) => [commitment(t, { who_owes: "them", what: "owe you a reply", source: "zoho:INBOX:3" })], state: "done", rule: "ack", promised: ["them: owe you a reply"] },
  // focus and dates
  { name: "a -0000 Sent date is UTC, so our later reply stays the latest", msgs: [{ ...theirQ, date: "Thu, 24 Sep 2026 18:00:00 +0000" }, { ...ourS, date: "Thu, 24 Sep 2026 18:22:20 -0000" }], state: "done", rule: "ours-said" },
  { name: "a newer automated message does not move the focus", msgs: [theirQ, ourQ, { id: "c", inReplyTo: "b", date: at(11), extra: { "Auto-Submitted": "auto-replied" }, body: "I am out of office" }], state: "waiting_on_them", rule: "ours-asks" },
];
