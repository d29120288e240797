/**
 * The mail agent's sentences in the KB (docs/agents-mail.md "The KB shapes"; vocabulary in
 * contexts/CxMailActs.kb). Pure: MailRefs, closures and commitments to sentences and back,
 * and the diff that turns one sync into edits. A MailRef becomes ten facts about the term
 * `(mailRef "anchor")`; none holds a body (the body hash and the own-text features stand for
 * it). Every string goes through `str` (JSON), so no header can break a sentence.
 */
import { terms } from "../../kb/index.js";
import type { Commitment, CommitmentStatus, Provenance, WhoOwes } from "./commitments.js";
import type { Address, FolderRole, MailRef } from "./parse.js";
import { refId } from "./parse.js";
import type { Closure, ThreadState } from "./state.js";

const str = (s: string): string => JSON.stringify(s);
const strOrNone = (s: string | null | undefined): string => (s === null || s === undefined ? "None" : str(s));
const yesNo = (b: boolean): string => (b ? "Yes" : "No");

/** The KB term naming a ref: `(mailRef "account:folder:uid")`. */
export const refTerm = (anchor: string): string => `(mailRef ${str(anchor)})`;
export const threadTerm = (id: string): string => `(mailThread ${str(id)})`;
export const commitmentTerm = (id: string): string => `(mailCommitment ${str(id)})`;

/** Predicates of one ref's facts, in the order `encodeRef` writes them. */
export const REF_PREDICATES = ["mailRefIn", "mailIds", "mailParties", "mailSubject", "mailDate", "mailFlags", "mailAuto", "mailAuth", "mailBodyHash", "mailOwn"] as const;

/** Patterns that read every fact of one predicate (variables for every argument). */
export const REF_PATTERNS: Record<(typeof REF_PREDICATES)[number], string> = {
  mailRefIn: "(mailRefIn ?r ?t ?a ?f ?role ?s ?u ?st)",
  mailIds: "(mailIds ?r ?m ?irt ?refs)",
  mailParties: "(mailParties ?r ?from ?to ?cc)",
  mailSubject: "(mailSubject ?r ?s)",
  mailDate: "(mailDate ?r ?d)",
  mailFlags: "(mailFlags ?r ?f)",
  mailAuto: "(mailAuto ?r ?l ?u ?a ?p ?f ?rp)",
  mailAuth: "(mailAuth ?r ?id ?spf ?dkim ?dmarc ?v)",
  mailBodyHash: "(mailBodyHash ?r ?h)",
  mailOwn: "(mailOwn ?r ?c ?q ?f)",
};

const addr = (a: Address): string => `(addr ${str(a.email)} ${strOrNone(a.name)})`;
const ids = (xs: readonly string[]): string => `(ids${xs.map((x) => ` ${str(x)}`).join("")})`;

/**
 * One ref's facts (no body). `synced_at` is not a ref fact (it would rewrite every ref on
 * every sync): the account's `(mailSynced "account" "iso")` carries it.
 *
 * @example encodeRef(ref, "t:0123456789")
 */
export function encodeRef(ref: MailRef, threadId: string): string[] {
  const R = refTerm(refId(ref));
  return [
    `(mailRefIn ${R} ${threadTerm(threadId)} ${str(ref.account)} ${str(ref.folder)} ${ref.role === "inbox" ? "Inbox" : "Sent"} ${str(ref.server_id)} ${ref.uid ?? "None"} ${strOrNone(ref.server_thread)})`,
    `(mailIds ${R} ${strOrNone(ref.message_id)} ${ids(ref.in_reply_to)} ${ids(ref.references)})`,
    `(mailParties ${R} ${ref.from ? addr(ref.from) : "None"} (addrs${ref.to.map((a) => ` ${addr(a)}`).join("")}) (addrs${ref.cc.map((a) => ` ${addr(a)}`).join("")}))`,
    `(mailSubject ${R} ${str(ref.subject)})`,
    `(mailDate ${R} ${strOrNone(ref.date)})`,
    `(mailFlags ${R} (flags${ref.flags.map((f) => ` ${str(f)}`).join("")}))`,
    `(mailAuto ${R} ${strOrNone(ref.auto.list_id)} ${yesNo(ref.auto.list_unsubscribe)} ${strOrNone(ref.auto.auto_submitted)} ${strOrNone(ref.auto.precedence)} ${yesNo(ref.auto.feedback_id)} ${strOrNone(ref.auto.return_path)})`,
    `(mailAuth ${R} ${strOrNone(ref.auth.authserv_id)} ${strOrNone(ref.auth.spf)} ${strOrNone(ref.auth.dkim)} ${strOrNone(ref.auth.dmarc)} ${ref.auth.from_authenticated ? "Verified" : "Unverified"})`,
    `(mailBodyHash ${R} ${str(ref.body_hash)})`,
    `(mailOwn ${R} ${ref.own.chars} ${ref.own.question ? "Question" : "NoQuestion"} ${ref.own.fyi ? "Fyi" : "NoFyi"})`,
  ].map((s) => terms.canonicalText(s));
}

