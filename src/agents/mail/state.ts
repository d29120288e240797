/**
 * A thread's state, computed, never remembered (ADR-0064 §3; reference §2.4). One table of
 * rules, first match wins. The reference's P0 rules are kept in meaning; the receipt
 * "event" and the row for a thread the agent started are ours (M9, M10). Outstanding
 * commitments never change the label: they are listed beside it (`promised`).
 */
import type { MailContext } from "./config.js";
import { classify, type Classification } from "./classify.js";
import { isOutstanding, type Commitment } from "./commitments.js";
import type { Receipt } from "./idempotency.js";
import { refId, type MailRef } from "./parse.js";
import type { Thread } from "./thread.js";

/** An acknowledgement is at most this many own characters (reference: ACK_MAX_CHARS). */
export const ackMaxChars = 80;
/** Days a thread the agent started waits on them before it ages out to `done` (config `status.started_wait_days`). */
export const defaultStartedWaitDays = 14;

export type ThreadState = "needs_reply" | "waiting_on_them" | "done" | "ignored";
export const STATE_ORDER: readonly ThreadState[] = ["needs_reply", "waiting_on_them", "done", "ignored"];

export interface Closure {
  account: string;
  thread_key?: string;
  thread_id?: string;
  note: string;
  /** The focus date when the thread was closed; a newer person-facing message re-opens it. */
  covers_through: string | null;
  closed_at: string;
}

/** One thing that happened in the thread: a synced message, or a receipt whose Sent copy is not (yet) there. */
export interface ThreadEvent {
  id: string;
  side: "ours" | "theirs";
  date: string | null;
  asks: boolean;
  fyi: boolean;
  chars: number;
  in_reply_to: string[];
  answered: boolean;
  ref: MailRef | null;
}

export interface Facts {
  thread: Thread;
  closure: Closure | null;
  /** Person-facing events, oldest first. */
  personFacing: ThreadEvent[];
  /** The newest person-facing event, else the newest message. */
  focus: ThreadEvent | null;
  /** Why nothing is person-facing: the first message's reason, or internal traffic. */
  whyIgnored: string;
  ourMessageIds: ReadonlySet<string>;
  /** The first person-facing event is a message the agent sent (a receipt names it): we started this thread. */
  startedByAgent: boolean;
  /** Days (fractional) since the focus, or null without a date. */
  focusAgeDays: number | null;
  startedWaitDays: number;
}

export interface Rule {
  id: string;
  state: ThreadState;
  /** The reason when the rule matches, else null. */
  when: (f: Facts) => string | null;
}

const theirsFocus = (f: Facts) => (f.focus !== null && f.focus.side === "theirs" && f.personFacing.length > 0 ? f.focus : null);
const oursFocus = (f: Facts) => (f.focus !== null && f.focus.side === "ours" && f.personFacing.length > 0 ? f.focus : null);
const isAck = (f: Facts, e: ThreadEvent) => e.in_reply_to.some((id) => f.ourMessageIds.has(id)) && !e.asks && e.chars <= ackMaxChars;
const onlyOurs = (f: Facts) => f.personFacing.length > 0 && f.personFacing.every((e) => e.side === "ours");

/**
 * The rules, first match wins. Without receipts this is the reference's P0 machine: rows
 * 3-9 partition the cases its rules 3-4 cover, so reordering them changes no result (pinned
 * by the "P0 parity" tests). Commitments are not an input: a promise in prose does not make
 * an answered conversation open, nor an acknowledged one waiting (M10).
 */
