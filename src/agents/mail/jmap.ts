/**
 * JMAP sync through undici (RFC 8620/8621; reference §2.3; docs/agents-mail.md M22).
 *
 * Read-only by construction, like IMAP: every method call is checked against an allowlist
 * (`Mailbox/get`, `Email/query`, `Email/get`, `Thread/get`) before the request is built.
 * The session is fetched from `<url>/.well-known/jmap` (up to 4 redirects, same host only),
 * and its apiUrl, downloadUrl and uploadUrl must be on the configured host, so the Basic
 * credentials never go anywhere else. Each new message is downloaded as its raw blob and
 * parsed by the same `parseMessage` as IMAP, so body hashes agree across transports.
 */
import type { ProgressSink } from "../../kb/progress.js";
import { request } from "undici";
import type { JmapAccount } from "./config.js";
import { isLoopbackHost } from "./config.js";
import type { AccountSyncResult } from "./imap.js";
import { jmapKeywordsToFlags, type FolderRole, type MailRef } from "./parse.js";
import type { Credentials, Secret } from "./secrets.js";
import { AccountCollector, type FetchedMessage } from "./sync.js";

export const JMAP_ALLOWED_METHODS: ReadonlySet<string> = new Set(["Mailbox/get", "Email/query", "Email/get", "Thread/get"]);
const CAPS = ["urn:ietf:params:jmap:core", "urn:ietf:params:jmap:mail"];
export const maxRedirects = 4;
export const queryPage = 256;
export const getChunk = 50;
/** A message blob larger than this is not downloaded (reported as a failure). */
export const maxBlobBytes = 25 * 1024 * 1024;

export class JmapRefusal extends Error {
  readonly code = "jmap-refused";
  constructor(readonly why: string) {
    super(`JMAP refused: ${why}`);
    this.name = "JmapRefusal";
  }
}

export function checkJmapMethod(name: string): string | null {
  return JMAP_ALLOWED_METHODS.has(name) ? null : `${name} is not on the read-only allowlist`;
}

export interface JmapClientOptions {
  /** The account's `url`: its origin's `/.well-known/jmap`, or a session URL with a path. */
  url: string;
  credentials: Credentials | { user: string; pass: Secret | string };
  /** Plain http is refused unless this is set and the host is loopback (tests). */
  allowHttpLoopback?: boolean;
  timeoutMs?: number;
}

export interface JmapSession {
  apiUrl: string;
  downloadUrl: string;
  accountId: string;
  /** The host every request must go to. */
  host: string;
}

type Invocation = [string, Record<string, unknown>, string];

export class JmapClient {
  readonly #auth: string;
  readonly #opts: JmapClientOptions;
  readonly #host: string;
  /** Every URL requested, in order (for tests and diagnostics; no credentials). */
  readonly requested: string[] = [];
  session: JmapSession | null = null;

  constructor(opts: JmapClientOptions) {
    this.#opts = opts;
    const pass = typeof opts.credentials.pass === "string" ? opts.credentials.pass : opts.credentials.pass.reveal();
    this.#auth = `Basic ${Buffer.from(`${opts.credentials.user}:${pass}`).toString("base64")}`;
    const u = new URL(opts.url);
    this.#checkScheme(u);
    this.#host = u.host;
  }

  #checkScheme(u: URL): void {
    if (u.protocol === "https:") return;
    if (u.protocol === "http:" && this.#opts.allowHttpLoopback && isLoopbackHost(u.hostname)) return;
    throw new JmapRefusal(`${u.protocol} is not allowed (https only; http only to loopback in tests)`);
  }

  /** Same host as the configured URL (host includes the port), and an allowed scheme. */
  #sameHost(raw: string, what: string): URL {
    let u: URL;
    try {
      u = new URL(raw.replace(/\{[a-zA-Z]+\}/g, "x"));
    } catch {
      throw new JmapRefusal(`${what} is not a URL`);
    }
    if (u.host !== this.#host) throw new JmapRefusal(`${what} is on ${u.host}, not on the configured host ${this.#host}`);
    this.#checkScheme(u);
    return u;
  }