// ---------------------------------------------------------------- decoding

type T = terms.Term;
const list = (t: T): terms.List => {
  if (!terms.isList(t)) throw new Error(`expected a list, got ${t}`);
  return t;
};
const sval = (t: T): string => {
  if (!terms.isString(t)) throw new Error(`expected a string, got ${terms.printTerm(t)}`);
  return terms.stringValue(t as string);
};
const sOrNull = (t: T): string | null => (t === "None" ? null : sval(t));
const argsOf = (t: T, head: string): terms.List => {
  const l = list(t);
  if (l[0] !== head) throw new Error(`expected (${head} ...), got ${terms.printTerm(t)}`);
  return l.slice(1);
};
const addrOf = (t: T): Address => {
  const [email, name] = argsOf(t, "addr");
  return { email: sval(email!), name: sOrNull(name!) };
};

/** The anchor inside `(mailRef "anchor")`, `(mailThread "t:..")` or `(mailCommitment "c:..")`. */
export function idOf(t: T | string, head: "mailRef" | "mailThread" | "mailCommitment"): string {
  const term = typeof t === "string" && t.startsWith("(") ? terms.parseTerm(t) : t;
  return sval(argsOf(term, head)[0]!);
}

/** The facts of one ref, keyed by predicate, back into a MailRef (synced_at from the account's sync fact). */
export function decodeRef(facts: ReadonlyMap<string, string>, syncedAt: string): { ref: MailRef; threadId: string } {
  const get = (p: string): terms.List => {
    const s = facts.get(p);
    if (s === undefined) throw new Error(`the ref has no ${p} fact`);
    return list(terms.parseTerm(s));
  };
  const [, , t, account, folder, role, serverId, uid, serverThread] = get("mailRefIn");
  const [, , mid, irt, refs] = get("mailIds");
  const [, , from, to, cc] = get("mailParties");
  const [, , subject] = get("mailSubject");
  const [, , date] = get("mailDate");
  const [, , flags] = get("mailFlags");
  const [, , listId, listUnsub, autoSub, prec, feedback, returnPath] = get("mailAuto");
  const [, , authserv, spf, dkim, dmarc, verified] = get("mailAuth");
  const [, , bodyHash] = get("mailBodyHash");
  const [, , chars, question, fyi] = get("mailOwn");
  const ref: MailRef = {
    account: sval(account!),
    folder: sval(folder!),
    role: (role === "Inbox" ? "inbox" : "sent") as FolderRole,
    server_id: sval(serverId!),
    uid: uid === "None" ? null : Number(uid),
    server_thread: sOrNull(serverThread!),
    message_id: sOrNull(mid!),
    in_reply_to: argsOf(irt!, "ids").map(sval),
    references: argsOf(refs!, "ids").map(sval),
    from: from === "None" ? null : addrOf(from!),
    to: argsOf(to!, "addrs").map(addrOf),
    cc: argsOf(cc!, "addrs").map(addrOf),
    subject: sval(subject!),
    date: sOrNull(date!),
    flags: argsOf(flags!, "flags").map(sval),
    auto: {
      list_id: sOrNull(listId!),
      list_unsubscribe: listUnsub === "Yes",
      auto_submitted: sOrNull(autoSub!),
      precedence: sOrNull(prec!),
      feedback_id: feedback === "Yes",
      return_path: sOrNull(returnPath!),
    },
    auth: { authserv_id: sOrNull(authserv!), spf: sOrNull(spf!), dkim: sOrNull(dkim!), dmarc: sOrNull(dmarc!), from_authenticated: verified === "Verified" },
    body_hash: sval(bodyHash!),
    own: { chars: Number(chars), question: question === "Question", fyi: fyi === "Fyi" },
    synced_at: syncedAt,
  };
  return { ref, threadId: idOf(t!, "mailThread") };
}

/** The ref term (canonical text) a ref fact is about: its first argument. */
export function subjectOf(sentence: string): string {
  return terms.printTerm(list(terms.parseTerm(sentence))[1]!);
}

export const syncedFact = (account: string, at: string): string => `(mailSynced ${str(account)} ${str(at)})`;

// ---------------------------------------------------------------- closures

/** `(mailClosed (mailThread "t:..") "account" "note" "covers_through"|None "closed_at")`: the note is the provenance. */
export function encodeClosure(c: Closure): string {
  if (!c.thread_id) throw new Error("encodeClosure: a closure names its thread id");
  return terms.canonicalText(`(mailClosed ${threadTerm(c.thread_id)} ${str(c.account)} ${str(c.note)} ${strOrNone(c.covers_through)} ${str(c.closed_at)})`);
}

export function decodeClosure(sentence: string): Closure {
  const [, t, account, note, covers, closedAt] = list(terms.parseTerm(sentence));
  return { thread_id: idOf(t!, "mailThread"), account: sval(account!), note: sval(note!), covers_through: sOrNull(covers!), closed_at: sval(closedAt!) };
}

