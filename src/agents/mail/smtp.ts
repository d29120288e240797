/**
 * SMTP submission through nodemailer with the account's own credential (ADR-0062 §5). The
 * message is handed over as raw bytes: nodemailer adds and changes nothing, so the Message-ID
 * and threading headers are exactly those the receipt and the MailRef fixed.
 */
import nodemailer from "nodemailer";
import type { SmtpConfig } from "./config.js";
import type { Credentials } from "./secrets.js";

export interface SubmitResult {
  response: string;
  accepted: string[];
  rejected: string[];
}

export interface Submitter {
  submit(msg: { from: string; to: readonly string[]; raw: string }): Promise<SubmitResult>;
  close(): void;
}

export class SmtpError extends Error {
  constructor(
    message: string,
    /** The server's reply code when there was one (5xx: refused for good; 4xx: try later). */
    readonly responseCode: number | null,
  ) {
    super(message);
    this.name = "SmtpError";
  }
}

/**
 * A submitter on one pooled connection. `none` TLS is for loopback test servers only (the
 * config refuses it elsewhere).
 *
 * @example const s = smtpSubmitter(account.smtp, creds); await s.submit({ from, to, raw })
 */
export function smtpSubmitter(smtp: SmtpConfig, creds: Credentials): Submitter {
  const transport = nodemailer.createTransport({
    host: smtp.host,
    port: smtp.port,
    secure: smtp.tls === "implicit",
    requireTLS: smtp.tls === "starttls",
    ignoreTLS: smtp.tls === "none",
    auth: { user: creds.user, pass: creds.pass.reveal() },
    pool: true,
    maxConnections: 1,
    maxMessages: Infinity,
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 60_000,
  });
  return {
    async submit({ from, to, raw }) {
      try {
        const info = await transport.sendMail({ envelope: { from, to: [...to] }, raw });
        const addr = (a: unknown) => (typeof a === "string" ? a : (a as { address: string }).address);
        return { response: String(info.response), accepted: (info.accepted ?? []).map(addr), rejected: (info.rejected ?? []).map(addr) };
      } catch (e) {
        const err = e as { message?: string; responseCode?: number };
        throw new SmtpError(err.message ?? String(e), err.responseCode ?? null);
      }
    },
    close() {
      transport.close();
    },
  };
}