  async #req(method: "GET" | "POST", url: string, body?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
    this.requested.push(`${method} ${url}`);
    const res = await request(url, {
      method,
      headers: { authorization: this.#auth, accept: "application/json", ...(body ? { "content-type": "application/json" } : {}) },
      body,
      headersTimeout: this.#opts.timeoutMs ?? 30_000,
      bodyTimeout: this.#opts.timeoutMs ?? 30_000,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of res.body) {
      size += (c as Buffer).length;
      if (size > maxBlobBytes) {
        res.body.destroy();
        throw new Error(`response larger than ${maxBlobBytes} bytes`);
      }
      chunks.push(c as Buffer);
    }
    return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) };
  }

  /** Fetch and check the session (RFC 8620 §2). */
  async connect(): Promise<JmapSession> {
    const start = new URL(this.#opts.url);
    let url = start.pathname === "/" || start.pathname === "" ? new URL("/.well-known/jmap", start).toString() : start.toString();
    for (let hop = 0; ; hop++) {
      this.#sameHost(url, "the session URL");
      const res = await this.#req("GET", url);
      if (res.status >= 300 && res.status < 400) {
        if (hop >= maxRedirects) throw new JmapRefusal(`more than ${maxRedirects} redirects`);
        const loc = res.headers.location;
        if (typeof loc !== "string") throw new Error(`redirect ${res.status} without Location`);
        url = new URL(loc, url).toString();
        continue;
      }
      if (res.status === 401 || res.status === 403) throw new Error("authentication failed");
      if (res.status !== 200) throw new Error(`session: HTTP ${res.status}`);
      const s = JSON.parse(res.body.toString("utf8")) as { apiUrl?: string; downloadUrl?: string; uploadUrl?: string; eventSourceUrl?: string; primaryAccounts?: Record<string, string> };
      if (typeof s.apiUrl !== "string" || typeof s.downloadUrl !== "string") throw new Error("session: no apiUrl or downloadUrl");
      const api = this.#sameHost(new URL(s.apiUrl, url).toString(), "apiUrl");
      this.#sameHost(new URL(s.downloadUrl.replace(/\{[a-zA-Z]+\}/g, "x"), url).toString(), "downloadUrl");
      if (typeof s.uploadUrl === "string") this.#sameHost(new URL(s.uploadUrl.replace(/\{[a-zA-Z]+\}/g, "x"), url).toString(), "uploadUrl");
      if (typeof s.eventSourceUrl === "string") this.#sameHost(new URL(s.eventSourceUrl.replace(/\{[a-zA-Z]+\}/g, "x"), url).toString(), "eventSourceUrl");
      const accountId = s.primaryAccounts?.["urn:ietf:params:jmap:mail"];
      if (!accountId) throw new Error("session: no primary mail account");
      const downloadUrl = new URL(s.downloadUrl.replace(/\{([a-zA-Z]+)\}/g, "%7B$1%7D"), url).toString().replace(/%7B([a-zA-Z]+)%7D/g, "{$1}");
      this.session = { apiUrl: api.toString(), downloadUrl, accountId, host: this.#host };
      return this.session;
    }
  }

  /** One API request. Every method is checked before anything is sent. */
  async call(calls: Invocation[]): Promise<Invocation[]> {
    for (const [name] of calls) {
      const why = checkJmapMethod(name);
      if (why) throw new JmapRefusal(why);
    }
    const s = this.session ?? (await this.connect());
    const res = await this.#req("POST", s.apiUrl, JSON.stringify({ using: CAPS, methodCalls: calls }));
    if (res.status === 401 || res.status === 403) throw new Error("authentication failed");
    if (res.status !== 200) throw new Error(`api: HTTP ${res.status}`);
    const out = JSON.parse(res.body.toString("utf8")) as { methodResponses?: Invocation[] };
    if (!Array.isArray(out.methodResponses)) throw new Error("api: no methodResponses");
    for (const [name, args] of out.methodResponses) if (name === "error") throw new Error(`api: ${String(args.type)}${args.description ? `: ${String(args.description)}` : ""}`);
    return out.methodResponses;
  }

  /** The raw RFC 5322 message of a blob (RFC 8620 §6.2). */
  async download(blobId: string): Promise<Buffer> {
    const s = this.session ?? (await this.connect());
    const url = s.downloadUrl
      .replace("{accountId}", encodeURIComponent(s.accountId))
      .replace("{blobId}", encodeURIComponent(blobId))
      .replace("{name}", "message.eml")
      .replace("{type}", encodeURIComponent("message/rfc822"));
    this.#sameHost(url, "the download URL");
    const res = await this.#req("GET", url);
    if (res.status !== 200) throw new Error(`download ${blobId}: HTTP ${res.status}`);
    return res.body;
  }
}

const one = <T>(responses: Invocation[], id: string): T => {
  const r = responses.find((x) => x[2] === id);
  if (!r) throw new Error(`api: no response for ${id}`);
  return r[1] as T;
};

export interface JmapSyncOptions {
  account: Pick<JmapAccount, "name" | "url">;
  credentials: Credentials | { user: string; pass: Secret | string };
  previous: readonly MailRef[];
  since: Date;
  now: () => Date;
  log: (line: string) => void;
  /** Where the sync reports how many messages it has read (none: silent). */
  progress?: ProgressSink;
  trustedAuthservIds?: string[];
  allowHttpLoopback?: boolean;
  /** For tests: inspect the client after the sync. */
  onClient?: (c: JmapClient) => void;
}

/**
 * Sync one JMAP account, read-only. Never throws: a failure is `ok: false` and the caller
 * keeps the account's previous refs (`applySync`).
 */
export async function syncJmapAccount(opts: JmapSyncOptions): Promise<AccountSyncResult> {
  const { account, log } = opts;
  const acc = new AccountCollector(account.name, opts.previous, log, opts.progress);
  try {
    const client = new JmapClient({ url: account.url, credentials: opts.credentials, allowHttpLoopback: opts.allowHttpLoopback });
    opts.onClient?.(client);
    const session = await client.connect();
    const accountId = session.accountId;
    const boxes = one<{ list: { id: string; name: string; role: string | null }[] }>(await client.call([["Mailbox/get", { accountId, ids: null, properties: ["id", "name", "role"] }, "m"]]), "m").list;
    const inbox = boxes.find((b) => b.role === "inbox") ?? null;
    const sent = boxes.find((b) => b.role === "sent") ?? null;
    if (sent === null) acc.warn(`${account.name}: no mailbox with role sent: replies will look unanswered`);
    for (const [box, role] of [
      [inbox, "inbox"],
      [sent, "sent"],
    ] as const) {
      if (box === null) continue;
      const ids: string[] = [];
      for (let position = 0; ; position += queryPage) {
        const q = one<{ ids: string[]; total?: number }>(
          await client.call([["Email/query", { accountId, filter: { inMailbox: box.id, after: opts.since.toISOString() }, sort: [{ property: "receivedAt", isAscending: true }], position, limit: queryPage }, "q"]]),
          "q",
        );
        ids.push(...q.ids);
        if (q.ids.length < queryPage) break;
      }
      const syncedAt = opts.now().toISOString();
      let fetched = 0;
      let reused = 0;
      for (let i = 0; i < ids.length; i += getChunk) {
        const got = one<{ list: { id: string; blobId: string; threadId: string; keywords: Record<string, boolean>; receivedAt: string; size?: number }[] }>(
          await client.call([["Email/get", { accountId, ids: ids.slice(i, i + getChunk), properties: ["id", "blobId", "threadId", "keywords", "receivedAt", "size"] }, "g"]]),
          "g",
        );
        const batch: FetchedMessage[] = [];
        for (const e of got.list) {
          const flags = jmapKeywordsToFlags(e.keywords ?? {});
          if (acc.reuse(box.name, e.id, flags, syncedAt)) {
            reused += 1;
            continue;
          }
          let raw: Buffer;
          try {
            if ((e.size ?? 0) > maxBlobBytes) throw new Error(`larger than ${maxBlobBytes} bytes`);
            raw = await client.download(e.blobId);
          } catch (err) {
            acc.failures.push({ account: account.name, server_id: e.id, error: (err as Error).message });
            continue;
          }
          fetched += 1;
          batch.push({
            raw,
            meta: { account: account.name, folder: box.name, role: role as FolderRole, server_id: e.id, server_thread: e.threadId, flags, internal_date: new Date(e.receivedAt).toISOString(), synced_at: syncedAt, trusted_authserv_ids: opts.trustedAuthservIds },
          });
        }
        acc.add(batch);
      }
      acc.folderDone(
        { folder: box.name, role, messages: ids.length, fetched, reused },
        `${account.name} ${box.name}: ${ids.length} messages, ${fetched} bodies read (blob download), ${reused} unchanged refs reused`,
      );
    }
    return acc.result();
  } catch (e) {
    const error = (e as Error).message;
    log(`${account.name}: sync failed, previous refs kept: ${error}`);
    return { account: account.name, ok: false, error, folders: acc.folders };
  }
}
