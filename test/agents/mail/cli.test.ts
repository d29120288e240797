/**
 * `koinii mail` end to end: the CLI from dist/ against Dovecot + the SMTP submission path
 * and a real daemon process (open mode on loopback). One mailbox, built by the
 * administrator's hand, walks through accounts, sync into the KB, status (owe/owed), close,
 * reply (once), and the channel pass (a query answered, a false claim disputed, a true one
 * endorsed).
 */
import { execFile } from "node:child_process";
import { chmodSync, readFileSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join as joinChannel, poseQuery, assert as assertClaim, wire, type Medium } from "../../../src/channel/index.js";
import { MAIN, spawnDaemon, tempDir, type Daemon } from "../../daemon/helpers.js";
import { rawMail } from "./fixtures.js";
import { adminImap, mailServers, freshUser, messageIdCounts, serverFlags, type MailEnv, type TestUser } from "./servers.js";

const run = promisify(execFile);

let env: MailEnv;
let daemon: Daemon;
let u: TestUser;
let dir: string;
let medium: Medium;
const tag = Date.now().toString(36);
const who = (name: string) => `${name}-${tag}@example.org`;
const SECRET_PHRASE = "sk-THISMUSTNOTBESTORED";
const BODY_PHRASE = "zebra-quartz-lighthouse";

async function mail(args: string[], opts: { ok?: boolean } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [MAIN, "mail", ...args, "--dir", dir, ...(args[0] === "accounts" || args.includes("--help") ? [] : ["--url", daemon.url])], { encoding: "utf8" });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    if (opts.ok) throw new Error(`koinii mail ${args.join(" ")} exited ${x.code}: ${x.stderr}`);
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}

const auth = (from: string) => `mx.koinii.test; dkim=pass header.d=example.org; spf=pass smtp.mailfrom=${from}; dmarc=pass header.from=example.org`;
const hours = (h: number) => new Date(Date.now() - h * 3_600_000).toUTCString();

/** The mailbox: one thread per situation the test needs. */
async function buildMailbox(): Promise<void> {
  const admin = await adminImap(env, u);
  const me = `Kannaka <${u.user}>`;
  const put = (box: string, h: Record<string, string>, body: string, flags: string[] = []) => admin.append(box, rawMail(h, body), flags);
  // A: Vincent asks; we wrote to him before (so he is no first contact): needs_reply.
  await put("Sent", { From: me, To: who("vincent"), Subject: "intro", Date: hours(50), "Message-ID": `<a0-${tag}@koinii.test>` }, "Hi Vincent, nice to meet you.", ["\\Seen"]);
  await put(
    "INBOX",
    { "Authentication-Results": auth(who("vincent")), From: `Vincent <${who("vincent")}>`, To: me, Subject: "the plan", Date: hours(5), "Message-ID": `<a1-${tag}@example.org>`, "In-Reply-To": `<a0-${tag}@koinii.test>`, References: `<a0-${tag}@koinii.test>` },
    `Can you send the plan? My key is ${SECRET_PHRASE} and the word is ${BODY_PHRASE}.`,
  );
  // B: we asked Wendy: waiting_on_them (owed to me).
  await put("Sent", { From: me, To: who("wendy"), Subject: "review", Date: hours(20), "Message-ID": `<b1-${tag}@koinii.test>` }, "Could you review the draft?", ["\\Seen"]);
  // C: Xavier promises a report; answered on the server: waiting_on_them through his commitment.
  await put("INBOX", { "Authentication-Results": auth(who("xavier")), From: `Xavier <${who("xavier")}>`, To: me, Subject: "report", Date: hours(30), "Message-ID": `<c1-${tag}@example.org>` }, "I'll send you the report by Friday.", ["\\Answered"]);
  // D: Yolanda asked; we promised slides: needs_reply through our commitment.
  await put("INBOX", { "Authentication-Results": auth(who("yolanda")), From: `Yolanda <${who("yolanda")}>`, To: me, Subject: "slides", Date: hours(10), "Message-ID": `<d1-${tag}@example.org>` }, "Do you have the slides?");
  await put("Sent", { From: me, To: who("yolanda"), Subject: "Re: slides", Date: hours(9), "Message-ID": `<d2-${tag}@koinii.test>`, "In-Reply-To": `<d1-${tag}@example.org>`, References: `<d1-${tag}@example.org>` }, "I'll send the slides tomorrow.", ["\\Seen"]);
  // E: Zed's question, answered on the server: done.
  await put("INBOX", { "Authentication-Results": auth(who("zed")), From: `Zed <${who("zed")}>`, To: me, Subject: "lunch", Date: hours(3), "Message-ID": `<e1-${tag}@example.org>` }, "Lunch on Tuesday?", ["\\Answered"]);
  // F: Nick's deploy request, done elsewhere: closed with a note.
  await put("INBOX", { "Authentication-Results": auth(who("nick")), From: `Nick <${who("nick")}>`, To: me, Subject: "Help if possible", Date: hours(72), "Message-ID": `<f1-${tag}@example.org>` }, "Five steps to deploy. Can you do it?");
  // G: Uma asks; nobody answered: needs_reply.
  await put("INBOX", { "Authentication-Results": auth(who("uma")), From: `Uma <${who("uma")}>`, To: me, Subject: "budget", Date: hours(4), "Message-ID": `<g1-${tag}@example.org>` }, "Can you check the budget?");
  // H: Ivan writes "I owe you a reply" after our closing thanks: done (an ack), his promise beside it.
  await put("INBOX", { "Authentication-Results": auth(who("ivan")), From: `Ivan <${who("ivan")}>`, To: me, Subject: "numbers", Date: hours(8), "Message-ID": `<h1-${tag}@example.org>` }, "Could you check the numbers?");
  await put("Sent", { From: me, To: who("ivan"), Subject: "Re: numbers", Date: hours(7), "Message-ID": `<h2-${tag}@koinii.test>`, "In-Reply-To": `<h1-${tag}@example.org>`, References: `<h1-${tag}@example.org>` }, "Checked, they are right. Thanks, that settles it.", ["\\Seen"]);
  await put("INBOX", { "Authentication-Results": auth(who("ivan")), From: `Ivan <${who("ivan")}>`, To: me, Subject: "Re: numbers", Date: hours(6), "Message-ID": `<h3-${tag}@example.org>`, "In-Reply-To": `<h2-${tag}@koinii.test>`, References: `<h1-${tag}@example.org> <h2-${tag}@koinii.test>` }, "I owe you a reply.");
  await admin.logout();
}

