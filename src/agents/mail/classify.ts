/**
 * Who wrote a message and whether a person did (reference §2.4): ours or theirs, internal
 * traffic, and automated mail split into robots, lists and bounces (M8).
 */
import type { MailContext } from "./config.js";
import type { MailRef } from "./parse.js";

export type AutomatedKind = "robot" | "list" | "bounce";

export interface Classification {
  side: "ours" | "theirs";
  /** Sender and every To/Cc are our addresses or in an internal domain. */
  internal: boolean;
  /** The first automation signal found, in the reference's order; null for a person. */
  automated: { kind: AutomatedKind; reason: string } | null;
  personFacing: boolean;
}

const ROBOT_LOCALS = new Set(["noreply", "no-reply", "no_reply", "donotreply", "do-not-reply", "do_not_reply", "notification", "notifications", "notify", "welcome"]);
const BOUNCE_LOCALS = new Set(["mailer-daemon", "postmaster", "bounce", "bounces"]);
const REPLY_PREFIXES = ["noreply", "no-reply", "no_reply"];

export function localPart(email: string): string {
  return email.slice(0, email.lastIndexOf("@")).toLowerCase();
}

export function domainPart(email: string): string {
  return email.slice(email.lastIndexOf("@") + 1).toLowerCase();
}

/** One of our addresses, or an address in an internal domain. */
export function isOwn(email: string, ctx: MailContext): boolean {
  return ctx.selfAddresses.has(email.toLowerCase()) || ctx.internalDomains.has(domainPart(email));
}

/** The automation signals of a message from outside, checked in the reference's order. */
export function theirAutomation(ref: MailRef): Classification["automated"] {
  const a = ref.auto;
  if (a.list_id !== null) return { kind: "list", reason: "list-id" };
  if (a.list_unsubscribe) return { kind: "list", reason: "list-unsubscribe" };
  if (a.auto_submitted !== null && a.auto_submitted !== "" && a.auto_submitted !== "no") return { kind: "robot", reason: `auto-submitted: ${a.auto_submitted}` };
  if (a.precedence === "bulk" || a.precedence === "list") return { kind: "list", reason: `precedence: ${a.precedence}` };
  if (a.precedence === "junk" || a.precedence === "auto_reply") return { kind: "robot", reason: `precedence: ${a.precedence}` };
  if (a.feedback_id) return { kind: "list", reason: "feedback-id" };
  if (a.return_path === "") return { kind: "bounce", reason: "empty return-path" };
  if (a.return_path !== null) {
    const rpLocal = localPart(a.return_path);
    if (rpLocal.includes("bounce")) return { kind: "robot", reason: "return-path bounce address" };
    if (rpLocal.includes("+") && rpLocal.includes("=")) return { kind: "robot", reason: "return-path VERP" };
  }
  if (ref.from) {
    const local = localPart(ref.from.email);
    if (BOUNCE_LOCALS.has(local)) return { kind: "bounce", reason: `sender ${local}` };
    if (ROBOT_LOCALS.has(local) || REPLY_PREFIXES.some((p) => local.startsWith(p))) return { kind: "robot", reason: `sender ${local}` };
  }
  return null;
}

/**
 * Classify one message. `vouched` says one of our receipts names this message: the agent's
 * own policy-checked reply carries `Auto-Submitted: auto-replied` but is person-facing (M9).
 *
 * @example classify(ref, ctx).personFacing
 */
export function classify(ref: MailRef, ctx: MailContext, vouched = false): Classification {
  const fromEmail = ref.from?.email ?? null;
  const ours = ref.role === "sent" || (fromEmail !== null && ctx.selfAddresses.has(fromEmail));
  const everyone = [...(fromEmail !== null ? [fromEmail] : []), ...ref.to.map((a) => a.email), ...ref.cc.map((a) => a.email)];
  const internal = fromEmail !== null && everyone.every((e) => isOwn(e, ctx));
  let automated: Classification["automated"] = null;
  if (ours) {
    const as = ref.auto.auto_submitted;
    const configured = ctx.displayNames.get(ref.account);
    if (as !== null && as !== "" && as !== "no" && !vouched) automated = { kind: "robot", reason: `auto-submitted: ${as}` };
    // A tool sending under another name; a bare address (no name) cannot be told apart, so it counts as a person.
    else if (configured !== undefined && ref.from?.name != null && ref.from.name !== configured) automated = { kind: "robot", reason: `sent as "${ref.from.name}"` };
  } else automated = theirAutomation(ref);
  return { side: ours ? "ours" : "theirs", internal, automated, personFacing: !internal && automated === null };
}
