/**
 * The mail agent's operations (docs/agents-mail.md "The agent"): sync into the KB, status,
 * thread, reply, send, close, confirm and the channel pass. Each computes from the mailbox's
 * refs (as the last sync wrote them into the agent's context), the receipt table, closures
 * and commitments; none reads an earlier answer back. The CLI (cli.ts) is a thin shell.
 */
import type { ProgressSink } from "../../kb/progress.js";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { negationOf, openQueries, type AgentHandle, type Handle } from "../../channel/index.js";
import { terms } from "../../kb/index.js";
import type { Composer } from "../composer/types.js";
import { classify } from "./classify.js";
import { applyCommitmentEvent, commitmentsFromMail, outstanding, proposeCommitments, refreshOverdue, type Commitment } from "./commitments.js";
import { renderMessage, type ReplyHeaders } from "./compose.js";
import type { Account, AccountsConfig, MailContext } from "./config.js";
import { mailContext } from "./config.js";
import { beginSend, idempotencyKey, startedThreadId, type SendIntent } from "./idempotency.js";
import { applySync, connectImap, imapEndpoint, syncImapAccount, type AccountSyncResult } from "./imap.js";
import { syncJmapAccount } from "./jmap.js";
import { CLAIM_PATTERNS, STATE_SYMBOL, commitmentTerm, idOf, parseQuestion, str, strOrNone, threadTerm, type MailQuestion } from "./kbshape.js";
import { MailKb } from "./mailkb.js";
import { refId, type MailRef, type ParsedMail } from "./parse.js";
import { decide, priorContacts } from "./policy.js";
import { ReceiptStore } from "./receipts.js";
import { readCredentials, type Credentials } from "./secrets.js";
import { domainOf, imapSentCopy, reconcileReceipts, sendReply, submitWithReceipt, type SendOutcome } from "./send.js";
import { smtpSubmitter } from "./smtp.js";
import { closeThread, isOpen, sortStatuses, threadStatus, type ThreadState, type ThreadStatus } from "./state.js";
import { groupThreads, type Thread } from "./thread.js";

/** The agent's id and the vocabulary its context is rooted in (contexts/CxMailActs.kb). */
export const DEFAULT_MAIL_AGENT = "AgentMail";
export const DEFAULT_MAIL_CHANNEL = "CxMailbox";
export const MAIL_ACTS_CONTEXT = "CxMailActs";
/** A pending receipt younger than this is left alone by reconciliation (M15). */
export const defaultResendAfterMs = 5 * 60_000;

export interface MailAgent {
  cfg: AccountsConfig;
  ctx: MailContext;
  /** The agent's directory: receipts.sqlite, drafts/. */
  dir: string;
  kb: MailKb;
  now: () => Date;
  log: (line: string) => void;
  /** Where a sync reports how far it got (none: silent; `--quiet`). */
  progress?: ProgressSink;
}

export function mailAgent(cfg: AccountsConfig, dir: string, h: AgentHandle, opts: { now?: () => Date; log?: (l: string) => void; progress?: ProgressSink } = {}): MailAgent {
  return { cfg, ctx: mailContext(cfg), dir, kb: new MailKb(h), now: opts.now ?? (() => new Date()), log: opts.log ?? (() => {}), progress: opts.progress };
}

export function receiptStore(dir: string): ReceiptStore {
  mkdirSync(dir, { recursive: true });
  return new ReceiptStore(join(dir, "receipts.sqlite"));
}

const credentialsOf = (a: Account): Credentials => readCredentials(a.credentials);

// ---------------------------------------------------------------- sync

export interface SyncReport {
  results: AccountSyncResult[];
  refs: { added: number; changed: number; removed: number; unchanged: number; edits: number };
  commitments: { added: number; proposed: number; kept: number; dropped: number };
  failed: string[];
}

