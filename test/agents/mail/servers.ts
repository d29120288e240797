/**
 * The real mail servers for the network tests: Dovecot (IMAP, LMTP), the smtp-server
 * submission path and Cyrus (JMAP), brought up before the suite by scripts/provision.sh
 * (test/global-setup.ts), which hands their addresses to the tests in KOINII_MAIL_* and
 * KOINII_CYRUS_*. A test never starts or installs them; if they are not there it fails.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import net from "node:net";
import { ImapFlow } from "imapflow";

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

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests through vitest (its global setup runs scripts/provision.sh)`);
  return v;
}

export function mailEnv(): MailEnv {
  return {
    host: need("KOINII_MAIL_HOST"),
    imapPort: Number(need("KOINII_MAIL_IMAP_PORT")),
    smtpPort: Number(need("KOINII_MAIL_SMTP_PORT")),
    lmtpPort: Number(need("KOINII_MAIL_LMTP_PORT")),
    domain: need("KOINII_MAIL_DOMAIN"),
    usersDir: need("KOINII_MAIL_USERS_DIR"),
    dovecotConf: need("KOINII_MAIL_DOVECOT_CONF"),
    cyrusImapPort: Number(need("KOINII_CYRUS_IMAP_PORT")),
    cyrusHttpPort: Number(need("KOINII_CYRUS_HTTP_PORT")),
    cyrusSasldb: need("KOINII_CYRUS_SASLDB"),
  };
}

function listening(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host });
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

/** The provisioned servers' addresses; throws (never skips) when any of them is not listening. */
export async function mailServers(): Promise<MailEnv> {
  const env = mailEnv();
  const ports = [env.imapPort, env.smtpPort, env.lmtpPort, env.cyrusImapPort, env.cyrusHttpPort];
  const up = await Promise.all(ports.map((p) => listening(p, env.host)));
  const down = ports.filter((_, i) => !up[i]);
  if (down.length > 0) throw new Error(`mail servers not listening on ${down.join(", ")}: scripts/provision.sh mail brings them up`);
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