export const STATE_RULES: readonly Rule[] = [
  {
    id: "closed",
    state: "done",
    when: (f) => {
      if (f.closure === null) return null;
      const focus = f.focus?.date ?? null;
      const covers = f.closure.covers_through;
      return focus === null || covers === null || Date.parse(focus) <= Date.parse(covers) ? `closed: ${f.closure.note}` : null;
    },
  },
  { id: "no-person", state: "ignored", when: (f) => (f.personFacing.length === 0 ? f.whyIgnored : null) },
  {
    id: "theirs-unanswered",
    state: "needs_reply",
    when: (f) => {
      const e = theirsFocus(f);
      return e !== null && !e.answered && !e.fyi && !isAck(f, e) ? "their message is the latest and is not answered" : null;
    },
  },
  { id: "ours-asks", state: "waiting_on_them", when: (f) => (oursFocus(f)?.asks ? "we asked; no answer yet" : null) },
  {
    id: "ours-started",
    state: "waiting_on_them",
    when: (f) =>
      f.startedByAgent && onlyOurs(f) && (f.focusAgeDays === null || f.focusAgeDays < f.startedWaitDays)
        ? `we started this thread; no answer yet (ages out after ${f.startedWaitDays} days)`
        : null,
  },
  { id: "ours-said", state: "done", when: (f) => (oursFocus(f) !== null ? "ours is the latest and asks nothing" : null) },
  { id: "answered", state: "done", when: (f) => (theirsFocus(f)?.answered ? "\\Answered on the server" : null) },
  { id: "fyi", state: "done", when: (f) => (theirsFocus(f)?.fyi ? "FYI" : null) },
  { id: "ack", state: "done", when: (f) => (theirsFocus(f) !== null ? "an acknowledgement of ours" : null) },
];

export interface StateInput {
  thread: Thread;
  ctx: MailContext;
  closures?: readonly Closure[];
  receipts?: readonly Receipt[];
  commitments?: readonly Commitment[];
  now: string;
  /** See `defaultStartedWaitDays`. */
  startedWaitDays?: number;
}

/** An outstanding commitment of the thread, shown beside its state (never deciding it). */
export interface Promised {
  id: string;
  who_owes: Commitment["who_owes"];
  counterpart: string;
  what: string;
  due: string | null;
  status: "open" | "broken";
}

export interface ThreadStatus {
  thread_id: string;
  account: string;
  state: ThreadState;
  rule: string;
  reason: string;
  focus: string | null;
  counterpart: string[];
  subject: string;
  /** Days since the focus, to 0.1; null without a date. */
  age_days: number | null;
  /** Open (or overdue) commitments of this thread, ours and theirs; proposals are not listed. */
  promised: Promised[];
}

function eventOf(ref: MailRef, c: Classification): ThreadEvent {
  return {
    id: refId(ref),
    side: c.side,
    date: ref.date,
    asks: ref.own.question,
    fyi: ref.own.fyi,
    chars: ref.own.chars,
    in_reply_to: ref.in_reply_to,
    answered: ref.flags.includes("\\Answered"),
    ref,
  };
}

const byDate = (a: ThreadEvent, b: ThreadEvent) => (a.date === b.date ? 0 : a.date === null ? -1 : b.date === null ? 1 : Date.parse(a.date) - Date.parse(b.date));

/** Gather the facts every rule reads, once. */
export function threadFacts(input: StateInput): Facts {
  const { thread, ctx } = input;
  const inThread = new Set(thread.refs.map((r) => r.message_id).filter((m): m is string => m !== null));
  // A receipt belongs here by its thread id, or because its Message-ID is a member (a receipt
  // written before the thread had a synced message, under an older id scheme, is linked so).
  const receipts = (input.receipts ?? []).filter((r) => r.account === thread.account && r.status !== "held" && (r.thread_id === thread.id || inThread.has(r.message_id)));
  const vouched = new Set(receipts.map((r) => r.message_id));
  const classified = thread.refs.map((r) => ({ ref: r, c: classify(r, ctx, r.message_id !== null && vouched.has(r.message_id)) }));
  // M9: a receipt whose Sent copy is missing (Stalwart files none) still counts as our message.
  const receiptEvents: ThreadEvent[] = receipts
    .filter((r) => !inThread.has(r.message_id) && r.status !== "pending")
    .map((r) => ({ id: r.message_id, side: "ours", date: r.created_at, asks: r.asks, fyi: false, chars: 0, in_reply_to: [], answered: false, ref: null }));
  const personFacing = [...classified.filter((x) => x.c.personFacing).map((x) => eventOf(x.ref, x.c)), ...receiptEvents].sort(byDate);
  const newest = thread.refs.at(-1);
  const newestEvent = newest === undefined ? null : eventOf(newest, classified.at(-1)!.c);
  const firstAuto = classified.find((x) => x.c.automated !== null)?.c.automated;
  const closures = (input.closures ?? []).filter((c) => c.account === thread.account && (c.thread_id === thread.id || c.thread_key === thread.key));
  const focus = personFacing.at(-1) ?? newestEvent;
  const first = personFacing[0];
  return {
    thread,
    closure: closures.at(-1) ?? null,
    personFacing,
    focus,
    whyIgnored: firstAuto ? `automated (${firstAuto.reason})` : "internal traffic only",
    ourMessageIds: new Set([
      ...classified.filter((x) => x.c.side === "ours" && x.ref.message_id !== null).map((x) => x.ref.message_id!),
      ...receipts.map((r) => r.message_id),
    ]),
    startedByAgent: first !== undefined && first.side === "ours" && vouched.has(first.ref?.message_id ?? first.id),
    focusAgeDays: focus?.date ? (Date.parse(input.now) - Date.parse(focus.date)) / 86_400_000 : null,
    startedWaitDays: input.startedWaitDays ?? defaultStartedWaitDays,
  };
}