/**
 * Pull each account's state from its server and make the KB say the same: refs of a
 * successful account replace its old refs (changed refs one edit each: removes + adds); a
 * failed account keeps its previous refs. Then receipts are reconciled against Sent, new
 * rule commitments are added `open` (and, with a composer, proposals `proposed`), and
 * outstanding commitments the mailbox shows kept are marked so.
 */
export async function syncMail(a: MailAgent, opts: { days: number; account?: string; composer?: Composer | null; resendAfterMs?: number }): Promise<SyncReport> {
  const now = a.now();
  const stored = await a.kb.readRefs();
  const since = new Date(now.getTime() - opts.days * 86_400_000);
  const results: AccountSyncResult[] = [];
  const receipts = receiptStore(a.dir);
  try {
    for (const acc of a.cfg.account) {
      if (opts.account !== undefined && acc.name !== opts.account) continue;
      let creds: Credentials;
      try {
        creds = credentialsOf(acc);
      } catch (e) {
        const error = (e as NodeJS.ErrnoException).code ?? (e as Error).message; // names the key or the errno, never a value
        a.log(`${acc.name}: sync failed, previous refs kept: credentials: ${error}`);
        results.push({ account: acc.name, ok: false, error: `credentials: ${error}`, folders: [] });
        continue;
      }
      const common = { credentials: creds, previous: stored.refs, since, now: a.now, log: a.log, progress: a.progress };
      // An http URL is a loopback host's (the config refuses it elsewhere); the client re-checks every URL it is sent to (M22, M23).
      const r =
        acc.transport === "imap"
          ? await syncImapAccount({ ...common, account: acc })
          : await syncJmapAccount({ ...common, account: acc, allowHttpLoopback: new URL(acc.url).protocol === "http:" });
      results.push(r);
      if (!r.ok) continue;
      for (const f of r.failures) a.log(`${acc.name}: could not parse ${f.server_id}: ${f.error}`);
      const submitter = acc.smtp ? smtpSubmitter(acc.smtp, creds) : null;
      try {
        const rec = await reconcileReceipts({ store: receipts, account: acc, sentMessageIds: r.sentMessageIds, now: now.toISOString(), minPendingAgeMs: opts.resendAfterMs ?? defaultResendAfterMs, submitter });
        if (rec.delivered + rec.resubmitted.length + rec.held.length + rec.failed.length > 0)
          a.log(`${acc.name} receipts: ${rec.delivered} delivered, ${rec.resubmitted.length} re-submitted, ${rec.held.length} held, ${rec.failed.length} failed`);
      } finally {
        submitter?.close();
      }
    }
    const refs = applySync(stored.refs, results);
    const threads = groupThreads(refs);
    const threadOf = new Map<string, string>();
    for (const t of threads) for (const r of t.refs) threadOf.set(refId(r), t.id);
    const synced = new Map(results.filter((r) => r.ok).map((r) => [r.account, now.toISOString()]));
    const diff = a.kb.diffRefs(stored, refs.map((ref) => ({ ref, threadId: threadOf.get(refId(ref))! })), synced);
    await a.kb.applyEdits(diff.edits);

    // Commitments: rules on the new messages' own text (then dropped), proposals, lifecycle.
    const { commitments, statusHandles } = await a.kb.readCommitments();
    const known = new Set(commitments.map((c) => c.id));
    const added: Commitment[] = [];
    const parsed: ParsedMail[] = results.flatMap((r) => (r.ok ? r.parsed : []));
    let dropped = 0;
    for (const p of parsed) {
      const tid = threadOf.get(refId(p.ref))!;
      const rules = commitmentsFromMail(p, a.ctx, tid).filter((c) => !known.has(c.id));
      for (const c of rules) known.add(c.id), added.push(c);
      if (opts.composer) {
        const pr = await proposeCommitments(opts.composer, p, a.ctx, tid, [...commitments, ...added]);
        dropped += pr.dropped.length;
        if (pr.error) a.log(`proposals for ${refId(p.ref)}: ${pr.error}`);
        for (const c of pr.proposals.filter((x) => !known.has(x.id))) known.add(c.id), added.push(c);
      }
    }
    const kept = keptByMailbox([...commitments, ...added], threads, a.ctx);
    const keptIds = new Set(kept.map((c) => c.id));
    const addedFinal = added.map((c) => kept.find((k) => k.id === c.id) ?? c);
    await a.kb.writeCommitments(addedFinal, kept.filter((c) => known.has(c.id) && commitments.some((x) => x.id === c.id)), statusHandles);
    const report: SyncReport = {
      results,
      refs: { added: diff.added, changed: diff.changed, removed: diff.removed, unchanged: diff.unchanged, edits: diff.edits.length },
      commitments: { added: added.filter((c) => c.status === "open").length, proposed: added.filter((c) => c.status === "proposed").length, kept: keptIds.size, dropped },
      failed: results.filter((r) => !r.ok).map((r) => r.account),
    };
    a.log(`refs: ${diff.added} new, ${diff.changed} changed, ${diff.removed} gone, ${diff.unchanged} unchanged (${diff.edits.length} edits)`);
    a.log(`commitments: ${report.commitments.added} new, ${report.commitments.proposed} proposed, ${report.commitments.kept} kept by a later message`);
    return report;
  } finally {
    receipts.close();
  }
}

