/**
 * `koinii responder`: run the bounded responder as a channel member, and
 * `koinii responder verify-audit <file>`: check an audit chain.
 *
 * Every option has an environment fallback (docs/agents-responder.md "Options"). Both kill switches
 * default off: without `RESPONDER_ENABLED=1`, or with a charter whose `enabled` is not
 * `true`, it says why on stderr and exits 0, having written only the kill-switch marker
 * (`<data>/switched-off.json`, R22) and connected to nothing.
 *
 * Exit codes (run): 0 after a graceful stop or a kill switch; 1 on bad options, an
 * unreadable charter or platform token, a broken audit chain, or a failed start.
 * Exit codes (verify-audit): 0 intact; 1 broken (the first broken line is named); 2 unreadable.
 */
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { join as joinChannel, splitDaemonUrls, wire } from "../../channel/index.js";
import { createComposer } from "../composer/index.js";
import { AuditChainError, verifyAudit } from "./audit.js";
import { bootResponder } from "./boot.js";
import { ChannelKb, defaultRecallPredicates } from "./channelkb.js";
import { CharterError, envEnabled, loadCharter } from "./charter.js";
import { startHttp } from "./http.js";
import { type KillSwitch, noteSwitchedOff } from "./killswitch.js";
import { resolveSecret } from "../../net/secret.js";
import { NatsBus, defaultDmSubject, defaultEscalationSubject, escalationEvent } from "./nats.js";
import { PlatformClient, parseTokenFile } from "./platform.js";
import { readFileSync } from "node:fs";
import { ResponderService, defaultCatchupLimits } from "./service.js";
import { parseIngest } from "./dmnode.js";
import { responderDefaults } from "./responder.js";

const env = process.env;

export const defaultResponderPort = 8898;
export const defaultResponderAgent = "AgentResponder";
export const defaultResponderChannel = "CxDirectMessages";

const whole = (v: string): number => {
  if (!/^[0-9]{1,15}$/.test(v)) throw new InvalidArgumentError("expected a whole number");
  return Number(v);
};
const port = (v: string): number => {
  const n = whole(v);
  if (n > 65535) throw new InvalidArgumentError("expected a port from 0 to 65535");
  return n;
};
/** A whole number from the environment; a malformed value is NaN, refused when `responder` runs (other commands never see it). */
const envNumber = (name: string, fallback: number): number => {
  const v = env[name];
  return v === undefined ? fallback : /^[0-9]{1,15}$/.test(v) ? Number(v) : Number.NaN;
};
const list = (v: string): string[] => v.split(",").map((s) => s.trim()).filter((s) => s.length > 0);

interface RunOptions {
  charter?: string;
  url: string;
  token?: string;
  agent: string;
  channel: string;
  ingestAgents: string[];
  factWriters?: string[];
  platformUrl: string;
  platformTokenFile: string;
  natsUrl?: string;
  natsSubject: string;
  natsEscalationSubject: string;
  bind: string;
  port: number;
  ingestSecret?: string;
  ingestSecretFile?: string;
  data: string;
  audit?: string;
  dedup?: string;
  model?: string;
  ownSenderId?: string;
  catchupMaxAgeS: number;
  catchupMaxCount: number;
  recallPredicates: string[];
  recallTopK: number;
}


/** Leave the kill-switch marker; a failure to write it is logged, never a reason to start. */
function switchedOff(dataDir: string, sw: KillSwitch): void {
  try {
    noteSwitchedOff(dataDir, sw, Date.now());
  } catch (e) {
    logLine("cannot record the kill switch in the data directory", { path: dataDir, error: (e as NodeJS.ErrnoException).code ?? (e as Error).message });
  }
}

function logLine(msg: string, extra: Record<string, unknown> = {}): void {
  process.stderr.write(JSON.stringify({ ts: new Date().toISOString(), component: "responder", msg, ...extra }) + "\n");
}

