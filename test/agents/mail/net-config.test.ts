/** The network layer's config and secrets (no servers needed). */
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { parseAccountsConfig } from "../../../src/agents/mail/index.js";
import { parseCredentials } from "../../../src/agents/mail/net.js";

const base = { name: "z", address: "k@x.org", transport: "imap", credentials: "/etc/k.env" };

describe("transport settings in accounts.json", () => {
  it("defaults to implicit TLS on 993; an smtp block defaults to 465 implicit TLS", () => {
    const r = parseAccountsConfig({ account: [{ ...base, host: "imap.x.org", smtp: { host: "smtp.x.org" } }] });
    expect(r.ok && r.config.account[0]).toMatchObject({ port: 993, tls: "implicit", smtp: { port: 465, tls: "implicit" } });
  });
  it("refuses tls none except to a loopback host", () => {
    expect(parseAccountsConfig({ account: [{ ...base, host: "imap.x.org", tls: "none" }] })).toMatchObject({ ok: false, problems: ["account.0.tls: tls none is only allowed for a loopback host"] });
    expect(parseAccountsConfig({ account: [{ ...base, host: "127.0.0.1", tls: "none", smtp: { host: "smtp.x.org", tls: "none" } }] })).toMatchObject({ ok: false, problems: ["account.0.smtp.tls: tls none is only allowed for a loopback host"] });
    expect(parseAccountsConfig({ account: [{ ...base, host: "127.0.0.1", tls: "none", smtp: { host: "localhost", tls: "none" } }] }).ok).toBe(true);
  });
});

describe("the secret file", () => {
  it("reads KANNAKA_MAIL_USER and KANNAKA_MAIL_PASS (export, quotes, comments)", () => {
    const c = parseCredentials("# mail\nexport KANNAKA_MAIL_USER=k@x.org\nKANNAKA_MAIL_PASS='s3 cret#1'\n");
    expect(c.user).toBe("k@x.org");
    expect(c.pass.reveal()).toBe("s3 cret#1");
  });
  it("never shows the password: String, JSON, inspect", () => {
    const c = parseCredentials("KANNAKA_MAIL_USER=k\nKANNAKA_MAIL_PASS=hunter2\n");
    expect(`${c.pass}`).toBe("[secret]");
    expect(JSON.stringify(c)).not.toContain("hunter2");
    expect(inspect(c)).not.toContain("hunter2");
  });
  it("names a missing key without echoing anything", () => {
    expect(() => parseCredentials("KANNAKA_MAIL_USER=k\n")).toThrow("credentials: KANNAKA_MAIL_PASS is missing");
  });
});