/**
 * A commitment is kept by the mailbox when the owing side writes again in the same thread
 * after the message that made it (our later message keeps what we owe, theirs what they
 * owe); the provenance is that message's ref. A proposal kept this way leaves `proposed`
 * with that reply as its confirmation (ADR §3: "until a reply").
 */
export function keptByMailbox(cs: readonly Commitment[], threads: readonly Thread[], ctx: MailContext): Commitment[] {
  const byId = new Map<string, Thread>(threads.map((t) => [t.id, t]));
  const out: Commitment[] = [];
  for (const c of cs) {
    if (c.status !== "open" && c.status !== "broken" && c.status !== "proposed") continue;
    const t = byId.get(c.thread_id);
    const i = t?.refs.findIndex((r) => refId(r) === c.source) ?? -1;
    if (!t || i < 0) continue;
    const later = t.refs.slice(i + 1).find((r) => {
      const k = classify(r, ctx);
      return k.personFacing && (k.side === "ours") === (c.who_owes === "us");
    });
    if (!later) continue;
    const r = applyCommitmentEvent(c, { kind: "keep", by: { ref: refId(later) } });
    if (r.ok) out.push(r.commitment);
  }
  return out;
}

// ---------------------------------------------------------------- status

export interface MailView {
  refs: MailRef[];
  threads: Thread[];
  rows: ThreadStatus[];
  /** Overdue ones marked broken as of now (computed, not stored). */
  commitments: Commitment[];
  statusHandles: Map<string, Handle>;
}

/** Everything status needs, computed now from refs, receipts, closures and commitments. */
export async function computeView(a: MailAgent): Promise<MailView> {
  const now = a.now().toISOString();
  const [{ refs }, closures, { commitments, statusHandles }] = await Promise.all([a.kb.readRefs(), a.kb.readClosures(), a.kb.readCommitments()]);
  const store = receiptStore(a.dir);
  let receipts;
  try {
    receipts = store.all();
  } finally {
    store.close();
  }
  const cs = refreshOverdue(commitments, now);
  const threads = groupThreads(refs);
  const rows = sortStatuses(threads.map((thread) => threadStatus({ thread, ctx: a.ctx, closures, receipts, commitments: cs, now, startedWaitDays: a.cfg.status.started_wait_days })));
  return { refs, threads, rows, commitments: cs, statusHandles };
}

export interface OweAnswer {
  who: string | null;
  side: "us" | "them";
  threads: ThreadStatus[];
  /** Each with its thread's state beside it (null when the thread is not in the view): a promise does not change that state. */
  commitments: (Commitment & { thread_state: ThreadState | null })[];
}

/**
 * "What do I owe X?" (side us: threads that need our reply from X, and what we promised X)
 * and "what is owed to me?" (side them: threads waiting on X, and what X promised). A pure
 * filter over the computed view, so the same mailbox gives the same answer.
 */
