/**
 * The thread situations of state-cases.ts (one row per rule of the reference's state
 * machine plus our P1/P2 rows), each built as a real mailbox in Dovecot: the messages are
 * APPENDed raw to INBOX or Sent, flags set by the administrator (\Answered with a STORE
 * after delivery, as a mail client would), then synced through the guarded client. The
 * state from the synced refs must be the row's, and equal to state.ts over the same
 * messages parsed locally.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { syncImapAccount } from "../../../src/agents/mail/imap.js";
import { STATE_RULES, groupThreads, parseAccountsConfig, threadStatus, type ImapAccount } from "../../../src/agents/mail/index.js";
import { Secret } from "../../../src/agents/mail/secrets.js";
import { CTX, OURS, rawOf } from "./fixtures.js";
import { CASES, NOW, inputOf, oneThread, promisedOf } from "./state-cases.js";
import { adminImap, mailServers, freshUser, serverFlags, type MailEnv } from "./servers.js";

let env: MailEnv;
beforeAll(async () => {
  env = await mailServers();
}, 120_000);

describe("thread situations as real Dovecot mailboxes", () => {
  it("the table covers every rule", () => {
    const used = new Set(CASES.map((c) => c.rule));
    expect(STATE_RULES.map((r) => r.id).filter((id) => !used.has(id))).toEqual([]);
  });

  it.each(CASES.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const u = freshUser(env, "thr");
    const admin = await adminImap(env, u);
    for (const spec of c.msgs) {
      const folder = spec.role === "sent" ? "Sent" : "INBOX";
      const flags = spec.flags ?? [];
      const res = await admin.append(folder, rawOf(spec), flags.filter((f) => f !== "\\Answered"));
      if (flags.includes("\\Answered")) {
        if (!res || !res.uid) throw new Error("APPEND returned no UID");
        const lock = await admin.getMailboxLock(folder);
        try {
          await admin.messageFlagsAdd(String(res.uid), ["\\Answered"], { uid: true });
        } finally {
          lock.release();
        }
      }
    }
    await admin.logout();
    const cfg = parseAccountsConfig({ account: [{ name: "zoho", address: OURS, display_name: "Kannaka", transport: "imap", host: env.host, port: env.imapPort, tls: "none", credentials: "/nonexistent" }] });
    if (!cfg.ok) throw new Error(cfg.problems.join("; "));
    const r = await syncImapAccount({ account: cfg.config.account[0] as ImapAccount, credentials: { user: u.user, pass: new Secret(u.pass) }, previous: [], since: new Date("2026-01-01"), now: () => new Date(NOW), log: () => {} });
    if (!r.ok) throw new Error(r.error);
    expect(r.refs).toHaveLength(c.msgs.length);
    const threads = groupThreads(r.refs);
    expect(threads).toHaveLength(1);
    const thread = threads[0];
    const s = threadStatus(inputOf(c, thread));
    expect([s.state, s.rule]).toEqual([c.state, c.rule]);
    if (c.reason) expect(s.reason).toMatch(c.reason);
    expect(promisedOf(s)).toEqual(c.promised ?? []);
    const local = oneThread(c.msgs);
    const pure = threadStatus(inputOf(c, local));
    expect({ ...s, focus: null }).toEqual({ ...pure, focus: null }); // focus anchors differ only by server uid
    // Sync read nothing as seen.
    for (const folder of new Set(c.msgs.map((m) => (m.role === "sent" ? "Sent" : "INBOX"))))
      for (const [id, flags] of serverFlags(env, u.user, folder)) {
        const spec = c.msgs.find((m) => `<${m.id}@test>` === id);
        expect(flags.includes("\\Seen")).toBe((spec?.flags ?? []).includes("\\Seen"));
      }
  });
});
