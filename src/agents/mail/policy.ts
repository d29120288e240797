/**
 * The one reply policy (ADR-0064 §4, P2; rogue-agent's code is not available, so the order
 * and the numbers are ours: M13). A pure decision: send, store a draft, or refuse with a
 * typed reason. Nothing here reads a body; a mail can trigger nothing beyond this.
 */
import type { MailPolicyConfig, MailContext } from "./config.js";
import { isOwn, theirAutomation } from "./classify.js";
import type { Receipt } from "./idempotency.js";
import type { MailRef } from "./parse.js";

/** Every refusal, with its why (style: a refusal is a table row). Checked in this order. */
export const REFUSALS = {
  "no-sender": "the message has no usable From address",
  "own-address": "the sender is one of our addresses or in an internal domain: agents do not answer each other by mail",
  bounce: "a bounce or delivery report: answering it loops",
  list: "a mailing list or bulk sender: a reply reaches everyone or no one",
  robot: "an automated sender: nobody reads the reply, and two robots can loop",
  unverified: "the From domain is not authenticated (no aligned DKIM/SPF or DMARC pass): it may be forged",
  "sender-cap": "the per-sender daily cap is reached",
  "day-cap": "the daily cap for this account is reached",
} as const;
export type RefusalReason = keyof typeof REFUSALS;

export const DRAFT_REASONS = {
  "draft-mode": "--draft: the reply is stored for an operator",
  "first-contact": "we have never written to this address: an operator sends the first message",
} as const;
export type DraftReason = keyof typeof DRAFT_REASONS;

export type Decision =
  | { verdict: "send" }
  | { verdict: "draft"; reason: DraftReason }
  | { verdict: "refuse"; reason: RefusalReason; detail: string };

export interface PolicyInput {
  /** A reply answers `target`; a new thread (`mail send --to`) has none. */
  intent: { kind: "reply"; target: MailRef } | { kind: "new"; to: string };
  account: string;
  ctx: MailContext;
  policy: MailPolicyConfig;
  receipts: readonly Receipt[];
  /** Addresses we have written to before (see `priorContacts`). */
  contacts: ReadonlySet<string>;
  draft: boolean;
  now: string;
}

const utcDay = (iso: string) => iso.slice(0, 10);

/**
 * Decide what may happen to one outgoing message. Refusals first (who the mail is to or
 * from), then caps, then the two draft reasons. Caps count every receipt of the UTC day,
 * pending ones included: an attempt counts whether or not it went through.
 *
 * @example decide({ intent: { kind: "reply", target: ref }, account: "zoho", ctx, policy, receipts, contacts, draft: false, now })
 */
export function decide(input: PolicyInput): Decision {
  const { intent, ctx } = input;
  const to = (intent.kind === "reply" ? (intent.target.from?.email ?? "") : intent.to).toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(to)) return refuse("no-sender", to || "(none)");
  if (isOwn(to, ctx)) return refuse("own-address", to);
  if (intent.kind === "reply") {
    const auto = theirAutomation(intent.target);
    if (auto !== null) return refuse(auto.kind, auto.reason);
    if (!intent.target.auth.from_authenticated)
      return refuse("unverified", `spf=${intent.target.auth.spf ?? "none"} dkim=${intent.target.auth.dkim ?? "none"} dmarc=${intent.target.auth.dmarc ?? "none"}`);
  }
  const today = input.receipts.filter((r) => r.account === input.account && utcDay(r.created_at) === utcDay(input.now));
  const toSender = today.filter((r) => r.to.includes(to)).length;
  if (toSender >= input.policy.max_replies_per_sender_per_day) return refuse("sender-cap", `${toSender}/${input.policy.max_replies_per_sender_per_day} to ${to} today`);
  if (today.length >= input.policy.max_replies_per_day) return refuse("day-cap", `${today.length}/${input.policy.max_replies_per_day} today`);
  if (input.draft) return { verdict: "draft", reason: "draft-mode" };
  if (input.policy.first_contact === "draft" && !input.contacts.has(to)) return { verdict: "draft", reason: "first-contact" };
  return { verdict: "send" };
}

function refuse(reason: RefusalReason, detail: string): Decision {
  return { verdict: "refuse", reason, detail };
}

/**
 * Addresses we have written to: recipients of our Sent refs, and of receipts that were
 * submitted or delivered (a pending or held receipt proves nothing).
 */
export function priorContacts(refs: readonly MailRef[], receipts: readonly Receipt[], ctx: MailContext): Set<string> {
  const out = new Set<string>();
  for (const r of refs) if (r.role === "sent") for (const a of [...r.to, ...r.cc]) if (!ctx.selfAddresses.has(a.email)) out.add(a.email);
  for (const r of receipts) if (r.status === "submitted" || r.status === "delivered") for (const t of r.to) out.add(t);
  return out;
}