export function owed(view: Pick<MailView, "rows" | "commitments">, side: "us" | "them", who: string | null): OweAnswer {
  const w = who?.toLowerCase() ?? null;
  const state: ThreadState = side === "us" ? "needs_reply" : "waiting_on_them";
  return {
    who: w,
    side,
    threads: view.rows.filter((r) => r.state === state && (w === null || r.counterpart.includes(w))),
    commitments: outstanding(view.commitments, { who_owes: side, ...(w === null ? {} : { counterpart: w }) }).map((c) => ({
      ...c,
      thread_state: view.rows.find((r) => r.thread_id === c.thread_id)?.state ?? null,
    })),
  };
}

export const openLoops = (view: Pick<MailView, "rows">, who: string | null): ThreadStatus[] =>
  view.rows.filter((r) => isOpen(r.state) && (who === null || r.counterpart.includes(who.toLowerCase())));

// ---------------------------------------------------------------- refs

export type Resolved = { kind: "thread"; thread: Thread } | { kind: "message"; thread: Thread; ref: MailRef };

export class ResolveError extends Error {
  constructor(
    message: string,
    /** 1: no match; 2: several. */
    readonly exitCode: 1 | 2,
  ) {
    super(message);
  }
}

/**
 * `<ref>`: a thread id `t:` + at least 4 hex digits (prefix), an anchor
 * `account:folder:uid`, or a Message-ID `<...>`. Exactly one match, else a ResolveError.
 */
export function resolveRef(threads: readonly Thread[], ref: string): Resolved {
  const s = ref.trim();
  if (/^t:[0-9a-f]{4,}$/.test(s)) {
    const hits = threads.filter((t) => t.id.startsWith(s));
    if (hits.length === 1) return { kind: "thread", thread: hits[0]! };
    if (hits.length === 0) throw new ResolveError(`no thread ${s}`, 1);
    throw new ResolveError(`${s} matches ${hits.length} threads: ${hits.map((t) => t.id).join(", ")}`, 2);
  }
  const msgs = threads.flatMap((t) => t.refs.filter((r) => (s.startsWith("<") ? r.message_id === s : refId(r) === s)).map((r) => ({ t, r })));
  if (msgs.length === 1) return { kind: "message", thread: msgs[0]!.t, ref: msgs[0]!.r };
  if (msgs.length === 0) throw new ResolveError(`no message or thread ${s} (use t:<hex>, account:folder:uid or <message-id>)`, 1);
  throw new ResolveError(`${s} matches ${msgs.length} messages: ${msgs.map((m) => refId(m.r)).join(", ")}`, 2);
}

// ---------------------------------------------------------------- close, confirm

export async function closeMail(a: MailAgent, ref: string, note: string): Promise<{ thread: ThreadStatus; before: ThreadState; after: ThreadState; commitmentsClosed: string[] }> {
  if (note.trim() === "") throw new Error("a note is required: it is the provenance of the closure");
  const view = await computeView(a);
  const { thread } = resolveRef(view.threads, ref);
  const now = a.now().toISOString();
  const [closures, store] = [await a.kb.readClosures(), receiptStore(a.dir)];
  let receipts;
  try {
    receipts = store.all();
  } finally {
    store.close();
  }
  const input = { thread, ctx: a.ctx, closures, receipts, commitments: view.commitments, now, startedWaitDays: a.cfg.status.started_wait_days };
  const before = threadStatus(input);
  const closure = closeThread(input, note, now);
  const changes = view.commitments
    .filter((c) => c.thread_id === thread.id)
    .map((c) => applyCommitmentEvent(c, { kind: "close", by: { note: closure.note } }))
    .flatMap((r) => (r.ok ? [r.commitment] : []));
  await a.kb.addClosure(closure, changes, view.statusHandles);
  const after = threadStatus({ ...input, closures: [...closures, closure], commitments: view.commitments.map((c) => changes.find((x) => x.id === c.id) ?? c) });
  return { thread: after, before: before.state, after: after.state, commitmentsClosed: changes.map((c) => c.id) };
}

