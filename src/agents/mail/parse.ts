/**
 * RFC 5322 message -> MailRef (reference §2.3). A MailRef holds no body: a sha256 of the
 * body as served and three features of the sender's own words. The own text itself is
 * returned next to the ref for commitment extraction and must not be persisted.
 */
import { createHash } from "node:crypto";

export const maxHeaderBytes = 256 * 1024;
export const maxMimeDepth = 8;
/** Decoded text examined for features, as the original's JMAP fetch caps it. */
export const maxTextBytes = 256 * 1024;
/** References kept per message: the first (the root, used for threading) plus the newest. */
export const maxReferences = 100;
export const maxAddressesPerHeader = 500;

export interface Address {
  name: string | null;
  email: string;
}

export interface AutoHeaders {
  list_id: string | null;
  list_unsubscribe: boolean;
  auto_submitted: string | null;
  precedence: string | null;
  feedback_id: boolean;
  /** null: no Return-Path header; "": an empty one (`<>`, a bounce). */
  return_path: string | null;
}

export interface AuthResults {
  /** The authserv-id of the header(s) trusted (M5). */
  authserv_id: string | null;
  spf: string | null;
  dkim: string | null;
  dmarc: string | null;
  /** DMARC pass, or DKIM/SPF pass on a domain aligned with From (relaxed). */
  from_authenticated: boolean;
}

export interface OwnFeatures {
  chars: number;
  question: boolean;
  fyi: boolean;
}

export type FolderRole = "inbox" | "sent";

export interface MailRef {
  account: string;
  folder: string;
  role: FolderRole;
  /** IMAP `"<uidvalidity>:<uid>"`, JMAP email id. */
  server_id: string;
  uid: number | null;
  server_thread: string | null;
  message_id: string | null;
  in_reply_to: string[];
  references: string[];
  from: Address | null;
  to: Address[];
  cc: Address[];
  subject: string;
  /** ISO 8601 UTC, or null when neither Date nor the server's date is usable. */
  date: string | null;
  /** IMAP spelling: `\Seen`, `\Answered`, ... */
  flags: string[];
  auto: AutoHeaders;
  auth: AuthResults;
  body_hash: string;
  own: OwnFeatures;
  synced_at: string;
}

export interface FetchMeta {
  account: string;
  folder: string;
  role: FolderRole;
  server_id: string;
  uid?: number;
  server_thread?: string;
  flags?: string[];
  /** INTERNALDATE / receivedAt as ISO, the fallback for a missing or bad Date. */
  internal_date?: string;
  synced_at: string;
  /** M5: Authentication-Results from these authserv-ids are trusted; none given = the topmost header only. */
  trusted_authserv_ids?: string[];
}

export interface ParsedMail {
  ref: MailRef;
  /** The sender's own words (transient: for commitment extraction only, never stored). */
  ownText: string;
}

/** A MailRef's anchor: `account:folder:uid`, or `account:folder:server_id` without a uid. */
export function refId(ref: Pick<MailRef, "account" | "folder" | "uid" | "server_id">): string {
  return `${ref.account}:${ref.folder}:${ref.uid ?? ref.server_id}`;
}

// ---------------------------------------------------------------- headers

export type HeaderMap = Map<string, string[]>;

function splitHeadBody(buf: Buffer): { head: Buffer; body: Buffer } {
  const crlf = buf.indexOf("\r\n\r\n");
  const lf = buf.indexOf("\n\n");
  let at = -1;
  let sep = 0;
  if (crlf >= 0 && (lf < 0 || crlf <= lf)) [at, sep] = [crlf, 4];
  else if (lf >= 0) [at, sep] = [lf, 2];
  // A message that starts with its blank line has no headers at all.
  if (buf.subarray(0, 2).toString("latin1") === "\r\n") return { head: Buffer.alloc(0), body: buf.subarray(2) };
  if (buf[0] === 0x0a) return { head: Buffer.alloc(0), body: buf.subarray(1) };
  if (at < 0) return { head: buf, body: Buffer.alloc(0) };
  return { head: buf.subarray(0, at), body: buf.subarray(at + sep) };
}

