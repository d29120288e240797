/**
 * The real mail servers for the network tests: Dovecot (IMAP, LMTP) and the smtp-server
 * submission path, started by .ci/services/mail.sh. `ensureMailServers` starts them when
 * they are not listening; if that fails the suite fails (it never skips).
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import net from "node:net";
import { ImapFlow } from "imapflow";

const ROOT = new URL("../../../", import.meta.url).pathname;

export interface MailEnv {
  host: string;
  imapPort: number;
  smtpPort: number;
  lmtpPort: number;
  domain: string;
  usersDir: string;
  dovecotConf: string;
  cyrusImapPort: number;
  cyrusHttpPort: number;
  cyrusSasldb: string;
}

function readEnvFile(): Record<string, string> {
  const p = `${ROOT}.ci/services/mail.env`;
  if (!existsSync(p)) return {};
  return Object.fromEntries(
    readFileSync(p, "utf8")
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
}

export function mailEnv(): MailEnv {
  const f = { ...readEnvFile(), ...process.env };
  return {
    host: f.KOINII_MAIL_HOST ?? "127.0.0.1",
    imapPort: Number(f.KOINII_MAIL_IMAP_PORT ?? 10143),
    smtpPort: Number(f.KOINII_MAIL_SMTP_PORT ?? 10587),
    lmtpPort: Number(f.KOINII_MAIL_LMTP_PORT ?? 10024),
    domain: f.KOINII_MAIL_DOMAIN ?? "koinii.test",
    usersDir: f.KOINII_MAIL_USERS_DIR ?? "/var/lib/koinii-mail/users.d",
    dovecotConf: f.KOINII_MAIL_DOVECOT_CONF ?? "/var/lib/koinii-mail/dovecot.conf",
    cyrusImapPort: Number(f.KOINII_CYRUS_IMAP_PORT ?? 11143),
    cyrusHttpPort: Number(f.KOINII_CYRUS_HTTP_PORT ?? 11080),
    cyrusSasldb: f.KOINII_CYRUS_SASLDB ?? "/var/lib/koinii-cyrus/sasldb2",
  };
}

function listening(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host });
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

/** Start the servers through mail.sh unless all three ports answer. Throws if they cannot be started. */
export async function ensureMailServers(): Promise<MailEnv> {
  let env = mailEnv();
  const up = async () => (await Promise.all([env.imapPort, env.smtpPort, env.lmtpPort, env.cyrusImapPort, env.cyrusHttpPort].map((p) => listening(p, env.host)))).every(Boolean);
  if (!(await up()) || !existsSync(env.dovecotConf)) {
    const out = execFileSync("bash", [`${ROOT}.ci/services/mail.sh`], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    process.stdout.write(out);
    env = mailEnv();
    if (!(await up())) throw new Error("mail servers are not listening after .ci/services/mail.sh");
  }
  return env;
}

export interface TestUser {
  user: string;
  pass: string;
}

/** A new mailbox user (a new passwd-file in users.d, read by Dovecot on first lookup), so every test starts empty. */
export function freshUser(env: MailEnv, prefix = "u"): TestUser {
  const user = `${prefix}-${randomBytes(5).toString("hex")}@${env.domain}`;
  const pass = randomBytes(9).toString("base64url");
  writeFileSync(`${env.usersDir}/${user}`, `${user}:{PLAIN}${pass}\n`);
  return { user, pass };
}

/** A new Cyrus user (sasldb); Cyrus creates its INBOX and Sent on first login. */
export function freshCyrusUser(env: MailEnv, prefix = "c"): TestUser {
  const user = `${prefix}${randomBytes(5).toString("hex")}`;
  const pass = randomBytes(9).toString("base64url");
  execFileSync("saslpasswd2", ["-f", env.cyrusSasldb, "-p", "-c", user], { input: pass });
  return { user, pass };
}

/** An unguarded client: the administrator's hand that builds mailboxes (APPEND, STORE). */
export async function adminImap(env: MailEnv, u: TestUser, port = env.imapPort): Promise<ImapFlow> {
  const c = new ImapFlow({ host: env.host, port, secure: false, doSTARTTLS: false, auth: { user: u.user, pass: u.pass }, logger: false, disableAutoIdle: true });
  c.on("error", () => {});
  await c.connect();
  return c;
}

/** doveadm against the test instance: reads the maildir directly, not through IMAP. */
export function doveadm(env: MailEnv, args: string[]): string {
  return execFileSync("doveadm", ["-c", env.dovecotConf, ...args], { encoding: "utf8" });
}

/** Flags of every message in a folder, by Message-ID, as doveadm sees them on disk. */
export function serverFlags(env: MailEnv, user: string, mailbox: string): Map<string, string[]> {
  const out = doveadm(env, ["-f", "tab", "fetch", "-u", user, "hdr.message-id flags", "mailbox", mailbox, "all"]);
  const rows = out.trim().split("\n").slice(1).filter(Boolean);
  return new Map(rows.map((r) => {
    const [id, flags] = r.split("\t");
    return [id.trim(), (flags ?? "").split(" ").filter((f) => f && f !== "\\Recent")];
  }));
}

/** Message-IDs in a folder with their counts (doveadm, on disk). */
export function messageIdCounts(env: MailEnv, user: string, mailbox: string): Map<string, number> {
  const out = doveadm(env, ["-f", "tab", "fetch", "-u", user, "hdr.message-id", "mailbox", mailbox, "all"]);
  const counts = new Map<string, number>();
  for (const r of out.trim().split("\n").slice(1)) if (r.trim()) counts.set(r.trim(), (counts.get(r.trim()) ?? 0) + 1);
  return counts;
}

/**
 * A TCP proxy that records every byte the client sends: proof of what reached the server.
 */
export async function recordingProxy(targetPort: number, host = "127.0.0.1"): Promise<{ port: number; clientBytes: () => string; close: () => Promise<void> }> {
  const chunks: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((c) => {
    const up = net.connect({ port: targetPort, host });
    sockets.add(c).add(up);
    c.on("data", (d) => {
      chunks.push(d);
      up.write(d);
    });
    up.on("data", (d) => c.write(d));
    const end = () => (c.destroy(), up.destroy());
    c.on("close", end).on("error", end);
    up.on("close", end).on("error", end);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as net.AddressInfo).port,
    clientBytes: () => Buffer.concat(chunks).toString("latin1"),
    close: () => new Promise((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}