/** The operator confirms a proposal: proposed -> open, with the operator as provenance. */
export async function confirmCommitment(a: MailAgent, id: string, by: string): Promise<Commitment> {
  const { commitments, statusHandles } = await a.kb.readCommitments();
  const hits = commitments.filter((c) => c.id === id || (id.length >= 6 && c.id.startsWith(id)));
  if (hits.length !== 1) throw new ResolveError(hits.length === 0 ? `no commitment ${id}` : `${id} matches ${hits.length} commitments`, hits.length === 0 ? 1 : 2);
  const r = applyCommitmentEvent(hits[0]!, { kind: "confirm", by: { operator: by } });
  if (!r.ok) throw new Error(`cannot confirm ${hits[0]!.id}: it is ${hits[0]!.status} (${r.refusal.detail})`);
  await a.kb.writeCommitments([], [r.commitment], statusHandles);
  return r.commitment;
}

// ---------------------------------------------------------------- sending

function accountNamed(a: MailAgent, name: string): Account {
  const acc = a.cfg.account.find((x) => x.name === name);
  if (!acc) throw new Error(`no account ${name}`);
  return acc;
}

function needSmtp(acc: Account) {
  if (!acc.smtp) throw new Error(`account ${acc.name} has no smtp block: it cannot send`);
  return acc.smtp;
}

