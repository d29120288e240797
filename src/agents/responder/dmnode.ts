/**
 * A direct message as knowledge: the query node an ingress writes into the channel, and the
 * ingest body the HTTP endpoint and the NATS subscription accept.
 *
 *   (queries AgentResponder (dm "conversationId" "messageId" "senderId" "senderName" "full text"))
 *
 * Every field is a string atom, so nothing a sender writes can become a symbol, a variable
 * or a sentence: the text stays data (quotes, parentheses, `?x`, newlines all round-trip).
 * A DM without a message id is stored with `""` there and read back as `null` (R9 escalates it).
 */
import { terms } from "../../kb/index.js";
import { z } from "zod";
import { type Dm, extractDm } from "./gate.js";

/** The question's head: `(dm Conversation Message Sender SenderName Text)`. */
export const dmPredicate = "dm";
/** A standing goal matching every DM query node (for subscriptions and reads). */
export const dmQueryGoal = "(queries ?agent (dm ?conversation ?message ?sender ?name ?text))";
/** Bound on a DM's text at ingress, in UTF-16 units; a longer message is refused, not cut. */
export const maxDmTextChars = 32_000;
/** Bound on the id and name fields. */
export const maxDmFieldChars = 512;

/** The question term of a DM's query node, canonical text. */
export function dmQuestion(dm: Dm): string {
  const s = terms.stringAtom;
  return `(${dmPredicate} ${s(dm.conversationId)} ${s(dm.messageId ?? "")} ${s(dm.senderId)} ${s(dm.senderName)} ${s(dm.text)})`;
}

/** The DM a question term holds, or null when the term is not a well-formed `dm` question. */
/** Parsed with the KB's default limits: every stored sentence was accepted under them. */
export function parseDmQuestion(question: string | terms.Term): Dm | null {
  let t: terms.Term;
  try {
    t = typeof question === "string" ? terms.parseTerm(question) : question;
  } catch {
    return null;
  }
  if (!terms.isList(t) || t.length !== 6 || t[0] !== dmPredicate) return null;
  const fields: string[] = [];
  for (const a of t.slice(1)) {
    if (!terms.isAtom(a) || !terms.isString(a)) return null;
    fields.push(terms.stringValue(a));
  }
  const [conversationId, messageId, senderId, senderName, text] = fields as [string, string, string, string, string];
  if (conversationId.length === 0 || senderId.length === 0) return null;
  return { conversationId, messageId: messageId.length > 0 ? messageId : null, senderId, senderName, text };
}

/** The DM a stored `(queries Agent (dm ...))` sentence holds, with the asking agent. */
export function parseDmNode(sentence: string): { agent: string; dm: Dm } | null {
  let t: terms.Term;
  try {
    t = terms.parseTerm(sentence);
  } catch {
    return null;
  }
  if (!terms.isList(t) || t.length !== 3 || t[0] !== "queries" || !terms.isAtom(t[1]!)) return null;
  const dm = parseDmQuestion(t[2]!);
  return dm === null ? null : { agent: t[1] as string, dm };
}

const field = z.string().min(1).max(maxDmFieldChars);
/** The flat ingest body: what a caller of `POST /dm` that is not the presence daemon sends. */
export const FlatDmSchema = z.strictObject({
  conversationId: field,
  messageId: field.nullish(),
  senderId: field,
  senderName: z.string().max(maxDmFieldChars).optional(),
  text: z.string().max(maxDmTextChars),
});

export type IngestParse = { ok: true; dm: Dm } | { ok: false; error: string };

/**
 * An ingest body as a DM: either the presence daemon's event (`{obc: {eventType: "dm_message", ...}}`,
 * the NATS payload, read by `extractDm`) or the flat `{conversationId, messageId, senderId, senderName, text}`.
 *
 * @example parseIngest({ conversationId: "c1", messageId: "m1", senderId: "b1", senderName: "Rex", text: "hi" })
 */
export function parseIngest(body: unknown): IngestParse {
  let dm: Dm | null = null;
  if (typeof body === "object" && body !== null && "obc" in body) {
    dm = extractDm(body);
    if (dm === null) return { ok: false, error: "not a dm_message event: needs obc.eventType, obc.from.id, obc.metadata.conversation_id and obc.text" };
  } else {
    const r = FlatDmSchema.safeParse(body);
    if (!r.success) return { ok: false, error: r.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`).join("; ") };
    const f = r.data;
    dm = { conversationId: f.conversationId, messageId: f.messageId ?? null, senderId: f.senderId, senderName: f.senderName ?? "?", text: f.text };
  }
  if (dm.text.length > maxDmTextChars) return { ok: false, error: `text longer than ${maxDmTextChars} characters` };
  for (const [k, v] of [["conversationId", dm.conversationId], ["messageId", dm.messageId ?? ""], ["senderId", dm.senderId], ["senderName", dm.senderName]] as const) {
    if (v.length > maxDmFieldChars) return { ok: false, error: `${k} longer than ${maxDmFieldChars} characters` };
  }
  return { ok: true, dm };
}