/** Unfold and split a header block; names lowercased, values in order of appearance. */
export function parseHeaders(head: string): HeaderMap {
  const map: HeaderMap = new Map();
  let current: string | null = null;
  const flush = () => {
    if (current === null) return;
    const colon = current.indexOf(":");
    if (colon > 0) {
      const name = current.slice(0, colon).trim().toLowerCase();
      const value = current.slice(colon + 1).trim();
      if (/^[\x21-\x39\x3b-\x7e]+$/.test(name)) map.set(name, [...(map.get(name) ?? []), value]);
    }
    current = null;
  };
  for (const line of head.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && current !== null) current += line; // folded: drop the CRLF, keep the blank
    else {
      flush();
      current = line;
    }
  }
  flush();
  return map;
}

const first = (h: HeaderMap, name: string): string | null => h.get(name)?.[0] ?? null;

// ---------------------------------------------------------------- RFC 2047

function decodeCharset(bytes: Buffer, charset: string): string {
  const label = charset.split("*")[0].trim().toLowerCase(); // RFC 2231 language suffix
  try {
    return new TextDecoder(label).decode(bytes);
  } catch {
    return bytes.toString("latin1");
  }
}

function qDecode(text: string, underscoreIsSpace: boolean): Buffer {
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "=" && /^[0-9a-f]{2}$/i.test(text.slice(i + 1, i + 3))) {
      out.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (c === "_" && underscoreIsSpace) out.push(0x20);
    else out.push(text.charCodeAt(i) & 0xff);
  }
  return Buffer.from(out);
}

const ENCODED_WORD = /=\?([^?\s]+)\?([BbQq])\?([^?\s]*)\?=/g;

/**
 * Decode RFC 2047 encoded words. Blanks between two adjacent encoded words are dropped, and
 * adjacent words in one charset are decoded together, so a character split across two
 * words survives.
 *
 * @example decodeEncodedWords("=?UTF-8?B?SGVsbG8=?= =?UTF-8?B?IHdvcmxk?=") // "Hello world"
 */
export function decodeEncodedWords(input: string): string {
  let out = "";
  let last = 0;
  let pending: { charset: string; bytes: Buffer[] } | null = null;
  const flush = () => {
    if (pending) out += decodeCharset(Buffer.concat(pending.bytes), pending.charset);
    pending = null;
  };
  for (const m of input.matchAll(ENCODED_WORD)) {
    const gap = input.slice(last, m.index);
    if (pending === null || !/^\s*$/.test(gap)) {
      flush();
      out += gap;
    }
    const [, charset, enc, text] = m;
    const bytes = enc.toUpperCase() === "B" ? Buffer.from(text, "base64") : qDecode(text, true);
    const p = pending as { charset: string; bytes: Buffer[] } | null;
    if (p !== null && p.charset.toLowerCase() === charset.toLowerCase()) p.bytes.push(bytes);
    else {
      flush();
      pending = { charset, bytes: [bytes] };
    }
    last = m.index + m[0].length;
  }
  flush();
  return out + input.slice(last);
}

// ---------------------------------------------------------------- addresses and ids

/** Split on `sep` outside quotes, angle brackets and comments. */
function splitTopLevel(s: string, isSep: (c: string) => boolean): string[] {
  const parts: string[] = [];
  let cur = "";
  let quoted = false;
  let angle = 0;
  let paren = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quoted) {
      cur += c;
      if (c === "\\" && i + 1 < s.length) cur += s[++i];
      else if (c === '"') quoted = false;
      continue;
    }
    if (c === '"' && paren === 0) quoted = true;
    else if (c === "(") paren++;
    else if (c === ")" && paren > 0) paren--;
    else if (c === "<" && paren === 0) angle++;
    else if (c === ">" && paren === 0 && angle > 0) angle--;
    else if (paren === 0 && angle === 0 && isSep(c)) {
      parts.push(cur);
      cur = "";
      continue;
    }
    cur += c;
  }
  parts.push(cur);
  return parts;
}

function unquote(phrase: string): string {
  const t = phrase.trim();
  if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) return t.slice(1, -1).replace(/\\(.)/g, "$1");
  return t.replace(/"/g, "");
}

/**
 * Parse an address list (From, To, Cc). Group syntax is flattened, display names are
 * RFC 2047-decoded, emails lowercased; an entry without `@` is dropped.
 *
 * @example parseAddressList('"Flach, Nick" <Nick@Example.com>, bare@x.org')
 */
