/** Builders for tests: raw RFC 5322 text in, parsed refs out. */
import { mailContext, parseAccountsConfig, parseMessage, type AccountsConfig, type FetchMeta, type ParsedMail } from "../../../src/agents/mail/index.js";

export const OURS = "kannaka@spacechild.love";

/** Headers in order; `undefined` values are left out. Lines joined with CRLF. */
export function rawMail(headers: Record<string, string | undefined>, body = ""): string {
  const lines = Object.entries(headers)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}: ${v}`);
  return `${lines.join("\r\n")}\r\n\r\n${body.replace(/\r?\n/g, "\r\n")}`;
}

let uid = 0;
export function meta(over: Partial<FetchMeta> = {}): FetchMeta {
  uid += 1;
  const role = over.role ?? "inbox";
  return {
    account: "zoho",
    folder: role === "sent" ? "Sent" : "INBOX",
    role,
    server_id: `7:${over.uid ?? uid}`,
    uid: over.uid ?? uid,
    flags: [],
    synced_at: "2026-09-25T12:00:00Z",
    ...over,
  };
}

export const PASS = "mx.zoho.com; dkim=pass header.d=example.org; spf=pass smtp.mailfrom=x@example.org; dmarc=pass header.from=example.org";

export interface MsgSpec {
  id: string;
  from?: string;
  to?: string;
  cc?: string;
  date?: string;
  subject?: string;
  inReplyTo?: string;
  references?: string;
  body?: string;
  role?: "inbox" | "sent";
  flags?: string[];
  extra?: Record<string, string>;
  account?: string;
}

/** One message of a test thread. Theirs by default; `role: "sent"` makes it ours. */
export function msg(s: MsgSpec): ParsedMail {
  return parseMessage(rawOf(s), meta({ role: s.role ?? "inbox", flags: s.flags ?? [], account: s.account ?? "zoho" }));
}

/** The raw RFC 5322 text `msg` parses (threads.test.ts APPENDs it to a real mailbox). */
export function rawOf(s: MsgSpec): string {
  const sent = s.role === "sent";
  return rawMail(
    {
      From: s.from ?? (sent ? `Kannaka <${OURS}>` : "Vincent Ray <vincent@example.org>"),
      To: s.to ?? (sent ? "Vincent Ray <vincent@example.org>" : `Kannaka <${OURS}>`),
      Cc: s.cc,
      Subject: s.subject ?? "plan",
      Date: s.date ?? "Wed, 23 Sep 2026 10:00:00 +0000",
      "Message-ID": `<${s.id}@test>`,
      "In-Reply-To": s.inReplyTo ? `<${s.inReplyTo}@test>` : undefined,
      References: s.references
        ? s.references
            .split(" ")
            .map((r) => `<${r}@test>`)
            .join(" ")
        : undefined,
      "Authentication-Results": sent ? undefined : PASS,
      ...s.extra,
    },
    s.body ?? "Hello.",
  );
}

export const CONFIG: AccountsConfig = (() => {
  const r = parseAccountsConfig({
    internal_domains: ["ninja-portal.com"],
    account: [
      { name: "zoho", address: OURS, display_name: "Kannaka", transport: "imap", host: "imap.zoho.com", credentials: "/etc/kannaka/zoho.env" },
      { name: "np", address: "kannaka@ninja-portal.com", transport: "jmap", url: "https://mail.ninja-portal.com", credentials: "/etc/kannaka/np.env", submissions_filed_in_sent: false },
    ],
  });
  if (!r.ok) throw new Error(r.problems.join("; "));
  return r.config;
})();

export const CTX = mailContext(CONFIG);