const threadOf = (statusJson: string, subject: string): { thread_id: string; state: string; counterpart: string[] } => {
  const rows = (JSON.parse(statusJson) as { threads: { thread_id: string; state: string; subject: string; counterpart: string[] }[] }).threads;
  const r = rows.find((x) => x.subject === subject);
  if (!r) throw new Error(`no thread ${subject} in ${statusJson}`);
  return r;
};

/** Every byte of the daemon's store (db + WAL), for grepping. */
const kbBytes = () =>
  readdirSync(daemon.dataDir)
    .filter((f) => f.startsWith("koinii.db"))
    .map((f) => readFileSync(join(daemon.dataDir, f)).toString("latin1"))
    .join("\n");

beforeAll(async () => {
  env = await mailServers();
  daemon = await spawnDaemon();
  medium = wire({ url: daemon.url });
  u = freshUser(env, "cli");
  dir = tempDir();
  writeFileSync(join(dir, "t.env"), `KANNAKA_MAIL_USER=${u.user}\nKANNAKA_MAIL_PASS=${u.pass}\n`, { mode: 0o600 });
  chmodSync(join(dir, "t.env"), 0o600);
  const account = (name: string, credentials: string) => ({
    name,
    address: name === "t" ? u.user : `other-${tag}@${env.domain}`,
    display_name: "Kannaka",
    transport: "imap",
    host: env.host,
    port: env.imapPort,
    tls: "none",
    smtp: { host: env.host, port: env.smtpPort, tls: "none" },
    credentials,
  });
  writeFileSync(join(dir, "accounts.json"), JSON.stringify({ account: [account("t", join(dir, "t.env")), account("gone", join(dir, "gone.env"))] }));
  await buildMailbox();
}, 120_000);

afterAll(async () => {
  await medium?.close();
  await daemon?.stop();
});

