/**
 * IMAP sync through imapflow, read-only by construction (reference §2.3 "Read-only guards";
 * docs/agents-mail.md M18-M20).
 *
 * The guard sits on imapflow's `write`, the one method through which every byte a client
 * sends passes (command lines, literal data, SASL continuations, IDLE's DONE). The first
 * frame of each tagged command is checked against an allowlist before it reaches the
 * socket; a refused command throws `ImapGuardError` inside imapflow's dispatch, which rejects
 * that command and nothing reaches the server. Continuation frames are allowed only for the
 * command in flight, and only for commands that may carry literals or SASL responses.
 * Folders are opened with EXAMINE (imapflow `readOnly`), bodies fetched with BODY.PEEK[].
 */
import type { ProgressSink } from "../../kb/progress.js";
import { ImapFlow, type FetchMessageObject, type ListResponse } from "imapflow";
import type { ImapAccount } from "./config.js";
import { parseMessageIds, type FolderRole, type MailRef, type ParsedMail } from "./parse.js";
import type { Credentials, Secret } from "./secrets.js";
import { AccountCollector, replaceAccountRefs, type FetchedMessage } from "./sync.js";

// ---------------------------------------------------------------- the guard

/**
 * What a guarded connection may send. `read-only` is sync's; `append-sent` adds exactly one
 * write, APPEND to the named Sent folder, for a sender whose server does not file
 * submissions itself (M20).
 */
export type GuardProfile = { kind: "read-only" } | { kind: "append-sent"; mailbox: string };
export const READ_ONLY: GuardProfile = { kind: "read-only" };

/** Commands sync may send. Anything else (SELECT, STORE, APPEND, COPY, MOVE, EXPUNGE, CLOSE, IDLE, COMPRESS, ...) is refused. */
export const IMAP_READ_ONLY_COMMANDS: ReadonlySet<string> = new Set([
  "CAPABILITY",
  "NOOP",
  "LOGOUT",
  "ID",
  "ENABLE",
  "STARTTLS",
  "LOGIN",
  "AUTHENTICATE",
  "NAMESPACE",
  "LIST",
  "LSUB",
  "STATUS",
  "EXAMINE",
  "UNSELECT",
  "SEARCH",
  "UID SEARCH",
  "FETCH",
  "UID FETCH",
]);

/** Commands whose literals or SASL exchanges continue after the command line. FETCH is not one. */
const CONTINUABLE = new Set(["LOGIN", "AUTHENTICATE", "LIST", "LSUB", "STATUS", "EXAMINE", "SEARCH", "UID SEARCH", "ID", "APPEND"]);

export class ImapGuardError extends Error {
  readonly code = "imap-guard-refused";
  constructor(
    /** The command verb only: a LOGIN line carries a password and is never quoted. */
    readonly verb: string,
    readonly why: string,
  ) {
    super(`IMAP guard refused ${verb}: ${why}`);
    this.name = "ImapGuardError";
  }
}

/** Tag and verb of a command line (`UID FETCH` counts as one verb). */
export function commandVerb(line: string): { tag: string; verb: string; rest: string } | null {
  const m = /^([A-Za-z0-9.]+) ([A-Za-z]+)(?: (.*))?$/s.exec(line);
  if (!m) return null;
  let verb = m[2].toUpperCase();
  let rest = m[3] ?? "";
  if (verb === "UID") {
    const sub = /^([A-Za-z]+)(?: (.*))?$/s.exec(rest);
    if (!sub) return null;
    verb = `UID ${sub[1].toUpperCase()}`;
    rest = sub[2] ?? "";
  }
  return { tag: m[1], verb, rest };
}

const stripQuoted = (s: string) => s.replace(/"(?:[^"\\]|\\.)*"/g, '""');

/**
 * A command frame with each literal's data replaced by `{literal}`. With LITERAL+ imapflow
 * writes a whole command, literals included, as one frame; every CRLF in it must end a
 * literal marker `{n}`/`{n+}` and is followed by exactly n bytes of data. Null when a line
 * break introduces no literal (that would be a second command on the wire).
 */
export function commandSkeleton(frame: string): string | null {
  let out = "";
  let i = 0;
  while (i < frame.length) {
    const crlf = frame.indexOf("\r\n", i);
    if (crlf < 0) {
      out += frame.slice(i);
      break;
    }
    const line = frame.slice(i, crlf);
    const m = /\{(\d+)\+?\}$/.exec(line);
    if (!m) return null;
    out += `${line.slice(0, m.index)}{literal}`;
    i = crlf + 2 + Number(m[1]);
  }
  return out;
}