async function run(o: RunOptions): Promise<void> {
  for (const [k, v] of [["port", o.port], ["catchup-max-age-s", o.catchupMaxAgeS], ["catchup-max-count", o.catchupMaxCount]] as const) {
    if (!Number.isSafeInteger(v) || v < 0 || (k === "port" && v > 65535)) {
      logLine(`bad --${k} (or its environment variable)`, { value: String(v) });
      process.exit(1);
    }
  }
  // Kill switches first: nothing is opened or connected while either is off, and the only
  // write is the marker that DMs arriving from now on are the humans' (R22).
  if (!envEnabled(env)) {
    logLine("refusing to start (kill switch): RESPONDER_ENABLED is not 1");
    switchedOff(o.data, "env");
    process.exit(0);
  }
  if (o.charter === undefined) {
    logLine("no charter: pass --charter <file> or set RESPONDER_CHARTER");
    process.exit(1);
  }
  let loaded;
  try {
    loaded = loadCharter(o.charter);
  } catch (e) {
    logLine("cannot load the charter", { path: o.charter, error: e instanceof CharterError ? e.issues : (e as Error).message });
    process.exit(1);
  }
  logLine("charter loaded", { path: o.charter, version: loaded.charter.version, sha256: loaded.sha256, enabled: loaded.charter.enabled });
  if (!loaded.charter.enabled) {
    logLine("refusing to start (kill switch): the charter's enabled is not true");
    switchedOff(o.data, "charter");
    process.exit(0);
  }
  let tokenText: string;
  try {
    tokenText = readFileSync(o.platformTokenFile, "utf8");
  } catch (e) {
    logLine("cannot read the platform token file", { path: o.platformTokenFile, error: (e as NodeJS.ErrnoException).code ?? "error" });
    process.exit(1);
  }
  if (parseTokenFile(tokenText, "OPENBOTCITY_JWT") === null) {
    logLine("no token in the platform token file", { path: o.platformTokenFile });
    process.exit(1);
  }

  mkdirSync(o.data, { recursive: true, mode: 0o750 });
  const composerEnv = { ...env, ...(o.model ? { KOINII_COMPOSER_MODELS: o.model } : {}) };
  const composer = createComposer(composerEnv);
  const clock = { nowMs: () => Date.now() };
  let nats: NatsBus | null = null;
  const kb = new ChannelKb({
    trustedAskers: new Set(o.ingestAgents),
    factWriters: new Set(o.factWriters ?? o.ingestAgents),
    recallPredicates: o.recallPredicates,
    publish: (notice) => {
      if (nats === null) return;
      if (!nats.publishEscalation(escalationEvent(notice))) logLine("escalation not published: NATS is not connected", { reason: notice.reason, message_id: notice.messageId });
    },
  });
  let booted;
  try {
    booted = bootResponder({
      dataDir: o.data,
      auditPath: o.audit,
      processedPath: o.dedup,
      loaded,
      kb,
      platform: new PlatformClient({ baseUrl: o.platformUrl, tokenFile: o.platformTokenFile }),
      composer,
      clock,
      ownSenderId: o.ownSenderId ?? null,
      recallTopK: o.recallTopK,
    });
  } catch (e) {
    if (e instanceof AuditChainError) logLine("refusing to start: the audit chain is broken", { path: e.path, line: e.verdict.line, reason: e.verdict.reason });
    else logLine("cannot open the responder's files", { error: (e as Error).message });
    process.exit(1);
  }
  const startedAt = Date.now();
  const service = new ResponderService({
    booted,
    kb,
    clock,
    catchup: { maxAgeMs: o.catchupMaxAgeS * 1000, maxCount: o.catchupMaxCount },
    log: logLine,
    connect: async () => {
      const medium = wire({ urls: splitDaemonUrls(o.url), token: o.token });
      try {
        return await joinChannel(medium, o.channel, o.agent);
      } catch (e) {
        await medium.close().catch(() => undefined);
        throw e;
      }
    },
  });
  const status = () => ({
    ok: true,
    enabled: envEnabled(env) && loaded.charter.enabled,
    charter_version: loaded.charter.version,
    charter_sha256: loaded.sha256,
    uptime_s: Math.floor((Date.now() - startedAt) / 1000),
    composer: composer.name,
    stats: booted.responder.status(),
    audit: { path: booted.audit.path, head: booted.audit.headHash, lines: booted.audit.lines },
    kb: { url: o.url, agent: o.agent, channel: o.channel, ...service.status() },
    nats: nats === null ? null : { connected: nats.connected, subject: nats.dmSubject, received: nats.received, ignored: nats.ignored },
  });
  let http;
  try {
    const secret = resolveSecret({ given: o.ingestSecret, file: o.ingestSecretFile ?? join(o.data, "ingest.secret") });
    if (secret.file) logLine("ingest secret written", { file: secret.file });
    http = await startHttp({ host: o.bind, port: o.port, secret: secret.value, ingest: (dm) => service.ingest(dm, "http"), refused: (st, error) => service.refuseIngest("http", error, { status: st }), status, log: logLine });
  } catch (e) {
    logLine("cannot listen", { bind: o.bind, port: o.port, error: (e as Error).message });
    await booted.stop("listen_failed");
    process.exit(1);
  }
  if (o.natsUrl !== undefined && o.natsUrl.length > 0) {
    nats = new NatsBus({
      url: o.natsUrl,
      user: env.NATS_USER,
      pass: env.NATS_PASSWORD,
      dmSubject: o.natsSubject,
      escalationSubject: o.natsEscalationSubject,
      log: logLine,
      onEvent: (payload) => {
        // The presence daemon's event shape (or the flat one); anything else is handed to the
        // responder as "not a DM", so it is audited as a drop rather than vanishing.
        const parsed = parseIngest(payload);
        if (!parsed.ok) {
          // Not a DM (another event type, malformed, or over a bound): audited, never handled
          // without its query node, so nothing is answered that the KB does not hold.
          service.refuseIngest("nats", parsed.error);
          return;
        }
        service.ingest(parsed.dm, "nats").catch((e: unknown) => {
          logLine("a NATS DM could not be written to the knowledge base", { message_id: parsed.dm.messageId, error: (e as Error)?.message ?? String(e) });
          kb.escalate({ reason: "kb_unavailable", senderId: parsed.dm.senderId, senderName: parsed.dm.senderName, conversationId: parsed.dm.conversationId, messageId: parsed.dm.messageId, atMs: Date.now() }).catch(() => undefined);
        });
      },
    });
  }
  service.start();
  process.stdout.write(`koinii responder listening on ${http.url}\n`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    logLine("stopping", { signal });
    await http.close();
    await nats?.close().catch(() => undefined);
    await service.close();
    await booted.stop(signal);
    logLine("stopped", { audit_head: booted.audit.headHash });
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

/** Register `responder` (run) and `responder verify-audit <file>` on `program`. */
export function registerResponderCommand(program: Command): void {
  const dataDir = env.RESPONDER_DATA_DIR ?? join(homedir(), ".koinii", "responder");
  const responder = program
    .command("responder")
    .description("run the bounded responder (needs RESPONDER_ENABLED=1 and a charter with enabled: true)")
    .option("--charter <file>", "the charter JSON (env RESPONDER_CHARTER)", env.RESPONDER_CHARTER)
    .option("--url <url>", "the daemon's base URL, or several comma-separated (the daemons of a cluster) (env KOINII_URL)", env.KOINII_URL ?? "http://127.0.0.1:4200")
    .option("--token <token>", "the responder agent's bearer token (env KOINII_TOKEN)", env.KOINII_TOKEN)
    .option("--agent <id>", "the responder's agent id (env RESPONDER_AGENT)", env.RESPONDER_AGENT ?? defaultResponderAgent)
    .option("--channel <context>", "the channel DMs are posed in (env RESPONDER_CHANNEL)", env.RESPONDER_CHANNEL ?? defaultResponderChannel)
    .option("--ingest-agents <ids>", "comma-separated agents whose DM query nodes are taken as DMs, besides the responder (env RESPONDER_INGEST_AGENTS)", list, list(env.RESPONDER_INGEST_AGENTS ?? ""))
    .option("--fact-writers <ids>", "comma-separated agents whose facts about a correspondent a reply may draw on, besides the responder (env RESPONDER_FACT_WRITERS; default: the ingest agents)", list, env.RESPONDER_FACT_WRITERS === undefined ? undefined : list(env.RESPONDER_FACT_WRITERS))
    .option("--platform-url <url>", "the DM platform's base URL (env OBC_API)", env.OBC_API ?? "https://api.openbotcity.com")
    .option("--platform-token-file <file>", "file holding the platform token, bare or OPENBOTCITY_JWT=... (env OBC_JWT_FILE); read on every request", env.OBC_JWT_FILE ?? join(homedir(), ".kannaka-obc.env"))
    .option("--nats-url <url>", "NATS server, e.g. nats://127.0.0.1:4222 (env NATS_URL; NATS_USER/NATS_PASSWORD); none = no bus", env.NATS_URL)
    .option("--nats-subject <subject>", "subject DMs arrive on", env.RESPONDER_NATS_SUBJECT ?? defaultDmSubject)
    .option("--nats-escalation-subject <subject>", "subject escalations are published on", env.RESPONDER_NATS_ESCALATION_SUBJECT ?? defaultEscalationSubject)
    .option("--bind <addr>", "loopback address for POST /dm and GET /status (env RESPONDER_BIND)", env.RESPONDER_BIND ?? "127.0.0.1")
    .option("--port <n>", "port for POST /dm and GET /status, 0 = any (env RESPONDER_PORT)", port, envNumber("RESPONDER_PORT", defaultResponderPort))
    .option("--ingest-secret <secret>", "the secret POST /dm and GET /status callers send as Authorization: Bearer (env RESPONDER_INGEST_SECRET; none = generate one into --ingest-secret-file)", env.RESPONDER_INGEST_SECRET)
    .option("--ingest-secret-file <file>", "where a generated secret is written, mode 0600 (default <data>/ingest.secret; env RESPONDER_INGEST_SECRET_FILE)", env.RESPONDER_INGEST_SECRET_FILE)
    .option("--data <dir>", "holds audit.jsonl and processed.jsonl (env RESPONDER_DATA_DIR)", dataDir)
    .option("--audit <file>", "the audit chain (default <data>/audit.jsonl; env RESPONDER_AUDIT)", env.RESPONDER_AUDIT)
    .option("--dedup <file>", "the processed message ids (default <data>/processed.jsonl; env RESPONDER_DEDUP)", env.RESPONDER_DEDUP)
    .option("--model <models>", "Anthropic model(s), comma-separated, used when ANTHROPIC_API_KEY is set (env KOINII_COMPOSER_MODELS)")
    .option("--own-sender-id <id>", "the responder's own sender id on the platform; its echoes are dropped (env RESPONDER_OWN_SENDER_ID)", env.RESPONDER_OWN_SENDER_ID)
    .option("--catchup-max-age-s <s>", "catch-up leaves DM nodes older than this for a human (env RESPONDER_CATCHUP_MAX_AGE_S)", whole, envNumber("RESPONDER_CATCHUP_MAX_AGE_S", defaultCatchupLimits.maxAgeMs / 1000))
    .option("--catchup-max-count <n>", "catch-up handles at most this many DMs, the newest (env RESPONDER_CATCHUP_MAX_COUNT)", whole, envNumber("RESPONDER_CATCHUP_MAX_COUNT", defaultCatchupLimits.maxCount))
    .option("--recall-predicates <ps>", "comma-separated predicates read as (P \"sender\" Fact) for recall", list, [...defaultRecallPredicates])
    .option("--recall-top-k <n>", "most recalled lines handed to the composer", whole, responderDefaults.recallTopK)
    .action((o: RunOptions) => run(o));

  responder
    .command("verify-audit <file>")
    .description("check an audit chain; names the first broken line (exit 1) or prints the head hash (exit 0)")
    .option("--expected-head <hash>", "the hash the last line must carry (e.g. from GET /status), to catch lines cut off the end")
    .action((file: string, o: { expectedHead?: string }) => {
      let v;
      try {
        v = verifyAudit(file, { expectedHead: o.expectedHead });
      } catch (e) {
        process.stderr.write(`koinii: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}\n`);
        process.exitCode = 2;
        return;
      }
      process.stdout.write(JSON.stringify(v) + "\n");
      if (!v.ok) {
        process.stderr.write(`audit chain broken at line ${v.line}: ${v.reason} (${v.message})\n`);
        process.exitCode = 1;
      }
    });
}