describe("koinii mail, end to end (Dovecot + SMTP + daemon)", () => {
  it("every verb has --help", async () => {
    for (const verb of ["accounts", "sync", "status", "thread", "reply", "send", "close", "confirm", "answer"]) {
      const r = await mail([verb, "--help"], { ok: true });
      expect(r.stdout).toContain(`Usage: koinii mail ${verb}`);
    }
  });

  it("accounts: shows whether each secret file is there, never its content", async () => {
    const r = await mail(["accounts"]);
    expect(r.code).toBe(1); // one secret missing
    expect(r.stdout).toContain(`t  ${u.user}  imap  ${env.host}:${env.imapPort}  ${join(dir, "t.env")}\n`);
    expect(r.stdout).toContain(`${join(dir, "gone.env")} (MISSING)`);
    expect(r.stdout + r.stderr).not.toContain(u.pass);
    const j = JSON.parse((await mail(["accounts", "--json"])).stdout) as { account: string; credentials_present: boolean }[];
    expect(j.map((x) => [x.account, x.credentials_present])).toEqual([
      ["t", true],
      ["gone", false],
    ]);
  });

  it("sync: progress per folder, MailRefs in CxMail with no body, no secret; a failed account fails the run", async () => {
    const r = await mail(["sync"]);
    expect(r.code).toBe(1); // "gone" has no secret file
    expect(r.stdout).toMatch(/t INBOX: 8 messages, 8 bodies read \(BODY\.PEEK\), 0 unchanged refs reused/);
    expect(r.stdout).toMatch(/t Sent: 4 messages, 4 bodies read/);
    expect(r.stdout).toContain("gone: sync failed, previous refs kept: credentials: ENOENT");
    expect(r.stderr).toContain("sync failed for gone");
    const refs = await medium.match("(mailRefIn ?r ?t ?a ?f ?role ?s ?u ?st)", "CxMail");
    expect(refs).toHaveLength(12);
    expect(refs.every((x) => x.creator === "AgentMail")).toBe(true);
    expect((await medium.match(`(mailIds ?r "<a1-${tag}@example.org>" ?i ?x)`, "CxMail")).length).toBe(1);
    // Nothing of a body, nothing of the secret, anywhere in the store.
    const bytes = kbBytes();
    expect(bytes).toContain(`a1-${tag}@example.org`);
    for (const s of [SECRET_PHRASE, BODY_PHRASE, u.pass, "Can you send the plan", "Five steps to deploy"]) expect(bytes).not.toContain(s);
    // Server flags untouched by the read-only sync.
    expect(serverFlags(env, u.user, "INBOX").get(`<a1-${tag}@example.org>`)).toEqual([]);
  });

  it("a second sync changes nothing and writes nothing (the daemon's head seq stays); a failed account (wrong password) keeps its refs", async () => {
    const head = async () => ((await (await fetch(`${daemon.url}/health`)).json()) as { seq: number }).seq;
    const seqBefore = await head();
    const again = await mail(["sync", "--account", "t"], { ok: true });
    expect(await head()).toBe(seqBefore);
    expect(again.stdout).toContain("refs: 0 new, 0 changed, 0 gone, 12 unchanged (0 edits)");
    const before = (await medium.match("(mailRefIn ?r ?t ?a ?f ?role ?s ?u ?st)", "CxMail")).map((x) => x.handle).sort();
    renameSync(join(dir, "t.env"), join(dir, "t.env.good"));
    writeFileSync(join(dir, "t.env"), `KANNAKA_MAIL_USER=${u.user}\nKANNAKA_MAIL_PASS=wrong-password\n`, { mode: 0o600 });
    try {
      const bad = await mail(["sync", "--account", "t"]);
      expect(bad.code).toBe(1);
      expect(bad.stdout).toContain("t: sync failed, previous refs kept");
    } finally {
      renameSync(join(dir, "t.env.good"), join(dir, "t.env"));
    }
    const after = (await medium.match("(mailRefIn ?r ?t ?a ?f ?role ?s ?u ?st)", "CxMail")).map((x) => x.handle).sort();
    expect(after).toEqual(before);
  });

  it("status: thread states by the rules; --owe X and --owed answer deterministically", async () => {
    const s = (await mail(["status", "--all", "--json"], { ok: true })).stdout;
    expect(threadOf(s, "intro").state).toBe("needs_reply");
    expect(threadOf(s, "review").state).toBe("waiting_on_them");
    expect(threadOf(s, "lunch").state).toBe("done"); // \Answered on the server
    expect(threadOf(s, "Help if possible").state).toBe("needs_reply");
    expect(threadOf(s, "budget").state).toBe("needs_reply");

    const oweV = await mail(["status", "--owe", who("vincent")], { ok: true });
    expect(oweV.stdout).toContain(`I owe ${who("vincent")}: 1 replies, 0 commitments`);
    expect(oweV.stdout).toContain(threadOf(s, "intro").thread_id);
    const oweY = JSON.parse((await mail(["status", "--owe", who("yolanda"), "--json"], { ok: true })).stdout) as { threads: unknown[]; commitments: { what: string; who_owes: string; status: string }[] };
    expect(oweY.commitments).toMatchObject([{ who_owes: "us", what: "send the slides tomorrow", status: "open" }]);
    const owedMe = await mail(["status", "--owed"], { ok: true });
    expect(owedMe.stdout).toContain("owed to me: 1 replies, 2 commitments");
    expect(owedMe.stdout).toContain(threadOf(s, "review").thread_id);
    expect(owedMe.stdout).toContain("send you the report by Friday");
    // The same mailbox gives the same answer.
    expect((await mail(["status", "--owed"], { ok: true })).stdout).toBe(owedMe.stdout);
    // The commitments are typed records in the KB.
    const rec = await medium.match("(mailCommitmentOf ?c ?src ?t ?a Them ?cp ?what ?due ?dt Rule ?d)", "CxMail");
    expect(rec.map((r) => r.sentence).join("\n")).toContain(`"${who("xavier")}"`);
    expect(rec).toHaveLength(2);
  });

  it("a promise in prose does not change the label: the thread reads done and the open commitment is listed beside it (status, --owe, --owed, thread)", async () => {
    const j = JSON.parse((await mail(["status", "--all", "--json"], { ok: true })).stdout) as { threads: { thread_id: string; subject: string; state: string; rule: string; promised: { who_owes: string; what: string; status: string }[] }[] };
    const bySubject = (subject: string) => j.threads.find((t) => t.subject === subject)!;
    // We replied but promised the slides in prose; Xavier's report is \Answered and promised; Ivan wrote "I owe you a reply" after our closing thanks.
    expect(bySubject("slides")).toMatchObject({ state: "done", rule: "ours-said", promised: [{ who_owes: "us", what: "send the slides tomorrow", status: "open" }] });
    expect(bySubject("report")).toMatchObject({ state: "done", rule: "answered", promised: [{ who_owes: "them", what: "send you the report by Friday" }] });
    expect(bySubject("numbers")).toMatchObject({ state: "done", rule: "ack", promised: [{ who_owes: "them", what: "owe you a reply" }] });
    expect(bySubject("lunch").promised).toEqual([]);
    // The text view lists a done thread that carries a promise, with the promise beside its state.
    const text = (await mail(["status"], { ok: true })).stdout;
    const slides = text.split("\n").find((l) => l.includes("  slides  "));
    expect(slides).toMatch(new RegExp(`^done .*${bySubject("slides").thread_id}.*slides  \\[we owe ${who("yolanda")}: send the slides tomorrow \\(due \\d{4}-\\d\\d-\\d\\d\\)\\]$`));
    expect(text).toContain(`[they owe ${who("ivan")}: owe you a reply]`);
    // --owe / --owed: each promise with its thread's state beside it.
    const oweY = JSON.parse((await mail(["status", "--owe", who("yolanda"), "--json"], { ok: true })).stdout) as { threads: unknown[]; commitments: { what: string; thread_state: string }[] };
    expect(oweY.threads).toEqual([]);
    expect(oweY.commitments).toMatchObject([{ what: "send the slides tomorrow", thread_state: "done" }]);
    const owedI = await mail(["status", "--owed", who("ivan")], { ok: true });
    expect(owedI.stdout).toContain(`owed to me by ${who("ivan")}: 0 replies, 1 commitments`);
    expect(owedI.stdout).toMatch(new RegExp(`promise  c:[0-9a-f]{16}  ${who("ivan")}  owe you a reply  \\(${bySubject("numbers").thread_id} done\\)`));
    // thread: the state line, then the open commitments.
    const t = await mail(["thread", bySubject("slides").thread_id], { ok: true });
    expect(t.stdout.split("\n")[0]).toContain(`${bySubject("slides").thread_id}  done (ours-said:`);
    expect(t.stdout).toMatch(new RegExp(`  promise  c:[0-9a-f]{16}  we owe ${who("yolanda")}: send the slides tomorrow`));
    const tj = JSON.parse((await mail(["thread", bySubject("numbers").thread_id, "--json"], { ok: true })).stdout) as { status: { state: string; promised: { who_owes: string; what: string }[] } };
    expect(tj.status).toMatchObject({ state: "done", promised: [{ who_owes: "them", what: "owe you a reply" }] });
  });

  it("thread --json: each member carries its ref, role, date, sender and flags", async () => {
    const s = (await mail(["status", "--all", "--json"], { ok: true })).stdout;
    const j = JSON.parse((await mail(["thread", threadOf(s, "numbers").thread_id, "--json"], { ok: true })).stdout) as { members: Record<string, unknown>[] };
    expect(j.members).toEqual([
      { ref: expect.stringMatching(/^t:INBOX:\d+$/), role: "inbox", date: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), sender: who("ivan"), live: [] },
      { ref: expect.stringMatching(/^t:Sent:\d+$/), role: "sent", date: expect.any(String), sender: u.user, live: ["\\Seen"] },
      { ref: expect.stringMatching(/^t:INBOX:\d+$/), role: "inbox", date: expect.any(String), sender: who("ivan"), live: [] },
    ]);
    const dates = j.members.map((m) => Date.parse(m.date as string));
    expect(dates).toEqual([...dates].sort((a, b) => a - b));
  });

  it("close --note: the thread is done, with the note as provenance in the KB", async () => {
    const s = (await mail(["status", "--all", "--json"], { ok: true })).stdout;
    const f = threadOf(s, "Help if possible").thread_id;
    expect((await mail(["close", f, "--note", ""])).code).toBe(1);
    const r = await mail(["close", f, "--note", "done on 09-23 by another session"], { ok: true });
    expect(r.stdout).toContain(`${f} Help if possible: needs_reply -> done`);
    expect(threadOf((await mail(["status", "--all", "--json"], { ok: true })).stdout, "Help if possible").state).toBe("done");
    const closed = await medium.match(`(mailClosed (mailThread "${f}") ?a ?note ?c ?at)`, "CxMail");
    expect(closed).toHaveLength(1);
    expect(closed[0]!.sentence).toContain('"done on 09-23 by another session"');
    expect(closed[0]!.creator).toBe("AgentMail");
  });

  it("reply: goes out once, headers from the MailRef; a retry is refused; first contact is a draft", async () => {
    const s = (await mail(["status", "--all", "--json"], { ok: true })).stdout;
    const a = threadOf(s, "intro").thread_id;
    const sent = await mail(["reply", a, "--body", "Here is the plan: deploy Monday."], { ok: true });
    const mid = /sent (<k\.[0-9a-f]{32}@koinii\.test>)/.exec(sent.stdout)?.[1];
    expect(mid).toBeDefined();
    expect([...messageIdCounts(env, who("vincent"), "INBOX")]).toEqual([[mid, 1]]);
    const retry = await mail(["reply", a, "--body", "Here is the plan:  deploy Monday.\n"]);
    expect(retry.code).toBe(3);
    expect(retry.stderr).toContain("refused (duplicate-key)");
    expect(messageIdCounts(env, who("vincent"), "INBOX").get(mid!)).toBe(1);
    // Zed was never written to: a reply to him is a draft, nothing is sent.
    const draft = await mail(["reply", `<e1-${tag}@example.org>`, "--body", "Tuesday works."], { ok: true });
    expect(draft.stdout).toMatch(/^draft \(first-contact\): .*\.eml \(not sent\)/);
    expect(messageIdCounts(env, who("zed"), "INBOX").size).toBe(0);
    // The next sync sees our Sent copy: the thread is done, nothing is re-sent.
    await mail(["sync", "--account", "t"], { ok: true });
    expect(threadOf((await mail(["status", "--all", "--json"], { ok: true })).stdout, "intro").state).toBe("done");
    expect(messageIdCounts(env, who("vincent"), "INBOX").get(mid!)).toBe(1);
  });

  it("in the channel: a query about open loops is answered; a false owesReply is disputed, a true one endorsed", async () => {
    const s = (await mail(["status", "--all", "--json"], { ok: true })).stdout;
    const [a, d] = [threadOf(s, "intro").thread_id, threadOf(s, "budget").thread_id];
    const ops = await joinChannel(medium, "CxMailbox", "AgentOps");
    const q = await poseQuery(ops, "(mailOpenLoops Any)");
    const qy = await poseQuery(ops, `(mailOwedBy Us "${who("yolanda")}")`);
    const bad = await poseQuery(ops, "(mailOwedBy Everyone)");
    const falseClaim = await assertClaim(ops, `(owesReply (mailThread "${a}"))`);
    const trueClaim = await assertClaim(ops, `(owesReply (mailThread "${d}"))`);

    const r = await mail(["answer"], { ok: true });
    expect(r.stdout).toContain("2 answered, 0 re-answered, 0 unchanged, 1 not understood; 1 endorsed, 1 disputed");

    const ans = await medium.match(`(answers AgentMail ?c (sentexHandle ${q}))`, "CxMail");
    expect(ans).toHaveLength(1);
    expect(ans[0]!.sentence).toContain(`(loop (mailThread "${d}") NeedsReply "t"`);
    expect(ans[0]!.sentence).toContain(threadOf(s, "review").thread_id);
    expect(ans[0]!.sentence).not.toContain(a); // answered by our reply
    const ansY = await medium.match(`(answers AgentMail ?c (sentexHandle ${qy}))`, "CxMail");
    expect(ansY[0]!.sentence).toContain('"send the slides tomorrow"');
    expect(await medium.match(`(notUnderstood AgentMail (sentexHandle ${bad}))`, "CxMail")).toHaveLength(1);

    expect(await medium.match(`(disputes AgentMail (sentexHandle ${falseClaim}))`, "CxMail")).toHaveLength(1);
    expect(await medium.match(`(not (owesReply (mailThread "${a}")))`, "CxMail")).toHaveLength(1);
    expect(await medium.match(`(endorses AgentMail (sentexHandle ${trueClaim}))`, "CxMail")).toHaveLength(1);
    expect(await medium.match(`(not (owesReply (mailThread "${d}")))`, "CxMail")).toHaveLength(0);

    // A second pass changes nothing.
    const again = await mail(["answer"], { ok: true });
    expect(again.stdout).toContain("0 answered, 0 re-answered, 2 unchanged, 0 not understood; 0 endorsed, 0 disputed, 0 judgments withdrawn");

    // Closing G elsewhere turns the endorsement into a dispute, and re-answers the open-loops query, in one pass.
    await mail(["close", d, "--note", "budget checked by phone"], { ok: true });
    const third = await mail(["answer"], { ok: true });
    expect(third.stdout).toContain("1 re-answered, 1 unchanged");
    expect(third.stdout).toContain("1 disputed, 1 judgments withdrawn");
    expect(await medium.match(`(endorses AgentMail (sentexHandle ${trueClaim}))`, "CxMail")).toHaveLength(0);
    expect(await medium.match(`(disputes AgentMail (sentexHandle ${trueClaim}))`, "CxMail")).toHaveLength(1);
    expect(await medium.match(`(answers AgentMail ?c (sentexHandle ${q}))`, "CxMail")).toHaveLength(1);
  });

  it("a proposal counts for nothing until the operator confirms it (koinii mail confirm)", async () => {
    const s = (await mail(["status", "--all", "--json"], { ok: true })).stdout;
    const b = threadOf(s, "review").thread_id;
    // A composer's proposal as sync --propose writes it: record + status Proposed, creator AgentMail.
    const id = `c:${"ab".repeat(8)}`;
    await medium.edit({
      add: [
        `(mailCommitmentOf (mailCommitment "${id}") (mailRef "t:Sent:2") (mailThread "${b}") "t" Them "${who("wendy")}" "review the draft" None None Model "test-composer")`,
        `(mailCommitmentStatus (mailCommitment "${id}") Proposed None None)`,
      ].map((sentence) => ({ sentence, context: "CxMail", creator: "AgentMail" })),
    });
    const before = JSON.parse((await mail(["status", "--owed", who("wendy"), "--json"], { ok: true })).stdout) as { commitments: unknown[] };
    expect(before.commitments).toEqual([]);
    const c = await mail(["confirm", id, "--by", "nick"], { ok: true });
    expect(c.stdout).toContain(`${id} open (confirmed by nick): they owe ${who("wendy")}: review the draft`);
    const after = JSON.parse((await mail(["status", "--owed", who("wendy"), "--json"], { ok: true })).stdout) as { commitments: { id: string; status: string; confirmed_by: unknown }[] };
    expect(after.commitments).toMatchObject([{ id, status: "open", confirmed_by: { operator: "nick" } }]);
    expect((await mail(["confirm", id])).code).toBe(1); // open cannot be confirmed again
    expect(await medium.match(`(mailCommitmentStatus (mailCommitment "${id}") Open (byOperator "nick") None)`, "CxMail")).toHaveLength(1);
  });

  it("the whole KB holds no body text and no credential after every step", () => {
    const bytes = kbBytes();
    for (const s of [SECRET_PHRASE, BODY_PHRASE, u.pass, "Here is the plan", "Tuesday works"]) expect(bytes).not.toContain(s);
  });
});