function saveDraft(a: MailAgent, message: string, key: string): string {
  const dir = join(a.dir, "drafts");
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${key.slice(0, 16)}.eml`);
  writeFileSync(path, message, { mode: 0o600 });
  return path;
}

export type SendResult = SendOutcome & { draft_path?: string; thread_id: string };

/**
 * `mail reply <ref>`: the target is the named message, or for a thread its newest message
 * from them. Policy, receipt before SMTP, one submission (send.ts); a draft is written to
 * `drafts/` and never sent.
 */
export async function replyMail(a: MailAgent, ref: string, body: string, opts: { draft: boolean }): Promise<SendResult> {
  const view = await computeView(a);
  const r = resolveRef(view.threads, ref);
  const target = r.kind === "message" ? r.ref : [...r.thread.refs].reverse().find((x) => classify(x, a.ctx).side === "theirs");
  if (!target) throw new ResolveError(`thread ${r.thread.id} has no message from them to reply to`, 1);
  const acc = accountNamed(a, target.account);
  const smtp = needSmtp(acc);
  const creds = credentialsOf(acc);
  const store = receiptStore(a.dir);
  const submitter = smtpSubmitter(smtp, creds);
  try {
    const sentFolder = view.refs.find((x) => x.account === acc.name && x.role === "sent")?.folder ?? "Sent";
    const sentCopy = !acc.submissions_filed_in_sent && acc.transport === "imap" ? imapSentCopy(imapEndpoint(acc), creds, sentFolder) : null;
    const out = await sendReply(
      { account: acc, target, threadId: r.thread.id, body, ctx: a.ctx, policy: a.cfg.policy, refs: view.refs, draft: opts.draft, now: a.now().toISOString() },
      { store, submitter, sentCopy },
    );
    if (out.status === "draft") return { ...out, thread_id: r.thread.id, draft_path: saveDraft(a, out.message, idempotencyKey(acc.name, r.thread.id, body)) };
    return { ...out, thread_id: r.thread.id };
  } finally {
    submitter.close();
    store.close();
  }
}

/**
 * `mail send --to X --subject S`: a new thread through the same policy and receipt path. The
 * idempotency key's scope is `new:<to>\n<subject>` (there is no thread before the first
 * message), so the same words to the same person under the same subject go out once. The
 * thread id is the one sync will give the Sent copy: the message starts its thread, so the
 * thread's key is the pre-minted Message-ID (`startedThreadId`), known before anything is sent.
 */
export async function sendNew(a: MailAgent, o: { account?: string; to: string; subject: string; body: string; draft: boolean }): Promise<SendResult> {
  const acc = o.account ? accountNamed(a, o.account) : a.cfg.account[0]!;
  const to = o.to.trim().toLowerCase();
  const smtp = needSmtp(acc);
  const view = await computeView(a);
  const store = receiptStore(a.dir);
  const now = a.now().toISOString();
  const intent: SendIntent = { account: acc.name, thread_id: `new:${to}\n${o.subject.replace(/\s+/g, " ").trim()}`, domain: domainOf(acc.address), to: [to], body: o.body, starts_thread: true };
  const threadId = startedThreadId(intent);
  try {
    const receipts = store.all();
    const decision = decide({ intent: { kind: "new", to }, account: acc.name, ctx: a.ctx, policy: a.cfg.policy, receipts, contacts: priorContacts(view.refs, receipts, a.ctx), draft: o.draft, now });
    if (decision.verdict === "refuse") return { status: "refused", reason: decision.reason, detail: decision.detail, thread_id: threadId };
    const render = (mid: string) => {
      const h: ReplyHeaders = { from: { name: acc.display_name ?? null, email: acc.address }, to: [{ name: null, email: to }], subject: o.subject, message_id: mid, in_reply_to: null, references: [], auto_submitted: "auto-replied", date: now };
      return renderMessage(h, o.body);
    };
    if (decision.verdict === "draft") {
      const begun = beginSend(receipts, intent, now);
      const message = render(begun.ok ? begun.receipt.message_id : begun.refusal.existing.message_id);
      return { status: "draft", reason: decision.reason, message, thread_id: threadId, draft_path: saveDraft(a, message, idempotencyKey(acc.name, intent.thread_id, o.body)) };
    }
    const creds = credentialsOf(acc);
    const submitter = smtpSubmitter(smtp, creds);
    try {
      const sentCopy = !acc.submissions_filed_in_sent && acc.transport === "imap" ? imapSentCopy(imapEndpoint(acc), creds, "Sent") : null;
      return { ...(await submitWithReceipt({ store, submitter, intent, from: acc.address, render, now, sentCopy })), thread_id: threadId };
    } finally {
      submitter.close();
    }
  } finally {
    store.close();
  }
}

// ---------------------------------------------------------------- thread (live)

export interface LiveMember {
  ref: MailRef;
  /** Flags on the server now, or null when the server no longer has the message ("gone"). */
  live: string[] | null;
}

/**
 * `mail thread <ref>`: each member as synced, and for IMAP accounts its flags fetched live
 * (read-only connection, EXAMINE, no body): null = gone from the server.
 */
export async function threadLive(a: MailAgent, ref: string, opts: { live: boolean }): Promise<{ thread: Thread; status: ThreadStatus; members: LiveMember[] }> {
  const view = await computeView(a);
  const { thread } = resolveRef(view.threads, ref);
  const status = view.rows.find((r) => r.thread_id === thread.id)!;
  const members: LiveMember[] = thread.refs.map((r) => ({ ref: r, live: r.flags }));
  const acc = a.cfg.account.find((x) => x.name === thread.account);
  if (!opts.live || !acc || acc.transport !== "imap") return { thread, status, members };
  const { client } = await connectImap(imapEndpoint(acc), credentialsOf(acc));
  try {
    for (const folder of [...new Set(thread.refs.map((r) => r.folder))]) {
      const lock = await client.getMailboxLock(folder, { readOnly: true });
      try {
        const box = client.mailbox;
        const validity = box === false ? "" : String(box.uidValidity);
        const inFolder = members.filter((m) => m.ref.folder === folder);
        const uids = inFolder.filter((m) => m.ref.uid !== null && m.ref.server_id.startsWith(`${validity}:`)).map((m) => m.ref.uid!);
        const flags = new Map<number, string[]>();
        if (uids.length > 0)
          for await (const m of client.fetch(uids.join(","), { uid: true, flags: true }, { uid: true })) flags.set(m.uid, [...(m.flags ?? [])].filter((f) => f !== "\\Recent").sort());
        for (const m of inFolder) m.live = m.ref.uid !== null ? (flags.get(m.ref.uid) ?? null) : null;
      } finally {
        lock.release();
      }
    }
  } finally {
    await client.logout().catch(() => client.close());
  }
  return { thread, status, members };
}

// ---------------------------------------------------------------- the channel

/** The answer content for a mail question (a term), computed from the view. */
export function answerTerm(view: Pick<MailView, "rows" | "commitments">, q: MailQuestion): string {
  if (q.kind === "open-loops") {
    const rows = openLoops(view, q.who);
    return terms.canonicalText(
      `(mailLoops${rows.map((r) => ` (loop ${threadTerm(r.thread_id)} ${STATE_SYMBOL[r.state]} ${str(r.account)} (addrs${r.counterpart.map((c) => ` ${str(c)}`).join("")}) ${str(r.subject)})`).join("")})`,
    );
  }
  const o = owed(view, q.side, q.who);
  const side = q.side === "us" ? "Us" : "Them";
  return terms.canonicalText(
    `(mailOwed ${side}${o.threads.map((r) => ` (reply ${threadTerm(r.thread_id)} (addrs${r.counterpart.map((c) => ` ${str(c)}`).join("")}) ${str(r.subject)})`).join("")}${o.commitments
      .map((c) => ` (owed ${commitmentTerm(c.id)} ${str(c.counterpart)} ${str(c.what)} ${strOrNone(c.due)} ${c.status === "broken" ? "Broken" : "Open"} ${threadTerm(c.thread_id)})`)
      .join("")})`,
  );
}

export interface ChannelReport {
  answered: number;
  reanswered: number;
  unchanged: number;
  notUnderstood: number;
  endorsed: number;
  disputed: number;
  withdrawn: number;
}

const sx = (h: Handle) => `(sentexHandle ${h})`;

/**
 * One pass over the channel: every mail question in the channel's cone gets the current
 * answer (an answer whose content changed is replaced in one edit: the old goes, the new
 * comes); a malformed one gets `notUnderstood`. Every `(owesReply T)` claim by another agent
 * is endorsed when thread T needs our reply now and disputed (negation + `disputes`, one
 * edit) when the mailbox shows it does not; `(commitmentOpen C)` likewise by whether C is
 * outstanding. A judgment that no longer holds is withdrawn in the same edit as the new one.
 */
export async function answerChannel(a: MailAgent, h: AgentHandle): Promise<ChannelReport> {
  const view = await computeView(a);
  const report: ChannelReport = { answered: 0, reanswered: 0, unchanged: 0, notUnderstood: 0, endorsed: 0, disputed: 0, withdrawn: 0 };
  const m = h.medium;
  const me = h.agent;
  const add: string[] = [];
  const remove = new Set<Handle>();

  // Questions.
  const [queries, mine, refusals] = await Promise.all([
    openQueries(h),
    m.match(`(answers ${me} ?c ?q)`, h.context),
    m.match(`(notUnderstood ${me} ?q)`, h.context),
  ]);
  const myAnswers = new Map<Handle, { handle: Handle; content: string }[]>();
  for (const s of mine) {
    const t = terms.parseTerm(s.sentence) as terms.List;
    const q = terms.handleOfTerm(t[3]!);
    if (q === undefined) continue;
    myAnswers.set(q, [...(myAnswers.get(q) ?? []), { handle: s.handle, content: terms.printTerm(t[2]!) }]);
  }
  const refused = new Set(refusals.map((s) => terms.handleOfTerm((terms.parseTerm(s.sentence) as terms.List)[2]!)));
  for (const q of queries) {
    const parsed = parseQuestion(q.question);
    if (parsed === null) continue;
    if (parsed === "malformed") {
      if (!refused.has(q.handle)) add.push(`(notUnderstood ${me} ${sx(q.handle)})`), (report.notUnderstood += 1);
      continue;
    }
    const content = answerTerm(view, parsed);
    const prev = myAnswers.get(q.handle) ?? [];
    if (prev.length === 1 && prev[0]!.content === content) {
      report.unchanged += 1;
      continue;
    }
    for (const p of prev) remove.add(p.handle);
    add.push(`(answers ${me} ${content} ${sx(q.handle)})`);
    if (prev.length > 0) report.reanswered += 1;
    else report.answered += 1;
  }

  // Claims.
  const cone = await coneContexts(h);
  const [owes, opens, endorsements, disputes] = await Promise.all([
    m.match(CLAIM_PATTERNS.owesReply, "?ctx"),
    m.match(CLAIM_PATTERNS.commitmentOpen, "?ctx"),
    m.match(`(endorses ${me} ?t)`, h.context),
    m.match(`(disputes ${me} ?t)`, h.context),
  ]);
  const threadState = new Map(view.rows.map((r) => [r.thread_id, r.state]));
  const commitmentOf = new Map(view.commitments.map((c) => [c.id, c]));
  const want = new Map<Handle, { verdict: "endorse" | "dispute"; negation: string }>();
  for (const c of [...owes, ...opens]) {
    if (c.context === h.context || !cone.has(c.context) || c.truth !== "true") continue;
    const t = terms.parseTerm(c.sentence) as terms.List;
    let verdict: "endorse" | "dispute" | null = null;
    try {
      if (t[0] === "owesReply") {
        const s = threadState.get(idOf(t[1]!, "mailThread"));
        if (s !== undefined) verdict = s === "needs_reply" ? "endorse" : "dispute";
      } else {
        const k = commitmentOf.get(idOf(t[1]!, "mailCommitment"));
        if (k !== undefined && k.status !== "proposed") verdict = k.status === "open" || k.status === "broken" ? "endorse" : "dispute";
      }
    } catch {
      verdict = null; // not a thread or commitment term: not ours to judge
    }
    if (verdict !== null) want.set(c.handle, { verdict, negation: negationOf(c.sentence) });
  }
  const have = new Map<Handle, { verdict: "endorse" | "dispute"; handle: Handle }>();
  for (const e of endorsements) {
    const t = terms.handleOfTerm((terms.parseTerm(e.sentence) as terms.List)[2]!);
    if (t !== undefined) have.set(t, { verdict: "endorse", handle: e.handle });
  }
  for (const d of disputes) {
    const t = terms.handleOfTerm((terms.parseTerm(d.sentence) as terms.List)[2]!);
    if (t !== undefined) have.set(t, { verdict: "dispute", handle: d.handle });
  }
  const negationsWanted = new Set([...want.values()].filter((w) => w.verdict === "dispute").map((w) => w.negation));
  for (const [target, w] of want) {
    const cur = have.get(target);
    if (cur?.verdict === w.verdict) continue;
    if (cur) remove.add(cur.handle), (report.withdrawn += 1);
    if (w.verdict === "endorse") add.push(`(endorses ${me} ${sx(target)})`), (report.endorsed += 1);
    else add.push(w.negation, `(disputes ${me} ${sx(target)})`), (report.disputed += 1);
  }
  // Negations we stand behind no longer (their thread was re-opened) go with their dispute.
  const myNegations = [...(await m.match("(not (owesReply ?t))", h.context)), ...(await m.match("(not (commitmentOpen ?c))", h.context))];
  for (const n of myNegations) if (!negationsWanted.has(n.sentence) && (n.creator === null || n.creator === me)) remove.add(n.handle);

  if (add.length + remove.size > 0) await m.edit({ add: [...new Set(add)].map((sentence) => ({ sentence, context: h.context, creator: me })), remove: [...remove] });
  return report;
}

async function coneContexts(h: AgentHandle): Promise<Set<string>> {
  const { coneOf } = await import("../../channel/index.js");
  return coneOf(h.medium, h.channel);
}