/** The thread's outstanding commitments (open or broken; proposals never count), ours first. */
function promisedIn(thread: Thread, commitments: readonly Commitment[]): Promised[] {
  return commitments
    .filter((c) => c.thread_id === thread.id && isOutstanding(c))
    .sort((a, b) => (a.who_owes === b.who_owes ? a.id.localeCompare(b.id) : a.who_owes === "us" ? -1 : 1))
    .map((c) => ({ id: c.id, who_owes: c.who_owes, counterpart: c.counterpart, what: c.what, due: c.due, status: c.status as Promised["status"] }));
}

/**
 * The state of one thread and the rule that decided it.
 *
 * @example threadStatus({ thread, ctx, closures, receipts, commitments, now }).state
 */
export function threadStatus(input: StateInput): ThreadStatus {
  const f = threadFacts(input);
  for (const rule of STATE_RULES) {
    const reason = rule.when(f);
    if (reason === null) continue;
    const focusRef = f.focus?.ref ?? null;
    const counterpart =
      f.focus === null
        ? []
        : f.focus.side === "theirs"
          ? focusRef?.from
            ? [focusRef.from.email]
            : []
          : focusRef
            ? [...focusRef.to, ...focusRef.cc].map((a) => a.email).filter((e) => !input.ctx.selfAddresses.has(e))
            : (input.receipts ?? []).find((r) => r.message_id === f.focus!.id)?.to ?? [];
    const date = f.focus?.date ?? null;
    return {
      thread_id: f.thread.id,
      account: f.thread.account,
      state: rule.state,
      rule: rule.id,
      reason,
      focus: f.focus?.id ?? null,
      counterpart,
      subject: f.thread.refs[0]?.subject ?? "",
      age_days: date === null ? null : Math.round((Date.parse(input.now) - Date.parse(date)) / 8_640_000) / 10,
      promised: promisedIn(f.thread, input.commitments ?? []),
    };
  }
  // The last row matches whenever a person-facing event exists, and row 2 when none does.
  throw new Error(`threadStatus: no rule matched thread ${f.thread.id}`);
}

/** The closure `mail close <ref> --note` appends: it covers everything up to the current focus. */
export function closeThread(input: StateInput, note: string, closedAt: string): Closure {
  if (note.trim() === "") throw new Error("closeThread: a note is required (it is the provenance)");
  const f = threadFacts(input);
  return { account: f.thread.account, thread_id: f.thread.id, thread_key: f.thread.key, note: note.trim(), covers_through: f.focus?.date ?? null, closed_at: closedAt };
}

/** `status` order: needs_reply < waiting_on_them < done < ignored, then newest first. */
export function sortStatuses(rows: readonly ThreadStatus[]): ThreadStatus[] {
  return [...rows].sort((a, b) => STATE_ORDER.indexOf(a.state) - STATE_ORDER.indexOf(b.state) || (a.age_days ?? Infinity) - (b.age_days ?? Infinity) || a.thread_id.localeCompare(b.thread_id));
}

export function isOpen(s: ThreadState): boolean {
  return s === "needs_reply" || s === "waiting_on_them";
}

/** "N threads: needs_reply a · waiting_on_them b · done c · ignored d" */
export function summaryLine(rows: readonly ThreadStatus[]): string {
  const n = (s: ThreadState) => rows.filter((r) => r.state === s).length;
  return `${rows.length} threads: ${STATE_ORDER.map((s) => `${s} ${n(s)}`).join(" · ")}`;
}
