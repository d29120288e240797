/**
 * `koinii mail accounts|sync|status|thread|reply|send|close|confirm|answer` (ADR-0064 §1;
 * docs/agents-mail.md "The CLI"). A thin shell over agent.ts: every verb but `accounts`
 * joins the channel as the mail agent (its own context rooted in CxMailActs) over the wire.
 *
 * Exit codes: 0 done; 1 a failure (an account failed to sync, no such ref, bad config);
 * 2 an ambiguous ref; 3 a send refused by policy or by its idempotency key.
 */
import { readFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { join as joinChannel, splitDaemonUrls, wire, type Medium } from "../../channel/index.js";
import { createComposer } from "../composer/index.js";
import { DEFAULT_PROGRESS_INTERVAL_MS, progressLine } from "../../kb/progress.js";
import { credentialsReport, formatCredentialsLine, loadAccountsConfig, type AccountsConfig } from "./config.js";
import {
  DEFAULT_MAIL_AGENT,
  DEFAULT_MAIL_CHANNEL,
  MAIL_ACTS_CONTEXT,
  ResolveError,
  answerChannel,
  closeMail,
  computeView,
  confirmCommitment,
  mailAgent,
  owed,
  replyMail,
  sendNew,
  syncMail,
  threadLive,
  type MailAgent,
  type SendResult,
} from "./agent.js";
import { refId } from "./parse.js";
import { isOpen, summaryLine, type Promised, type ThreadStatus } from "./state.js";

interface Common {
  dir: string;
  url: string;
  token?: string;
  agent: string;
  channel: string;
  json?: boolean;
  quiet?: boolean;
  progressIntervalMs: number;
}

const whole = (v: string): number => {
  if (!/^[0-9]{1,6}$/.test(v)) throw new InvalidArgumentError("expected a whole number");
  return Number(v);
};

/**
 * One output line: control characters (C0, DEL, C1, and the Unicode line and paragraph
 * separators) are written as `\uXXXX`, so a subject, an id or a server's text can neither
 * break a line nor drive the terminal.
 */
export const line = (s: string): string => s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
const out = (s: string) => process.stdout.write(`${line(s)}\n`);
const err = (s: string) => process.stderr.write(`${line(s)}\n`);
/** JSON escapes control characters inside strings itself; its own newlines are layout. */
const outJson = (v: unknown) => process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);

function loadConfig(dir: string): AccountsConfig {
  const r = loadAccountsConfig(join(dir, "accounts.json"));
  if (!r.ok) {
    err(`koinii mail: ${join(dir, "accounts.json")}:`);
    for (const p of r.issues) err(line(`  ${p.path}: ${p.message} [${p.type}]`));
    process.exit(1);
  }
  return r.config;
}

function withCommon(c: Command, kb = true): Command {
  c.option("--dir <dir>", "the mail agent's directory: accounts.json, receipts.sqlite, drafts/ (env KOINII_MAIL_DIR)", process.env.KOINII_MAIL_DIR ?? "./data/mail");
  if (kb) {
    c.option("--url <url>", "the daemon's base URL, or several comma-separated (the daemons of a cluster) (env KOINII_URL)", process.env.KOINII_URL ?? "http://127.0.0.1:4200")
      .option("--token <token>", "the mail agent's bearer token (env KOINII_TOKEN)", process.env.KOINII_TOKEN)
      .option("--agent <id>", "the mail agent's id; its context is Cx + the rest", process.env.KOINII_MAIL_AGENT ?? DEFAULT_MAIL_AGENT)
      .option("--channel <cx>", "the channel its context is lifted under", process.env.KOINII_MAIL_CHANNEL ?? DEFAULT_MAIL_CHANNEL)
      .option("--quiet", "no progress lines on stderr (a long sync)")
      .option("--progress-interval-ms <ms>", "how often a long sync prints a progress line on stderr", whole, DEFAULT_PROGRESS_INTERVAL_MS);
  }
  return c;
}