/**
 * The guard's decision on one command frame as it would go on the wire (without the final
 * CRLF; literal data is skipped by its announced length): null when allowed, else why not.
 *
 * @example checkImapCommand("7 UID FETCH 1:5 (UID BODY[])") // "BODY[] sets \\Seen: only BODY.PEEK[] is allowed"
 */
export function checkImapCommand(frame: string, profile: GuardProfile = READ_ONLY): string | null {
  const line = commandSkeleton(frame);
  if (line === null || /[\r\n\0]/.test(line)) return "a command line may not contain CR, LF or NUL";
  if (/[^\x20-\x7e]/.test(line)) return "a command line must be printable ASCII (other text goes in a literal)";
  const c = commandVerb(line);
  if (c === null) return "not an IMAP command line";
  if (c.verb === "APPEND" && profile.kind === "append-sent") {
    const box = /^(?:"((?:[^"\\]|\\.)*)"|([^\s"(){]+))(?: |$)/.exec(c.rest);
    const name = box ? (box[1] !== undefined ? box[1].replace(/\\(.)/g, "$1") : box[2]) : null;
    return name === profile.mailbox ? null : `APPEND only to ${profile.mailbox}`;
  }
  if (!IMAP_READ_ONLY_COMMANDS.has(c.verb)) return `${c.verb} is not on the read-only allowlist`;
  if (c.verb === "FETCH" || c.verb === "UID FETCH") {
    if (c.rest.includes("{literal}")) return "a FETCH carries no literal";
    const items = stripQuoted(c.rest).toUpperCase();
    if (/BODY\[/.test(items) || /BODY</.test(items)) return "BODY[] sets \\Seen: only BODY.PEEK[] is allowed";
    if (/BINARY\[/.test(items)) return "BINARY[] sets \\Seen: only BINARY.PEEK[] is allowed";
    if (/RFC822(?!\.SIZE)/.test(items)) return "RFC822, RFC822.TEXT and RFC822.HEADER are refused (only RFC822.SIZE)";
  }
  return null;
}

export interface GuardRecord {
  verb: string;
  why: string;
}

export interface ImapGuard {
  readonly profile: GuardProfile;
  /** Every refusal on this connection, in order. */
  readonly refused: GuardRecord[];
  /** Verbs of the commands that were let through, in order. */
  readonly sent: string[];
}

/** The two imapflow internals the guard needs; both are stable since imapflow 1.0. */
interface ImapFlowInternals {
  write(chunk: string | Buffer): unknown;
  currentRequest: { tag: string; command: string } | null | undefined;
}

/**
 * Install the guard on a client before `connect()`. Every write is checked: the first frame
 * of a command against `checkImapCommand`, later frames only as continuations of an
 * allowed continuable command.
 */
export function guardImapClient(client: ImapFlow, profile: GuardProfile = READ_ONLY): ImapGuard {
  const internals = client as unknown as ImapFlowInternals;
  if (typeof internals.write !== "function") throw new Error("guardImapClient: imapflow has no write(); the guard cannot be installed");
  const write = internals.write.bind(client);
  const guard: ImapGuard = { profile, refused: [], sent: [] };
  let checkedTag: string | null = null;
  let checkedVerb = "";
  const refuse = (verb: string, why: string): never => {
    guard.refused.push({ verb, why });
    throw new ImapGuardError(verb, why);
  };
  internals.write = (chunk: string | Buffer) => {
    const text = typeof chunk === "string" ? chunk : Buffer.isBuffer(chunk) ? chunk.toString("latin1") : "";
    const tag = internals.currentRequest?.tag ?? null;
    if (tag !== null && tag !== checkedTag) {
      const c = commandVerb(commandSkeleton(text) ?? "");
      const verb = c?.verb ?? "(unparsable)";
      if (c === null || c.tag !== tag) refuse(verb, "the first frame of a command must be its tagged command line");
      const why = checkImapCommand(text, profile);
      if (why !== null) refuse(verb, why);
      checkedTag = tag;
      checkedVerb = verb;
      guard.sent.push(verb);
    } else if (tag === null || !CONTINUABLE.has(checkedVerb)) {
      refuse(tag === null ? "(untagged write)" : checkedVerb, "a continuation frame outside a continuable command");
    }
    return write(chunk);
  };
  return guard;
}

// ---------------------------------------------------------------- connecting

export interface ImapEndpoint {
  host: string;
  port: number;
  tls: "implicit" | "starttls" | "none";
}

export interface GuardedImap {
  client: ImapFlow;
  guard: ImapGuard;
}

/**
 * A connected, guarded client. IDLE and COMPRESS are off (neither is on the allowlist);
 * `none` TLS is for loopback test servers (the config refuses it for any other host).
 */
export async function connectImap(endpoint: ImapEndpoint, creds: Credentials | { user: string; pass: Secret | string }, profile: GuardProfile = READ_ONLY): Promise<GuardedImap> {
  const pass = typeof creds.pass === "string" ? creds.pass : creds.pass.reveal();
  const client = new ImapFlow({
    host: endpoint.host,
    port: endpoint.port,
    secure: endpoint.tls === "implicit",
    doSTARTTLS: endpoint.tls === "starttls" ? true : endpoint.tls === "none" ? false : undefined,
    auth: { user: creds.user, pass },
    logger: false,
    disableAutoIdle: true,
    disableCompression: true,
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
  } as ConstructorParameters<typeof ImapFlow>[0]);
  const guard = guardImapClient(client, profile);
  client.on("error", () => {}); // a socket error after connect surfaces on the next command
  await client.connect();
  return { client, guard };
}

export function imapEndpoint(account: ImapAccount): ImapEndpoint {
  return { host: account.host, port: account.port, tls: account.tls };
}

// ---------------------------------------------------------------- sync

const SENT_NAMES = ["sent", "sent items", "sent messages", "inbox.sent", "inbox/sent"];

/** INBOX and the Sent folder: by the \Sent special-use attribute, else by name (reference §2.3). */
export function findFolders(list: readonly ListResponse[]): { inbox: string | null; sent: string | null } {
  const inbox = list.find((m) => m.specialUse === "\\Inbox" || m.path.toUpperCase() === "INBOX")?.path ?? null;
  const sent = list.find((m) => m.specialUse === "\\Sent")?.path ?? list.find((m) => SENT_NAMES.includes(m.path.toLowerCase()))?.path ?? null;
  return { inbox, sent };
}

export interface FolderReport {
  folder: string;
  role: FolderRole;
  messages: number;
  /** Bodies fetched (BODY.PEEK[]) and parsed. */
  fetched: number;
  /** Known refs whose flags were refreshed, body not read again. */
  reused: number;
}

export type AccountSyncResult =
  | {
      account: string;
      ok: true;
      /** The account's refs now: reused (flags refreshed) and new. */
      refs: MailRef[];
      /** New messages with their transient own text, for commitment extraction; never stored. */
      parsed: ParsedMail[];
      failures: { account: string; server_id: string; error: string }[];
      folders: FolderReport[];
      /** Message-IDs in the Sent folder, for `reconcile` (M15). */
      sentMessageIds: Set<string>;
      warnings: string[];
    }
  | { account: string; ok: false; error: string; folders: FolderReport[] };

export interface ImapSyncOptions {
  account: ImapAccount;
  credentials: Credentials;
  /** The account's refs from the previous sync (others are ignored). */
  previous: readonly MailRef[];
  /** Messages on or after this day (IMAP SINCE has day granularity). */
  since: Date;
  now: () => Date;
  /** One line per folder, and per account failure. */
  log: (line: string) => void;
  /** Where the sync reports how many messages it has read (none: silent). */
  progress?: ProgressSink;
  trustedAuthservIds?: string[];
  /** Bodies per FETCH: the reference's 20. */
  chunk?: number;
  /** For tests: connect some other way (the guard must still be installed). */
  connect?: (account: ImapAccount, creds: Credentials) => Promise<GuardedImap>;
}

const uidsOf = (r: number[] | false | undefined) => (Array.isArray(r) ? r : []);
/** \Recent is per session (RFC 3501; gone in IMAP4rev2): not a fact about the message. */
const flagsOf = (m: FetchMessageObject) => [...(m.flags ?? [])].filter((f) => f !== "\\Recent");

/**
 * Sync one IMAP account, read-only. Never throws: a failure (login, network, guard) is an
 * `ok: false` result, and the caller keeps that account's previous refs (`applySync`).
 */
export async function syncImapAccount(opts: ImapSyncOptions): Promise<AccountSyncResult> {
  const { account, log } = opts;
  const acc = new AccountCollector(account.name, opts.previous, log, opts.progress);
  let conn: GuardedImap | null = null;
  try {
    conn = await (opts.connect ?? ((a, c) => connectImap(imapEndpoint(a), c)))(account, opts.credentials);
    const { client } = conn;
    const { inbox, sent } = findFolders(await client.list());
    if (sent === null) acc.warn(`${account.name}: no Sent folder (no \\Sent attribute, no known name): replies will look unanswered`);
    for (const [path, role] of [
      [inbox, "inbox"],
      [sent, "sent"],
    ] as const) {
      if (path === null) continue;
      const lock = await client.getMailboxLock(path, { readOnly: true });
      try {
        const box = client.mailbox;
        if (box === false || !box.readOnly) throw new Error(`${path} is not open read-only`);
        const validity = String(box.uidValidity);
        const uids = box.exists === 0 ? [] : uidsOf(await client.search({ since: opts.since }, { uid: true }));
        const syncedAt = opts.now().toISOString();
        const fresh: number[] = [];
        const metaOf = new Map<number, FetchMessageObject>();
        if (uids.length > 0)
          for await (const m of client.fetch(uids.join(","), { uid: true, flags: true, internalDate: true }, { uid: true })) metaOf.set(m.uid, m);
        let reused = 0;
        for (const uid of uids) {
          const m = metaOf.get(uid);
          if (!m) continue; // expunged between SEARCH and FETCH
          if (acc.reuse(path, `${validity}:${uid}`, flagsOf(m), syncedAt)) reused += 1;
          else fresh.push(uid);
        }
        const size = opts.chunk ?? 20;
        for (let i = 0; i < fresh.length; i += size) {
          const batch: FetchedMessage[] = [];
          for await (const m of client.fetch(fresh.slice(i, i + size).join(","), { uid: true, flags: true, internalDate: true, source: true }, { uid: true })) {
            if (!m.source) continue;
            const idate = m.internalDate ? new Date(m.internalDate).toISOString() : undefined;
            batch.push({
              raw: m.source,
              meta: {
                account: account.name,
                folder: path,
                role,
                server_id: `${validity}:${m.uid}`,
                uid: m.uid,
                flags: flagsOf(m),
                internal_date: idate,
                synced_at: syncedAt,
                trusted_authserv_ids: opts.trustedAuthservIds,
              },
            });
          }
          acc.add(batch);
        }
        acc.folderDone(
          { folder: path, role, messages: uids.length, fetched: fresh.length, reused },
          `${account.name} ${path}: ${uids.length} messages, ${fresh.length} bodies read (BODY.PEEK), ${reused} unchanged refs reused`,
        );
      } finally {
        lock.release();
      }
    }
    return acc.result();
  } catch (e) {
    const error = describeError(e);
    log(`${account.name}: sync failed, previous refs kept: ${error}`);
    return { account: account.name, ok: false, error, folders: acc.folders };
  } finally {
    if (conn) await conn.client.logout().catch(() => conn!.client.close());
  }
}

/** An error's message without anything a server echoed of our credentials. */
function describeError(e: unknown): string {
  const err = e as { message?: string; responseText?: string; authenticationFailed?: boolean; code?: string };
  if (err.authenticationFailed) return "authentication failed";
  const text = err.responseText ? `${err.message ?? "error"}: ${err.responseText}` : (err.message ?? String(e));
  return err.code ? `${text} (${err.code})` : text;
}

/**
 * The store after a round of syncs: each successful account's refs replace its old ones;
 * a failed account keeps its previous refs (reference §2.3).
 */
export function applySync(old: readonly MailRef[], results: readonly AccountSyncResult[]): MailRef[] {
  let refs = [...old];
  for (const r of results) refs = replaceAccountRefs(refs, r.account, r.ok ? r.refs : null);
  return refs;
}

/**
 * The Message-IDs in a folder (headers only, BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]): what
 * reconciliation needs without a full sync.
 */
export async function folderMessageIds(client: ImapFlow, path: string, since?: Date): Promise<Set<string>> {
  const out = new Set<string>();
  const lock = await client.getMailboxLock(path, { readOnly: true });
  try {
    const box = client.mailbox;
    if (box === false || box.exists === 0) return out;
    const range = since ? uidsOf(await client.search({ since }, { uid: true })).join(",") : "1:*";
    if (range === "") return out;
    for await (const m of client.fetch(range, { uid: true, headers: ["message-id"] }, { uid: true })) {
      const text = m.headers ? m.headers.toString("latin1").replace(/\r?\n[ \t]+/g, " ") : "";
      const value = /^message-id:\s*(.*)$/im.exec(text)?.[1] ?? null;
      for (const id of parseMessageIds(value)) out.add(id);
    }
  } finally {
    lock.release();
  }
  return out;
}

/**
 * Which of these Message-IDs are in a folder: one `UID SEARCH HEADER Message-ID` each, so
 * reconciling a few open receipts costs a few searches, not a read of the whole folder.
 */
export async function findMessageIds(client: ImapFlow, path: string, ids: Iterable<string>): Promise<Set<string>> {
  const out = new Set<string>();
  const wanted = [...new Set(ids)];
  if (wanted.length === 0) return out;
  const lock = await client.getMailboxLock(path, { readOnly: true });
  try {
    const box = client.mailbox;
    if (box === false || box.exists === 0) return out;
    for (const id of wanted) if (uidsOf(await client.search({ header: { "message-id": id } }, { uid: true })).length > 0) out.add(id);
  } finally {
    lock.release();
  }
  return out;
}
