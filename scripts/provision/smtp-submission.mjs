// A small SMTP submission server for the mail agent's tests (started by mail.sh).
// AUTH PLAIN/LOGIN against Dovecot's passwd-files (users.d/<user>); each message is handed to Dovecot's LMTP
// in one transaction, to every envelope recipient and (unless the sender's local part
// starts with "nosent") to sender+Sent@domain, which Dovecot files into the sender's Sent
// folder (lmtp_save_to_detail_mailbox). The 250 reply comes only after LMTP accepted all
// of them, so "250 received" means "delivered and filed". A message whose client went
// away before the final dot is dropped, never delivered in part.
import { readFileSync } from "node:fs";
import { SMTPServer } from "smtp-server";
import nodemailer from "nodemailer";

const usersDir = process.env.KOINII_MAIL_USERS_DIR ?? "/var/lib/koinii-mail/users.d";
const port = Number(process.env.KOINII_MAIL_SMTP_PORT ?? 10587);
const lmtpPort = Number(process.env.KOINII_MAIL_LMTP_PORT ?? 10024);

function passwordOf(user) {
  if (!/^[A-Za-z0-9._+-]+@[A-Za-z0-9.-]+$/.test(user)) return null;
  let text;
  try {
    text = readFileSync(`${usersDir}/${user}`, "utf8");
  } catch {
    return null;
  }
  for (const line of text.split("\n")) {
    const [name, pass] = line.split(":");
    if (name === user && pass !== undefined) return pass.replace(/^\{PLAIN\}/, "");
  }
  return null;
}

const lmtp = nodemailer.createTransport({ host: "127.0.0.1", port: lmtpPort, lmtp: true, pool: true, maxConnections: 8, maxMessages: Infinity });

const server = new SMTPServer({
  name: "submission.koinii.test",
  authMethods: ["PLAIN", "LOGIN"],
  allowInsecureAuth: true,
  disabledCommands: ["STARTTLS"],
  size: 10 * 1024 * 1024,
  maxClients: 200,
  logger: false,
  onAuth(auth, _session, cb) {
    const pass = passwordOf(auth.username);
    if (pass === null || pass !== auth.password) return cb(new Error("Invalid username or password"));
    cb(null, { user: auth.username });
  },
  onMailFrom(address, session, cb) {
    // Submission: the envelope sender must be the authenticated user.
    if (address.address.toLowerCase() !== String(session.user).toLowerCase()) return cb(Object.assign(new Error("Sender address rejected: not owned by user"), { responseCode: 553 }));
    cb();
  },
  onData(stream, session, cb) {
    const chunks = [];
    let failed = false;
    stream.on("data", (c) => chunks.push(c));
    stream.on("error", () => {
      failed = true; // client went away mid-message: deliver nothing
    });
    stream.on("end", async () => {
      if (failed) return;
      if (stream.sizeExceeded) return cb(Object.assign(new Error("Message too big"), { responseCode: 552 }));
      const sender = session.envelope.mailFrom.address;
      const [local, domain] = sender.split("@");
      const to = session.envelope.rcptTo.map((r) => r.address);
      if (!local.toLowerCase().startsWith("nosent")) to.push(`${local}+Sent@${domain}`);
      try {
        const info = await lmtp.sendMail({ envelope: { from: sender, to }, raw: Buffer.concat(chunks) });
        if (info.rejected.length > 0) throw new Error(`LMTP rejected ${info.rejected.join(", ")}`);
        cb(null, "Delivered");
      } catch (e) {
        cb(Object.assign(new Error(`Delivery failed: ${e.message}`), { responseCode: 451 }));
      }
    });
  },
});
server.on("error", (e) => console.error("smtp-submission:", e.message));
server.listen(port, "127.0.0.1", () => console.log(`smtp-submission listening on 127.0.0.1:${port}, LMTP 127.0.0.1:${lmtpPort}`));