export function parseAddressList(value: string): Address[] {
  const out: Address[] = [];
  // A group's `name:` prefix and its `;` end are separators like a comma.
  for (const raw of splitTopLevel(value, (c) => c === "," || c === ";")) {
    const item = splitTopLevel(raw, (c) => c === ":").at(-1) ?? "";
    let comment: string | null = null;
    const noComments = item.replace(/\(([^()]*)\)/g, (_m, c: string) => {
      comment ??= c.trim();
      return " ";
    });
    const angle = /<([^<>]*)>\s*$/.exec(noComments); // the address is last; a quoted name may hold brackets
    let email: string;
    let name: string | null;
    if (angle) {
      email = angle[1].replace(/^(@[^:]*:)/, "").trim(); // drop an obsolete source route
      name = decodeEncodedWords(unquote(noComments.slice(0, angle.index))).trim() || null;
    } else {
      email = noComments.trim();
      name = null;
    }
    name ??= comment ? decodeEncodedWords(comment) : null;
    if (!email.includes("@") || /\s/.test(email)) continue;
    out.push({ name, email: email.toLowerCase() });
    if (out.length >= maxAddressesPerHeader) break;
  }
  return out;
}

/** Message-ids of a header, angle brackets kept. */
export function parseMessageIds(value: string | null): string[] {
  if (!value) return [];
  return value.match(/<[^<>\s]+>/g) ?? [];
}

function parseMessageId(value: string | null): string | null {
  if (!value) return null;
  const ids = parseMessageIds(value);
  if (ids.length > 0) return ids[0];
  const bare = value.trim();
  return bare && !/\s/.test(bare) && bare.includes("@") ? `<${bare}>` : null;
}

function boundReferences(ids: string[]): string[] {
  if (ids.length <= maxReferences) return ids;
  return [ids[0], ...ids.slice(ids.length - (maxReferences - 1))];
}

// ---------------------------------------------------------------- dates

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const ZONES: Record<string, number> = { ut: 0, utc: 0, gmt: 0, z: 0, est: -300, edt: -240, cst: -360, cdt: -300, mst: -420, mdt: -360, pst: -480, pdt: -420 };

/** ISO 8601 UTC without milliseconds. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * Parse an RFC 5322 date to ISO UTC, or null when it cannot be read (M4). `-0000` is UTC,
 * not local time; trailing comments such as `(CDT)` are stripped; `UT`, `GMT`, `Z`, `UTC`
 * and the US zone names are accepted; other single military letters count as `-0000`.
 *
 * @example parseMailDate("Thu, 24 Sep 2026 18:22:20 -0000") // "2026-09-24T18:22:20Z"
 */
export function parseMailDate(value: string): string | null {
  const t = value.replace(/\([^()]*\)/g, " ").replace(/\s+/g, " ").trim();
  const m = /^(?:[a-z]{3,9},?\s*)?(\d{1,2})[\s-]+([a-z]{3})[a-z]*\.?[\s-]+(\d{2,4})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s*([+-]\d{4}|[a-z]{1,5}))?$/i.exec(t);
  if (!m) return null;
  const [, d, mon, y, hh, mm, ss, zone] = m;
  const month = MONTHS.indexOf(mon.toLowerCase());
  let year = Number(y);
  if (y.length === 2) year += year < 50 ? 2000 : 1900;
  else if (y.length === 3) year += 1900;
  const [day, hour, minute, second] = [Number(d), Number(hh), Number(mm), Math.min(Number(ss ?? 0), 59)];
  if (month < 0 || hour > 23 || minute > 59 || day < 1) return null;
  let offsetMin: number;
  if (zone === undefined) return null; // RFC 5322 requires a zone; guessing one reorders threads
  if (/^[+-]\d{4}$/.test(zone)) {
    const sign = zone[0] === "-" ? -1 : 1;
    const zh = Number(zone.slice(1, 3));
    const zm = Number(zone.slice(3, 5));
    if (zh > 23 || zm > 59) return null;
    offsetMin = sign * (zh * 60 + zm); // "-0000" gives -0, i.e. UTC
  } else {
    const z = zone.toLowerCase();
    if (z in ZONES) offsetMin = ZONES[z];
    else if (/^[a-ik-z]$/.test(z)) offsetMin = 0;
    else return null;
  }
  const local = Date.UTC(year, month, day, hour, minute, second);
  if (new Date(local).getUTCDate() !== day) return null; // 31 Feb and friends
  return isoSeconds(local - offsetMin * 60_000);
}

