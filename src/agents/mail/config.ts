/**
 * The accounts config (docs/agents-mail.md M1, M2): which addresses the agent reads and
 * answers from, and the policy numbers. Credentials are never here: each account names a
 * secret file by path, and nothing in this module reads that file's contents.
 */
import { statSync } from "node:fs";
import { readFileSync } from "node:fs";
import { z } from "zod";

const accountName = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, "a short lowercase name: a-z, 0-9, _ and -");
const domain = z
  .string()
  .regex(/^[a-z0-9.-]+\.[a-z]{2,}$/i, "a domain name")
  .transform((d) => d.toLowerCase());
const secretPath = z.string().min(1).describe("path of a KEY=value file holding KANNAKA_MAIL_USER and KANNAKA_MAIL_PASS");

const common = {
  name: accountName,
  address: z.email().transform((a) => a.toLowerCase()),
  display_name: z.string().min(1).max(100).optional(),
  credentials: secretPath,
  /**
   * M15: does the server file an SMTP submission into Sent by itself? Only then may a
   * receipt that never reached Sent be re-submitted (Stalwart does not: reference §4).
   */
  submissions_filed_in_sent: z.boolean().default(true),
};

/**
 * How a connection is protected: `implicit` TLS (993, 465), `starttls`, or `none`, which is
 * accepted only for a loopback host (the test servers; docs/agents-mail.md "Network layer").
 */
const tlsMode = z.enum(["implicit", "starttls", "none"]).default("implicit");
const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);
/** A URL's `hostname` keeps an IPv6 literal's brackets; they are dropped here. */
export const isLoopbackHost = (host: string): boolean => LOOPBACK.has(host.toLowerCase().replace(/^\[(.*)\]$/, "$1"));

/** SMTP submission with the account's own credential (ADR-0062 §5); needed only to send. */
export const SmtpSchema = z.strictObject({
  host: z.string().min(1),
  port: z.number().int().min(1).max(65535).default(465),
  tls: tlsMode,
});

export const ImapAccountSchema = z.strictObject({
  ...common,
  transport: z.literal("imap"),
  host: z.string().min(1),
  port: z.number().int().min(1).max(65535).default(993),
  tls: tlsMode,
  smtp: SmtpSchema.optional(),
});

export const JmapAccountSchema = z.strictObject({
  ...common,
  transport: z.literal("jmap"),
  /** https; plain http only to a loopback host (a local Cyrus), refused elsewhere (M23). */
  url: z.url({ protocol: /^https?$/ }),
  smtp: SmtpSchema.optional(),
});

export const AccountSchema = z.discriminatedUnion("transport", [ImapAccountSchema, JmapAccountSchema]);

/** M13: the policy numbers. The reference gives no values; these are ours. */
export const PolicySchema = z.strictObject({
  max_replies_per_sender_per_day: z.number().int().min(0).max(50).default(2),
  max_replies_per_day: z.number().int().min(0).max(500).default(20),
  first_contact: z.enum(["draft", "send"]).default("draft"),
});

/** How status reads threads (M10). */
export const StatusSchema = z.strictObject({
  /** A thread the agent started waits on them this many days, then ages out to `done`. */
  started_wait_days: z.number().int().min(1).max(365).default(14),
});

/**
 * Why a config is refused, by type. `invalid` is any schema rule (type, range, format);
 * the others are the cross-field rules below.
 */
export const CONFIG_PROBLEMS = {
  invalid: "a value does not fit the schema",
  "unknown-key": "unknown key; credentials belong in the secret file",
  "duplicate-name": "two accounts share a name",
  "duplicate-address": "two accounts share an address: our own mail would be read twice and status would count it twice",
  "tls-not-loopback": "tls none is only allowed for a loopback host",
  "http-not-loopback": "plain http is only allowed for a loopback host",
} as const;
export type ConfigProblemType = keyof typeof CONFIG_PROBLEMS;

const refusal = (ctx: z.RefinementCtx, path: (string | number)[], type: ConfigProblemType, message: string) => ctx.addIssue({ code: "custom", path, message, params: { type } });

export const AccountsConfigSchema = z
  .strictObject({
    internal_domains: z.array(domain).default([]),
    policy: PolicySchema.default({ max_replies_per_sender_per_day: 2, max_replies_per_day: 20, first_contact: "draft" }),
    status: StatusSchema.default({ started_wait_days: 14 }),
    account: z.array(AccountSchema).min(1).max(32),
  })
  .superRefine((cfg, ctx) => {
    const names = new Set<string>();
    const addresses = new Map<string, string>();
    for (const [i, a] of cfg.account.entries()) {
      if (names.has(a.name)) refusal(ctx, ["account", i, "name"], "duplicate-name", `duplicate account name ${a.name}`);
      names.add(a.name);
      const other = addresses.get(a.address);
      if (other !== undefined) refusal(ctx, ["account", i, "address"], "duplicate-address", `the address of account ${a.name} is already account ${other}'s`);
      else addresses.set(a.address, a.name);
      if (a.transport === "imap" && a.tls === "none" && !isLoopbackHost(a.host)) refusal(ctx, ["account", i, "tls"], "tls-not-loopback", CONFIG_PROBLEMS["tls-not-loopback"]);
      if (a.transport === "jmap") {
        const u = new URL(a.url);
        if (u.protocol === "http:" && !isLoopbackHost(u.hostname)) refusal(ctx, ["account", i, "url"], "http-not-loopback", CONFIG_PROBLEMS["http-not-loopback"]);
      }
      if (a.smtp && a.smtp.tls === "none" && !isLoopbackHost(a.smtp.host)) refusal(ctx, ["account", i, "smtp", "tls"], "tls-not-loopback", CONFIG_PROBLEMS["tls-not-loopback"]);
    }
  });