/** Join, run, close; a ResolveError exits with its code, any other error with 1. */
async function run(o: Common, fn: (a: MailAgent, medium: Medium, h: Awaited<ReturnType<typeof joinChannel>>) => Promise<number | void>): Promise<void> {
  const cfg = loadConfig(o.dir);
  const medium = wire({ urls: splitDaemonUrls(o.url), token: o.token });
  let code = 0;
  try {
    const h = await joinChannel(medium, o.channel, o.agent, { speaks: MAIL_ACTS_CONTEXT });
    const progress = o.quiet ? undefined : { report: (p: Parameters<typeof progressLine>[0]) => err(progressLine(p)), intervalMs: o.progressIntervalMs };
    const a = mailAgent(cfg, o.dir, h, { log: out, progress });
    code = (await fn(a, medium, h)) ?? 0;
  } catch (e) {
    if (e instanceof ResolveError) {
      err(`koinii mail: ${e.message}`);
      code = e.exitCode;
    } else {
      err(`koinii mail: ${(e as Error).message}`);
      code = 1;
    }
  } finally {
    await medium.close();
  }
  process.exitCode = code;
}

/** A commitment as one phrase: "we owe a@b: send the plan (due 2026-09-25, OVERDUE)". */
const promiseText = (p: Promised): string => {
  const when = [p.due ? `due ${p.due}` : "", p.status === "broken" ? "OVERDUE" : ""].filter(Boolean).join(", ");
  return `${p.who_owes === "us" ? "we owe" : "they owe"} ${p.counterpart}: ${p.what}${when ? ` (${when})` : ""}`;
};

/** A status row: the state from the reply rules, and beside it what is promised in the thread. */
function row(r: ThreadStatus, all: boolean): string {
  const age = r.age_days === null ? "?" : r.age_days < 1 ? `${Math.round(r.age_days * 24)}h` : `${r.age_days.toFixed(1)}d`;
  const promised = r.promised.length > 0 ? [`[${r.promised.map(promiseText).join("; ")}]`] : [];
  return [r.state.padEnd(15), age.padStart(6), r.thread_id, r.account, r.counterpart.join(",") || "-", r.subject, ...promised, ...(all ? [`(${r.rule}: ${r.reason})`] : [])].join("  ");
}

function printSend(r: SendResult): number {
  switch (r.status) {
    case "sent":
      out(`sent ${r.receipt.message_id} to ${r.receipt.to.join(", ")} (thread ${r.thread_id}; Sent copy: ${r.sent_copy})`);
      return 0;
    case "draft":
      out(`draft (${r.reason}): ${r.draft_path} (not sent)`);
      return 0;
    case "refused":
      err(`refused (${r.reason}): ${r.detail}`);
      return 3;
    case "failed":
      err(`failed: ${r.error} (receipt ${r.receipt.message_id} stays pending; the next sync reconciles it)`);
      return 1;
  }
}

function bodyOf(o: { body?: string; bodyFile?: string }): string {
  if (o.body !== undefined) return o.body;
  if (o.bodyFile !== undefined) return readFileSync(o.bodyFile === "-" ? 0 : o.bodyFile, "utf8");
  throw new InvalidArgumentError("give the text with --body or --body-file");
}

