import { describe, expect, it } from "vitest";
import { credentialsReport, formatCredentialsLine, mailContext, parseAccountsConfig, type StatFn } from "../../../src/agents/mail/index.js";
import { CONFIG } from "./fixtures.js";

const imap = { name: "zoho", address: "Kannaka@SpaceChild.love", transport: "imap", host: "imap.zoho.com", credentials: "/etc/kannaka/zoho.env" };

describe("accounts config", () => {
  it("fills defaults and lowercases addresses", () => {
    const r = parseAccountsConfig({ account: [imap] });
    expect(r).toMatchObject({ ok: true, config: { internal_domains: [], policy: { max_replies_per_sender_per_day: 2, max_replies_per_day: 20, first_contact: "draft" }, account: [{ address: "kannaka@spacechild.love", port: 993, submissions_filed_in_sent: true }] } });
  });

  it.each([
    ["a password in the config", { account: [{ ...imap, password: "hunter2-very-secret" }] }, /unknown key; credentials belong in the secret file \(password\)/],
    ["an IMAP account without host", { account: [{ ...imap, host: undefined }] }, /account\.0\.host/],
    ["a JMAP account over http to a non-loopback host", { account: [{ name: "np", address: "k@np.com", transport: "jmap", url: "http://np.com", credentials: "/x" }] }, /account\.0\.url: plain http is only allowed for a loopback host/],
    ["an unknown transport", { account: [{ ...imap, transport: "pop3" }] }, /account\.0\.transport/],
    ["two accounts with one name", { account: [imap, imap] }, /duplicate account name zoho/],
    ["no account", { account: [] }, /account/],
    ["no credentials path", { account: [{ ...imap, credentials: "" }] }, /account\.0\.credentials/],
  ])("refuses %s", (_n, value, problem) => {
    const r = parseAccountsConfig(value);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems.join("\n")).toMatch(problem);
  });

  it("two accounts with the same address are refused (typed duplicate-address), whatever the case", () => {
    const r = parseAccountsConfig({ account: [imap, { ...imap, name: "zoho2", address: "kannaka@spacechild.LOVE", host: "imap2.zoho.com" }] });
    expect(r).toMatchObject({ ok: false, issues: [{ path: "account.1.address", type: "duplicate-address", message: "the address of account zoho2 is already account zoho's" }] });
  });

  it("JMAP over plain http is accepted for a loopback host only; elsewhere a typed http-not-loopback refusal", () => {
    const jmap = (url: string) => parseAccountsConfig({ account: [{ name: "cy", address: "k@koinii.test", transport: "jmap", url, credentials: "/x" }] });
    for (const url of ["http://127.0.0.1:11080", "http://localhost:11080/", "http://[::1]:11080", "https://mail.np.com"]) expect(jmap(url).ok).toBe(true);
    for (const url of ["http://np.com", "http://127.0.0.2:11080", "http://10.0.0.1"])
      expect(jmap(url)).toMatchObject({ ok: false, issues: [{ path: "account.0.url", type: "http-not-loopback", message: "plain http is only allowed for a loopback host" }] });
    expect(jmap("ftp://127.0.0.1")).toMatchObject({ ok: false, issues: [{ path: "account.0.url", type: "invalid" }] });
  });

  it("every problem is typed; the legacy lines are path: message", () => {
    const r = parseAccountsConfig({ account: [{ ...imap, password: "x", tls: "none" }] });
    expect(r).toMatchObject({ ok: false, issues: [{ path: "account.0", type: "unknown-key" }, { path: "account.0.tls", type: "tls-not-loopback" }] });
    const t = parseAccountsConfig({ account: [{ ...imap, tls: "none" }] });
    expect(t).toMatchObject({ ok: false, issues: [{ type: "tls-not-loopback" }], problems: ["account.0.tls: tls none is only allowed for a loopback host"] });
  });

  it("never echoes a secret value back in its problems", () => {
    const r = parseAccountsConfig({ account: [{ ...imap, password: "hunter2-very-secret", port: "hunter2-in-the-port" }] });
    expect(JSON.stringify(r)).not.toContain("hunter2");
  });

  it("reports per account whether the secret file is there, from stat alone", () => {
    const opened: string[] = [];
    const stat: StatFn = (p) => {
      opened.push(p);
      return p === "/etc/kannaka/zoho.env" ? { isFile: () => true, mode: 0o100640 } : null;
    };
    const report = credentialsReport(CONFIG, stat);
    expect(report).toEqual([
      { account: "zoho", address: "kannaka@spacechild.love", transport: "imap", endpoint: "imap.zoho.com:993", credentials_path: "/etc/kannaka/zoho.env", credentials_present: true, too_open: false },
      { account: "np", address: "kannaka@ninja-portal.com", transport: "jmap", endpoint: "https://mail.ninja-portal.com", credentials_path: "/etc/kannaka/np.env", credentials_present: false, too_open: null },
    ]);
    expect(report.map(formatCredentialsLine)[1]).toMatch(/np\.env \(MISSING\)$/);
    expect(opened).toEqual(["/etc/kannaka/zoho.env", "/etc/kannaka/np.env"]);
  });

  it.each([
    [0o100600, false],
    [0o100640, false],
    [0o100644, true],
    [0o100660, true],
  ])("mode %o too open: %s", (mode, open) => {
    expect(credentialsReport(CONFIG, () => ({ isFile: () => true, mode }))[0].too_open).toBe(open);
  });

  it("a real missing file reads as missing", () => {
    const r = parseAccountsConfig({ account: [{ ...imap, credentials: "/nonexistent/koinii-mail-test.env" }] });
    if (!r.ok) throw new Error(r.problems.join());
    expect(credentialsReport(r.config)[0].credentials_present).toBe(false);
  });

  it("derives the context: our addresses, internal domains, display names", () => {
    const ctx = mailContext(CONFIG);
    expect([...ctx.selfAddresses]).toEqual(["kannaka@spacechild.love", "kannaka@ninja-portal.com"]);
    expect([...ctx.internalDomains]).toEqual(["ninja-portal.com"]);
    expect(ctx.displayNames.get("zoho")).toBe("Kannaka");
  });
});
