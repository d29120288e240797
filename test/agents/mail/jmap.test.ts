/**
 * The JMAP client against a local node:http server speaking the methods it uses (Session,
 * Mailbox/get, Email/query, Email/get, blob download). Cyrus's JMAP is not run here (see
 * docs/agents-mail.md "JMAP status").
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { applySync } from "../../../src/agents/mail/imap.js";
import { JmapClient, JmapRefusal, checkJmapMethod, syncJmapAccount } from "../../../src/agents/mail/jmap.js";
import { rawMail } from "./fixtures.js";

interface Email {
  id: string;
  blobId: string;
  threadId: string;
  mailboxIds: Record<string, boolean>;
  keywords: Record<string, boolean>;
  receivedAt: string;
  raw: string;
}

interface FakeOptions {
  user?: string;
  pass?: string;
  emails: Email[];
  /** Rewrites the session before it is served. */
  session?: (s: Record<string, unknown>, base: string) => Record<string, unknown>;
  /** Redirect /.well-known/jmap here. */
  redirectTo?: (base: string) => string;
}

interface Fake {
  base: string;
  server: Server;
  log: string[];
  methods: string[];
}

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function fakeJmap(o: FakeOptions): Promise<Fake> {
  const log: string[] = [];
  const methods: string[] = [];
  const user = o.user ?? "k@np.test";
  const pass = o.pass ?? "pw";
  let base = "";
  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(typeof body === "string" ? body : JSON.stringify(body));
  };
  const read = (req: IncomingMessage) => new Promise<string>((r) => {
    let b = "";
    req.on("data", (c) => (b += c));
    req.on("end", () => r(b));
  });
  const server = createServer(async (req, res) => {
    log.push(`${req.method} ${req.url}`);
    if (req.headers.authorization !== `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`) return send(res, 401, { type: "about:blank", status: 401 });
    const url = new URL(req.url ?? "/", base);
    if (url.pathname === "/.well-known/jmap") {
      if (o.redirectTo) return send(res, 307, "", { location: o.redirectTo(base) });
      return send(res, 301, "", { location: "/jmap/session" });
    }
    if (url.pathname === "/jmap/session") {
      const s = {
        capabilities: { "urn:ietf:params:jmap:core": {}, "urn:ietf:params:jmap:mail": {} },
        accounts: { A1: { name: user, isPersonal: true, isReadOnly: false } },
        primaryAccounts: { "urn:ietf:params:jmap:mail": "A1" },
        username: user,
        apiUrl: `${base}/jmap/api`,
        downloadUrl: `${base}/jmap/download/{accountId}/{blobId}/{name}?type={type}`,
        uploadUrl: `${base}/jmap/upload/{accountId}/`,
        state: "s1",
      };
      return send(res, 200, o.session ? o.session(s, base) : s);
    }
    if (url.pathname === "/jmap/api" && req.method === "POST") {
      const body = JSON.parse(await read(req)) as { methodCalls: [string, Record<string, unknown>, string][] };
      const out = body.methodCalls.map(([name, args, id]) => {
        methods.push(name);
        if (name === "Mailbox/get") return [name, { accountId: "A1", state: "1", list: [{ id: "mb-in", name: "Inbox", role: "inbox" }, { id: "mb-sent", name: "Sent Items", role: "sent" }], notFound: [] }, id];
        if (name === "Email/query") {
          const f = args.filter as { inMailbox: string; after: string };
          const all = o.emails.filter((e) => e.mailboxIds[f.inMailbox] && e.receivedAt >= f.after).sort((a, b) => a.receivedAt.localeCompare(b.receivedAt));
          const pos = (args.position as number) ?? 0;
          return [name, { accountId: "A1", ids: all.slice(pos, pos + ((args.limit as number) ?? 256)).map((e) => e.id), position: pos, total: all.length }, id];
        }
        if (name === "Email/get") {
          const list = (args.ids as string[]).map((i) => o.emails.find((e) => e.id === i)!).map(({ raw: _raw, ...e }) => ({ ...e, size: _raw.length }));
          return [name, { accountId: "A1", state: "1", list, notFound: [] }, id];
        }
        return ["error", { type: "unknownMethod" }, id];
      });
      return send(res, 200, { methodResponses: out, sessionState: "s1" });
    }
    const dl = /^\/jmap\/download\/A1\/([^/]+)\//.exec(url.pathname);
    if (dl && req.method === "GET") {
      const e = o.emails.find((x) => x.blobId === decodeURIComponent(dl[1]));
      if (!e) return send(res, 404, {});
      res.writeHead(200, { "content-type": "message/rfc822" });
      return res.end(e.raw);
    }
    send(res, 404, {});
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(server);
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, server, log, methods };
}