// ---------------------------------------------------------------- MIME

interface ContentType {
  type: string;
  params: Map<string, string>;
}

export function parseContentType(value: string | null): ContentType {
  if (!value) return { type: "text/plain", params: new Map() };
  const [type, ...rest] = splitTopLevel(value, (c) => c === ";");
  const params = new Map<string, string>();
  for (const p of rest) {
    const eq = p.indexOf("=");
    if (eq > 0) params.set(p.slice(0, eq).trim().toLowerCase(), unquote(p.slice(eq + 1)));
  }
  return { type: type.trim().toLowerCase() || "text/plain", params };
}

function decodeTransfer(body: Buffer, encoding: string | null): Buffer {
  const enc = (encoding ?? "").trim().toLowerCase();
  if (enc === "base64") return Buffer.from(body.toString("latin1").replace(/[^A-Za-z0-9+/=]/g, ""), "base64");
  if (enc === "quoted-printable") return qDecode(body.toString("latin1").replace(/=\r?\n/g, ""), false);
  return body;
}

/** HTML to text: style and script dropped; br, p and div become newlines; tags removed. */
export function htmlToText(html: string): string {
  return html
    .replace(/<(style|script)\b[\s\S]*?<\/\1\s*>/gi, "")
    .replace(/<\/?(br|p|div)\b[^>]*>/gi, "\n")
    .replace(/<[^>]*>/g, "")
    .replace(/&nbsp;/gi, " ")
    .replace(/&lt;/gi, "<")
    .replace(/&gt;/gi, ">")
    .replace(/&quot;/gi, '"')
    .replace(/&#39;|&apos;/gi, "'")
    .replace(/&#(\d+);/g, (_m, n: string) => safeCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_m, n: string) => safeCodePoint(parseInt(n, 16)))
    .replace(/&amp;/gi, "&");
}

function safeCodePoint(n: number): string {
  return n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : "";
}

interface TextFinds {
  plain: string | null;
  html: string | null;
}

function walkPart(headers: HeaderMap, body: Buffer, depth: number, found: TextFinds): void {
  if (depth > maxMimeDepth || (found.plain !== null && found.html !== null)) return;
  const ct = parseContentType(first(headers, "content-type"));
  const disposition = (first(headers, "content-disposition") ?? "").toLowerCase();
  if (disposition.startsWith("attachment")) return;
  if (ct.type.startsWith("multipart/")) {
    const boundary = ct.params.get("boundary");
    if (!boundary) return;
    for (const part of splitMultipart(body, boundary)) {
      const { head, body: partBody } = splitHeadBody(part);
      walkPart(parseHeaders(head.toString("utf8")), partBody, depth + 1, found);
    }
    return;
  }
  if (ct.type !== "text/plain" && ct.type !== "text/html") return;
  if (ct.type === "text/plain" ? found.plain !== null : found.html !== null) return;
  const bytes = decodeTransfer(body, first(headers, "content-transfer-encoding")).subarray(0, maxTextBytes);
  const text = decodeCharset(bytes, ct.params.get("charset") ?? "utf-8");
  if (ct.type === "text/plain") found.plain = text;
  else found.html = htmlToText(text);
}

function splitMultipart(body: Buffer, boundary: string): Buffer[] {
  const text = body.toString("latin1"); // byte-for-byte, so slices map back exactly
  const lines = text.split(/(?<=\n)/);
  const parts: Buffer[] = [];
  let start = -1;
  let offset = 0;
  for (const line of lines) {
    const bare = line.replace(/\r?\n$/, "").trimEnd();
    if (bare === `--${boundary}` || bare === `--${boundary}--`) {
      if (start >= 0) parts.push(Buffer.from(text.slice(start, offset).replace(/\r?\n$/, ""), "latin1"));
      if (bare === `--${boundary}--`) break;
      start = offset + line.length;
    }
    offset += line.length;
  }
  return parts;
}

/**
 * The text a reader sees: the first `text/plain` part, else the first `text/html` with its
 * tags stripped; attachments skipped, nesting capped at `maxMimeDepth`.
 */
export function bestText(headers: HeaderMap, body: Buffer): string {
  const found: TextFinds = { plain: null, html: null };
  walkPart(headers, body, 0, found);
  return found.plain ?? found.html ?? "";
}

// ---------------------------------------------------------------- own text

function isQuoteBoundary(lines: string[], i: number): boolean {
  const line = lines[i];
  const next = lines[i + 1] ?? "";
  if (/^-{5}\s*Original Message/i.test(line)) return true;
  if (/Forwarded message/i.test(line)) return true;
  if (/^-{2,}\s*On\s.*-{2,}\s*$/.test(line)) return true;
  if (/^On\s/.test(line) && (/\bwrote:\s*$/.test(line) || /\bwrote:\s*$/.test(next))) return true;
  if (/^From:\s/.test(line) && /^(Sent|Date):\s/.test(next)) return true;
  return false;
}

/**
 * Cut at the first quote boundary or signature delimiter (M6) and drop lines starting with
 * `>`: what is left is what the author wrote in this message.
 */
export function stripQuoted(text: string): string {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const kept: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (isQuoteBoundary(lines, i) || /^-- ?$/.test(lines[i])) break;
    if (lines[i].startsWith(">")) continue;
    kept.push(lines[i]);
  }
  return kept.join("\n");
}

/**
 * The sender's own words: `stripQuoted`, then URL and mailto words removed, trimmed.
 *
 * @example ownText("Test good\n\nOn Wed, Kannaka <k@x> wrote:\n> Did it arrive?") // "Test good"
 */
export function ownText(text: string): string {
  return stripQuoted(text)
    .replace(/(^|\s)(?:https?:\/\/|mailto:)\S*/gi, "$1")
    .trim();
}

export function ownFeatures(own: string): OwnFeatures {
  return { chars: [...own].length, question: own.includes("?"), fyi: /^fyi/i.test(own) };
}

// ---------------------------------------------------------------- Authentication-Results

function domainOf(email: string): string {
  return email.slice(email.lastIndexOf("@") + 1).toLowerCase();
}

/** Relaxed alignment without a public-suffix list: equal, or one a subdomain of the other, sharing at least two labels. */
export function aligned(a: string, b: string): boolean {
  const [x, y] = [a.toLowerCase(), b.toLowerCase()];
  if (x === y) return true;
  const [short, long] = x.length < y.length ? [x, y] : [y, x];
  return short.includes(".") && long.endsWith(`.${short}`);
}

interface AuthStatement {
  method: string;
  result: string;
  props: Map<string, string>;
}

function parseAuthResults(value: string): { authserv: string; statements: AuthStatement[] } {
  const clean = value.replace(/\([^()]*\)/g, " ");
  const [authserv, ...rest] = clean.split(";");
  const statements: AuthStatement[] = [];
  for (const s of rest) {
    const tokens = s.trim().split(/\s+/).filter(Boolean);
    const head = /^([a-z0-9-]+)=([a-z]+)$/i.exec(tokens[0] ?? "");
    if (!head) continue;
    const props = new Map<string, string>();
    for (const t of tokens.slice(1)) {
      const eq = t.indexOf("=");
      if (eq > 0) props.set(t.slice(0, eq).toLowerCase(), unquote(t.slice(eq + 1)).toLowerCase());
    }
    statements.push({ method: head[1].toLowerCase(), result: head[2].toLowerCase(), props });
  }
  return { authserv: authserv.trim().split(/\s+/)[0]?.toLowerCase() ?? "", statements };
}

/**
 * Read the receiving server's verdict (M5). A sender can write its own
 * Authentication-Results header, so only the trusted authserv-ids count; with none
 * configured, only the topmost header (the last one added, by our own server) is read.
 */
export function authVerdict(headers: HeaderMap, from: Address | null, trusted?: string[]): AuthResults {
  const all = (headers.get("authentication-results") ?? []).map(parseAuthResults);
  const trustedSet = new Set((trusted ?? []).map((t) => t.toLowerCase()));
  const used = trustedSet.size > 0 ? all.filter((a) => trustedSet.has(a.authserv)) : all.slice(0, 1);
  const statements = used.flatMap((u) => u.statements);
  const pick = (m: string) => statements.find((s) => s.method === m) ?? null;
  const fromDomain = from ? domainOf(from.email) : null;
  const passAligned = (m: string, prop: string) =>
    statements.some((s) => {
      if (s.method !== m || s.result !== "pass" || fromDomain === null) return false;
      const v = s.props.get(prop);
      return v !== undefined && aligned(v.includes("@") ? domainOf(v) : v, fromDomain);
    });
  const dmarcPass = statements.some(
    (s) => s.method === "dmarc" && s.result === "pass" && fromDomain !== null && (!s.props.has("header.from") || aligned(s.props.get("header.from")!, fromDomain)),
  );
  return {
    authserv_id: used[0]?.authserv ?? null,
    spf: pick("spf")?.result ?? null,
    dkim: pick("dkim")?.result ?? null,
    dmarc: pick("dmarc")?.result ?? null,
    from_authenticated: dmarcPass || passAligned("dkim", "header.d") || passAligned("spf", "smtp.mailfrom"),
  };
}

// ---------------------------------------------------------------- the message

function autoHeaders(h: HeaderMap): AutoHeaders {
  const rp = first(h, "return-path");
  let returnPath: string | null = null;
  if (rp !== null) returnPath = (/<([^<>]*)>/.exec(rp)?.[1] ?? rp).trim().toLowerCase();
  return {
    list_id: first(h, "list-id"),
    list_unsubscribe: h.has("list-unsubscribe"),
    auto_submitted: first(h, "auto-submitted")?.toLowerCase() ?? null,
    precedence: first(h, "precedence")?.trim().toLowerCase() ?? null,
    feedback_id: h.has("feedback-id"),
    return_path: returnPath,
  };
}

/**
 * Parse one raw message into a MailRef and its transient own text.
 *
 * @example const { ref } = parseMessage(raw, { account: "zoho", folder: "INBOX", role: "inbox",
 *   server_id: "17:42", uid: 42, flags: ["\\Seen"], synced_at: "2026-09-25T10:00:00Z" })
 */
export function parseMessage(raw: string | Uint8Array, meta: FetchMeta): ParsedMail {
  const buf = typeof raw === "string" ? Buffer.from(raw, "utf8") : Buffer.from(raw);
  const { head, body } = splitHeadBody(buf);
  const headers = parseHeaders(head.subarray(0, maxHeaderBytes).toString("utf8"));
  const fromList = parseAddressList(first(headers, "from") ?? "");
  const from = fromList[0] ?? null;
  const dateHeader = first(headers, "date");
  const date = (dateHeader !== null ? parseMailDate(dateHeader) : null) ?? meta.internal_date ?? null;
  const own = ownText(bestText(headers, body));
  const ref: MailRef = {
    account: meta.account,
    folder: meta.folder,
    role: meta.role,
    server_id: meta.server_id,
    uid: meta.uid ?? null,
    server_thread: meta.server_thread ?? null,
    message_id: parseMessageId(first(headers, "message-id")),
    in_reply_to: parseMessageIds(first(headers, "in-reply-to")),
    references: boundReferences(parseMessageIds(first(headers, "references"))),
    from,
    to: (headers.get("to") ?? []).flatMap(parseAddressList),
    cc: (headers.get("cc") ?? []).flatMap(parseAddressList),
    subject: decodeEncodedWords(first(headers, "subject") ?? "").replace(/\s+/g, " ").trim(),
    date,
    flags: [...(meta.flags ?? [])],
    auto: autoHeaders(headers),
    auth: authVerdict(headers, from, meta.trusted_authserv_ids),
    body_hash: createHash("sha256").update(body).digest("hex"),
    own: ownFeatures(own),
    synced_at: meta.synced_at,
  };
  return { ref, ownText: own };
}

/** JMAP keywords in IMAP spelling, so one set of rules reads both transports. */
export function jmapKeywordsToFlags(keywords: Record<string, boolean>): string[] {
  const map: Record<string, string> = { $seen: "\\Seen", $answered: "\\Answered", $flagged: "\\Flagged", $draft: "\\Draft" };
  return Object.entries(keywords)
    .filter(([, on]) => on)
    .map(([k]) => map[k.toLowerCase()] ?? k);
}