// ---------------------------------------------------------------- commitments

const STATUS_SYMBOL: Record<CommitmentStatus, string> = { proposed: "Proposed", open: "Open", kept: "Kept", broken: "Broken", closed: "Closed" };
const SYMBOL_STATUS = new Map(Object.entries(STATUS_SYMBOL).map(([k, v]) => [v, k as CommitmentStatus]));

function provTerm(p: Provenance | null): string {
  if (p === null) return "None";
  if ("ref" in p) return `(byRef ${refTerm(p.ref)})`;
  if ("note" in p) return `(byNote ${str(p.note)})`;
  return `(byOperator ${str(p.operator)})`;
}

function provOf(t: T): Provenance | null {
  if (t === "None") return null;
  const l = list(t);
  if (l[0] === "byRef") return { ref: idOf(l[1]!, "mailRef") };
  if (l[0] === "byNote") return { note: sval(l[1]!) };
  return { operator: sval(l[1]!) };
}

/**
 * The record (`mailCommitmentOf`, never changes) and its status (`mailCommitmentStatus`,
 * replaced in one edit on each transition).
 */
export function encodeCommitment(c: Commitment): { record: string; status: string } {
  const C = commitmentTerm(c.id);
  return {
    record: terms.canonicalText(
      `(mailCommitmentOf ${C} ${refTerm(c.source)} ${threadTerm(c.thread_id)} ${str(c.account)} ${c.who_owes === "us" ? "Us" : "Them"} ${str(c.counterpart)} ${str(c.what)} ${strOrNone(c.due)} ${strOrNone(c.due_text)} ${c.origin === "rule" ? "Rule" : "Model"} ${str(c.origin_detail)})`,
    ),
    status: statusFact(c),
  };
}

export const statusFact = (c: Pick<Commitment, "id" | "status" | "confirmed_by" | "closed_by">): string =>
  terms.canonicalText(`(mailCommitmentStatus ${commitmentTerm(c.id)} ${STATUS_SYMBOL[c.status]} ${provTerm(c.confirmed_by)} ${provTerm(c.closed_by)})`);

export function decodeCommitment(record: string, status: string): Commitment {
  const [, C, src, t, account, who, counterpart, what, due, dueText, origin, detail] = list(terms.parseTerm(record));
  const [, , st, confirmed, closed] = list(terms.parseTerm(status));
  return {
    id: idOf(C!, "mailCommitment"),
    who_owes: (who === "Us" ? "us" : "them") as WhoOwes,
    what: sval(what!),
    due: sOrNull(due!),
    due_text: sOrNull(dueText!),
    source: idOf(src!, "mailRef"),
    account: sval(account!),
    thread_id: idOf(t!, "mailThread"),
    counterpart: sval(counterpart!),
    origin: origin === "Rule" ? "rule" : "model",
    origin_detail: sval(detail!),
    status: SYMBOL_STATUS.get(st as string) ?? "open",
    confirmed_by: provOf(confirmed!),
    closed_by: provOf(closed!),
  };
}

// ---------------------------------------------------------------- questions and claims

export const STATE_SYMBOL: Record<ThreadState, string> = { needs_reply: "NeedsReply", waiting_on_them: "WaitingOnThem", done: "Done", ignored: "Ignored" };

/**
 * The questions the mail agent answers (the Question of `(queries Asker Question)`):
 *   (mailOpenLoops Any|"addr")            open threads, optionally with one counterpart
 *   (mailOwedBy Us|Them Any|"addr")       outstanding commitments by side and counterpart
 * Anything else headed mailOpenLoops/mailOwedBy is `malformed`; other heads are not ours.
 */
export type MailQuestion = { kind: "open-loops"; who: string | null } | { kind: "owed-by"; side: WhoOwes; who: string | null };

export function parseQuestion(question: string): MailQuestion | "malformed" | null {
  let t: T;
  try {
    t = terms.parseTerm(question);
  } catch {
    return null;
  }
  if (!terms.isList(t) || (t[0] !== "mailOpenLoops" && t[0] !== "mailOwedBy")) return null;
  const who = (x: T | undefined): string | null | undefined => (x === "Any" ? null : x !== undefined && terms.isString(x) ? sval(x).toLowerCase() : undefined);
  if (t[0] === "mailOpenLoops") {
    const w = who(t[1]);
    return t.length === 2 && w !== undefined ? { kind: "open-loops", who: w } : "malformed";
  }
  const w = who(t[2]);
  if (t.length !== 3 || (t[1] !== "Us" && t[1] !== "Them") || w === undefined) return "malformed";
  return { kind: "owed-by", side: t[1] === "Us" ? "us" : "them", who: w };
}

/** Claims the mail agent judges: `(owesReply (mailThread "t:.."))`, `(commitmentOpen (mailCommitment "c:.."))`. */
export const CLAIM_PATTERNS = { owesReply: "(owesReply ?t)", commitmentOpen: "(commitmentOpen ?c)" } as const;

export { str, strOrNone };