function email(n: number, box: "mb-in" | "mb-sent", over: Partial<Email> = {}, headers: Record<string, string> = {}): Email {
  return {
    id: `M${n}`,
    blobId: `B${n}`,
    threadId: `T${Math.floor(n / 2)}`,
    mailboxIds: { [box]: true },
    keywords: {},
    receivedAt: new Date(Date.UTC(2026, 8, 20, 10, n)).toISOString(),
    raw: rawMail({ From: box === "mb-in" ? "Vincent <vincent@example.org>" : "k@np.test", To: "k@np.test", Subject: `m${n}`, Date: "Wed, 23 Sep 2026 10:00:00 +0000", "Message-ID": `<m${n}@test>`, ...headers }, `Body ${n}: can you check?`),
    ...over,
  };
}

const creds = (pass = "pw") => ({ user: "k@np.test", pass });
const SINCE = new Date("2026-09-01T00:00:00Z");
const run = (fake: Fake, extra: Partial<Parameters<typeof syncJmapAccount>[0]> = {}) => {
  const lines: string[] = [];
  let client: JmapClient | null = null;
  const p = syncJmapAccount({ account: { name: "np", url: fake.base }, credentials: creds(), previous: [], since: SINCE, now: () => new Date("2026-09-25T12:00:00Z"), log: (l) => lines.push(l), allowHttpLoopback: true, onClient: (c) => (client = c), ...extra });
  return p.then((r) => ({ r, lines, client: client as JmapClient | null }));
};