export function registerMailCommand(program: Command): void {
  const mail = program.command("mail").description("the mail agent: the mailbox is the record, the KB holds the meaning (ADR-0064)");

  withCommon(mail.command("accounts").description("each account: address, transport, endpoint, secret file and whether it is there (never its content)"), false)
    .option("--json", "one JSON array")
    .action((o: Common) => {
      const cfg = loadConfig(o.dir);
      const rep = credentialsReport(cfg);
      if (o.json) outJson(rep);
      else for (const s of rep) out(formatCredentialsLine(s));
      if (rep.some((s) => !s.credentials_present)) process.exitCode = 1;
    });

  withCommon(mail.command("sync").description("read each account (read-only), write its MailRefs into the agent's context, reconcile receipts, extract commitments"))
    .option("--days <n>", "messages of the last N days", whole, 30)
    .option("--account <name>", "only this account")
    .option("--propose", "ask the composer (ANTHROPIC_API_KEY) to propose commitments the rules missed; they stay `proposed`")
    .option("--resend-after <seconds>", "reconcile: a pending receipt older than this whose Message-ID is not in Sent is re-submitted", whole, 300)
    .action((o: Common & { days: number; account?: string; propose?: boolean; resendAfter: number }) =>
      run(o, async (a) => {
        const rep = await syncMail(a, { days: o.days, account: o.account, composer: o.propose ? createComposer(process.env) : null, resendAfterMs: o.resendAfter * 1000 });
        if (rep.failed.length > 0) {
          err(`koinii mail: sync failed for ${rep.failed.join(", ")} (their previous refs are kept)`);
          return 1;
        }
      }),
    );

  withCommon(mail.command("status").description("thread states computed now (server keywords, receipts, closures, commitments); --owe X: what do I owe X? --owed: what is owed to me?"))
    .option("--account <name>", "only this account")
    .option("--all", "every thread, with the deciding rule")
    .option("--owe <address>", "what do I owe this address: threads needing my reply and my outstanding commitments to it")
    .option("--owed [address]", "what is owed to me (by this address): threads waiting on them and their outstanding commitments")
    .option("--json", "JSON")
    .action((o: Common & { account?: string; all?: boolean; owe?: string; owed?: string | boolean }) =>
      run(o, async (a) => {
        const view = await computeView(a);
        const rows = view.rows.filter((r) => o.account === undefined || r.account === o.account);
        const v = { rows, commitments: view.commitments.filter((c) => o.account === undefined || c.account === o.account) };
        if (o.owe !== undefined || o.owed !== undefined) {
          const side = o.owe !== undefined ? "us" : "them";
          const who = o.owe ?? (typeof o.owed === "string" ? o.owed : null);
          const ans = owed(v, side, who);
          if (o.json) return void outJson(ans);
          out(side === "us" ? `I owe ${who}: ${ans.threads.length} replies, ${ans.commitments.length} commitments` : `owed to me${who ? ` by ${who}` : ""}: ${ans.threads.length} replies, ${ans.commitments.length} commitments`);
          for (const r of ans.threads) out(`  reply    ${r.thread_id}  ${r.counterpart.join(",")}  ${r.subject}`);
          for (const c of ans.commitments) out(`  promise  ${c.id}  ${c.counterpart}  ${c.what}${c.due ? `  due ${c.due}` : ""}${c.status === "broken" ? "  OVERDUE" : ""}  (${c.thread_id} ${c.thread_state ?? "not synced"})`);
          return;
        }
        const shown = o.all ? rows : rows.filter((r) => isOpen(r.state) || r.promised.length > 0);
        if (o.json) return void outJson({ threads: shown, commitments: v.commitments });
        out(summaryLine(rows));
        for (const r of shown) out(row(r, o.all === true));
        const proposed = v.commitments.filter((c) => c.status === "proposed");
        if (proposed.length > 0) out(`${proposed.length} proposed commitments (not counted until confirmed): ${proposed.map((c) => c.id).join(", ")}`);
      }),
    );

  withCommon(mail.command("thread").argument("<ref>", "t:<hex>, account:folder:uid or <message-id>").description("a thread's messages; --live reads each one's flags from the server now (\"gone\" if deleted)"))
    .option("--live", "fetch flags live (IMAP, read-only)")
    .option("--json", "JSON")
    .action((ref: string, o: Common & { live?: boolean }) =>
      run(o, async (a) => {
        const t = await threadLive(a, ref, { live: o.live === true });
        if (o.json)
          return void outJson({
            status: t.status,
            members: t.members.map((m) => ({ ref: refId(m.ref), role: m.ref.role, date: m.ref.date, sender: m.ref.from?.email ?? null, live: m.live })),
          });
        out(`${t.thread.id}  ${t.status.state} (${t.status.rule}: ${t.status.reason})  ${t.thread.refs[0]?.subject ?? ""}`);
        for (const p of t.status.promised) out(`  promise  ${p.id}  ${promiseText(p)}`);
        for (const m of t.members) {
          const r = m.ref;
          out(`  ${r.date ?? "?"}  ${r.role.padEnd(5)}  ${r.from?.email ?? "?"} -> ${[...r.to, ...r.cc].map((x) => x.email).join(",")}  ${refId(r)}  ${m.live === null ? "gone" : m.live.join(" ") || "-"}`);
        }
      }),
    );

  withCommon(mail.command("reply").argument("<ref>", "a message, or a thread (its newest message from them)").description("reply through the one policy, with a receipt written before SMTP; a retry of the same words is refused"))
    .option("--body <text>", "the reply text")
    .option("--body-file <path>", "read the reply text from a file (- for stdin)")
    .option("--draft", "store the reply in drafts/ for an operator; send nothing")
    .action((ref: string, o: Common & { body?: string; bodyFile?: string; draft?: boolean }) =>
      run(o, async (a) => printSend(await replyMail(a, ref, bodyOf(o), { draft: o.draft === true }))),
    );

  withCommon(mail.command("send").description("a new thread, through the same policy and receipt path (first contact is a draft unless policy.first_contact is send)"))
    .requiredOption("--to <address>", "the recipient")
    .requiredOption("--subject <text>", "the subject")
    .option("--account <name>", "send from this account (default: the first)")
    .option("--body <text>", "the text")
    .option("--body-file <path>", "read the text from a file (- for stdin)")
    .option("--draft", "store in drafts/ for an operator; send nothing")
    .action((o: Common & { to: string; subject: string; account?: string; body?: string; bodyFile?: string; draft?: boolean }) =>
      run(o, async (a) => printSend(await sendNew(a, { account: o.account, to: o.to, subject: o.subject, body: bodyOf(o), draft: o.draft === true }))),
    );

  withCommon(mail.command("close").argument("<ref>", "a thread or one of its messages").description("record that a thread was resolved elsewhere; the note is the provenance"))
    .requiredOption("--note <text>", "what resolved it (required, non-empty)")
    .action((ref: string, o: Common & { note: string }) =>
      run(o, async (a) => {
        const r = await closeMail(a, ref, o.note);
        out(`${r.thread.thread_id} ${r.thread.subject}: ${r.before} -> ${r.after}${r.commitmentsClosed.length > 0 ? ` (closed ${r.commitmentsClosed.join(", ")})` : ""}`);
      }),
    );

  withCommon(mail.command("confirm").argument("<commitment>", "a commitment id c:<hex> (or a prefix of at least 6 characters)").description("the operator confirms a proposed commitment: proposed -> open"))
    .option("--by <name>", "who confirms (default: the OS user)")
    .action((id: string, o: Common & { by?: string }) =>
      run(o, async (a) => {
        const c = await confirmCommitment(a, id, o.by ?? userInfo().username);
        out(`${c.id} open (confirmed by ${o.by ?? userInfo().username}): ${c.who_owes === "us" ? "we owe" : "they owe"} ${c.counterpart}: ${c.what}`);
      }),
    );

  withCommon(mail.command("answer").description("one pass over the channel: answer mail questions, endorse or dispute claims about threads and commitments (run after sync)"))
    .option("--sync", "sync first (same as `mail sync` with its defaults)")
    .action((o: Common & { sync?: boolean }) =>
      run(o, async (a, _m, h) => {
        if (o.sync) {
          const rep = await syncMail(a, { days: 30 });
          if (rep.failed.length > 0) err(`koinii mail: sync failed for ${rep.failed.join(", ")} (answering from their previous refs)`);
        }
        const r = await answerChannel(a, h);
        out(`channel ${h.channel}: ${r.answered} answered, ${r.reanswered} re-answered, ${r.unchanged} unchanged, ${r.notUnderstood} not understood; ${r.endorsed} endorsed, ${r.disputed} disputed, ${r.withdrawn} judgments withdrawn`);
      }),
    );
}