export type ImapAccount = z.infer<typeof ImapAccountSchema>;
export type SmtpConfig = z.infer<typeof SmtpSchema>;
export type JmapAccount = z.infer<typeof JmapAccountSchema>;
export type Account = z.infer<typeof AccountSchema>;
export type MailPolicyConfig = z.infer<typeof PolicySchema>;
export type AccountsConfig = z.infer<typeof AccountsConfigSchema>;

/** One refusal: where (a dotted path), its type, and a message that never holds the value. */
export interface ConfigProblem {
  path: string;
  type: ConfigProblemType;
  message: string;
}

/** `problems` are the `issues` as lines (`path: message`), for printing. */
export type ConfigResult = { ok: true; config: AccountsConfig } | { ok: false; issues: ConfigProblem[]; problems: string[] };

/**
 * Validate an already-parsed config object. Unknown keys are refused (a `password` key is
 * refused like any other: credentials live in the secret file). Problems name the path and
 * the rule, never the offending value, so a pasted secret is not echoed back.
 *
 * @example parseAccountsConfig({ account: [{ name: "np", address: "k@ninja-portal.com",
 *   transport: "jmap", url: "https://mail.ninja-portal.com", credentials: "/etc/kannaka/np.env" }] })
 */
export function parseAccountsConfig(value: unknown): ConfigResult {
  const r = AccountsConfigSchema.safeParse(value);
  if (r.success) return { ok: true, config: r.data };
  const issues: ConfigProblem[] = r.error.issues.map((i) => {
    const path = i.path.join(".") || "(top)";
    if (i.code === "unrecognized_keys") return { path, type: "unknown-key", message: `${CONFIG_PROBLEMS["unknown-key"]} (${i.keys.join(", ")})` };
    const type = i.code === "custom" ? ((i as { params?: { type?: ConfigProblemType } }).params?.type ?? "invalid") : "invalid";
    return { path, type, message: i.message };
  });
  return { ok: false, issues, problems: issues.map((i) => `${i.path}: ${i.message}`) };
}

/** Read `accounts.json` (M1: JSON, not the original's TOML, to need no parser dependency). */
export function loadAccountsConfig(path: string): ConfigResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    const message = (e as NodeJS.ErrnoException).code ?? "not valid JSON";
    return { ok: false, issues: [{ path, type: "invalid", message }], problems: [`${path}: ${message}`] };
  }
  return parseAccountsConfig(parsed);
}

export interface CredentialsStatus {
  account: string;
  address: string;
  transport: "imap" | "jmap";
  endpoint: string;
  credentials_path: string;
  credentials_present: boolean;
  /** Group- or world-readable beyond 0640 (M2); null when the file is absent. */
  too_open: boolean | null;
}

/** What `stat` tells us; injectable so tests need no real files. */
export type StatFn = (path: string) => { isFile(): boolean; mode: number } | null;

const realStat: StatFn = (path) => {
  try {
    return statSync(path);
  } catch {
    return null;
  }
};

/**
 * Per account: is its secret file there, and is it private enough? Only `stat` is called;
 * the file is never opened, so its contents cannot reach any output.
 *
 * @example credentialsReport(config).filter((s) => !s.credentials_present)
 */
export function credentialsReport(config: AccountsConfig, stat: StatFn = realStat): CredentialsStatus[] {
  return config.account.map((a) => {
    const st = stat(a.credentials);
    const present = st !== null && st.isFile();
    return {
      account: a.name,
      address: a.address,
      transport: a.transport,
      endpoint: a.transport === "imap" ? `${a.host}:${a.port}` : a.url,
      credentials_path: a.credentials,
      credentials_present: present,
      // 0600 and 0640 pass; group write or any world bit fails.
      too_open: present ? (st.mode & 0o027) !== 0 : null,
    };
  });
}

/** One `accounts` line: address, transport, endpoint, secret path with `(MISSING)`. */
export function formatCredentialsLine(s: CredentialsStatus): string {
  const mark = !s.credentials_present ? " (MISSING)" : s.too_open ? " (TOO OPEN)" : "";
  return `${s.account}  ${s.address}  ${s.transport}  ${s.endpoint}  ${s.credentials_path}${mark}`;
}

/** What the classification and policy need to know about "us" (reference §2.3). */
export interface MailContext {
  /** Every account address, lowercased. */
  selfAddresses: ReadonlySet<string>;
  internalDomains: ReadonlySet<string>;
  /** Configured display name per account name. */
  displayNames: ReadonlyMap<string, string | undefined>;
}

export function mailContext(config: AccountsConfig): MailContext {
  return {
    selfAddresses: new Set(config.account.map((a) => a.address)),
    internalDomains: new Set(config.internal_domains),
    displayNames: new Map(config.account.map((a) => [a.name, a.display_name])),
  };
}