describe("JMAP sync against a local JMAP server", () => {
  it("follows a same-host redirect to the session, reads INBOX and Sent by role, maps keywords, parses the raw blob", async () => {
    const fake = await fakeJmap({
      emails: [
        email(1, "mb-in", { keywords: { $seen: true, $answered: true } }),
        email(2, "mb-in", {}, { Date: "not a date" }),
        email(3, "mb-sent", {}, { "In-Reply-To": "<m1@test>" }),
      ],
    });
    const { r, lines } = await run(fake);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const by = new Map(r.refs.map((x) => [x.message_id, x]));
    expect(by.get("<m1@test>")).toMatchObject({ role: "inbox", folder: "Inbox", server_id: "M1", server_thread: "T0", flags: ["\\Seen", "\\Answered"], uid: null });
    expect(by.get("<m2@test>")!.date).toBe(new Date(Date.UTC(2026, 8, 20, 10, 2)).toISOString()); // bad Date -> receivedAt
    expect(by.get("<m3@test>")).toMatchObject({ role: "sent", folder: "Sent Items", in_reply_to: ["<m1@test>"] });
    expect([...r.sentMessageIds]).toEqual(["<m3@test>"]);
    expect(lines).toEqual(["np Inbox: 2 messages, 2 bodies read (blob download), 0 unchanged refs reused", "np Sent Items: 1 messages, 1 bodies read (blob download), 0 unchanged refs reused"]);
    expect(fake.methods.every((m) => ["Mailbox/get", "Email/query", "Email/get"].includes(m))).toBe(true);
    expect(fake.log[0]).toBe("GET /.well-known/jmap");
    expect(fake.log[1]).toBe("GET /jmap/session");
    // Second sync: known messages are not downloaded again; keywords are refreshed.
    fake.log.length = 0;
    const again = await run(fake, { previous: r.refs });
    expect(again.r.ok && again.r.folders.map((f) => [f.fetched, f.reused])).toEqual([[0, 2], [0, 1]]);
    expect(fake.log.filter((l) => l.includes("/download/"))).toEqual([]);
  });

  it("pages Email/query by 256 and Email/get by 50", async () => {
    const fake = await fakeJmap({ emails: Array.from({ length: 300 }, (_, i) => email(i + 1, "mb-in")) });
    const { r } = await run(fake);
    expect(r.ok && r.refs.length).toBe(300);
    expect(fake.methods.filter((m) => m === "Email/query")).toHaveLength(3); // inbox 2 pages + sent 1
    expect(fake.methods.filter((m) => m === "Email/get")).toHaveLength(6);
  });

  it("refuses a method off the allowlist before any request is made", async () => {
    for (const m of ["Email/set", "EmailSubmission/set", "Mailbox/set", "Email/import", "Email/copy", "Identity/set", "x:Bootstrap/set"]) expect(checkJmapMethod(m)).not.toBeNull();
    const fake = await fakeJmap({ emails: [email(1, "mb-in")] });
    const client = new JmapClient({ url: fake.base, credentials: creds(), allowHttpLoopback: true });
    await client.connect();
    const before = fake.log.length;
    await expect(client.call([["Email/get", { accountId: "A1", ids: [] }, "a"], ["Email/set", { accountId: "A1", update: { M1: { "keywords/$seen": true } } }, "b"]])).rejects.toBeInstanceOf(JmapRefusal);
    expect(fake.log.length).toBe(before);
    expect(fake.methods).toEqual([]);
  });

  it("refuses a session whose apiUrl or downloadUrl is on another host, and sends nothing there", async () => {
    const other = await fakeJmap({ emails: [] });
    for (const key of ["apiUrl", "downloadUrl", "uploadUrl"] as const) {
      const fake = await fakeJmap({ emails: [email(1, "mb-in")], session: (s) => ({ ...s, [key]: `${other.base}/jmap/${key === "apiUrl" ? "api" : "download/{accountId}/{blobId}/{name}"}` }) });
      const { r } = await run(fake);
      expect(r).toMatchObject({ ok: false, error: expect.stringMatching(new RegExp(`${key} is on 127\\.0\\.0\\.1:\\d+, not on the configured host`)) });
    }
    const sameIpOtherName = await fakeJmap({ emails: [], session: (s, base) => ({ ...s, apiUrl: `${base.replace("127.0.0.1", "localhost")}/jmap/api` }) });
    expect((await run(sameIpOtherName)).r).toMatchObject({ ok: false, error: expect.stringMatching(/apiUrl is on localhost/) });
    expect(other.log).toEqual([]);
  });

  it("refuses a redirect to another host, and more than 4 redirects", async () => {
    const other = await fakeJmap({ emails: [] });
    const fake = await fakeJmap({ emails: [], redirectTo: () => `${other.base}/jmap/session` });
    expect((await run(fake)).r).toMatchObject({ ok: false, error: expect.stringMatching(/the session URL is on/) });
    expect(other.log).toEqual([]);
    const loop = await fakeJmap({ emails: [], redirectTo: (b) => `${b}/.well-known/jmap` });
    expect((await run(loop)).r).toMatchObject({ ok: false, error: expect.stringMatching(/more than 4 redirects/) });
  });

  it("refuses plain http except to loopback with the test flag", () => {
    expect(() => new JmapClient({ url: "http://mail.example.org", credentials: creds(), allowHttpLoopback: true })).toThrow(JmapRefusal);
    expect(() => new JmapClient({ url: "http://127.0.0.1:1", credentials: creds() })).toThrow(JmapRefusal);
  });

  it("a failed account (wrong password) keeps its previous refs", async () => {
    const fake = await fakeJmap({ emails: [email(1, "mb-in")] });
    const { r } = await run(fake);
    const store = applySync([], [r]);
    expect(store).toHaveLength(1);
    const bad = await run(fake, { credentials: creds("wrong"), previous: store });
    expect(bad.r).toMatchObject({ ok: false, error: "authentication failed" });
    expect(applySync(store, [bad.r])).toEqual(store);
    expect(bad.lines.join("\n")).not.toContain("wrong");
  });
});
