/**
 * `koinii floor`: run the floor agent for one room against a running daemon. Prints exactly
 * one line on stdout, `koinii floor listening on http://127.0.0.1:PORT` (the ingest
 * endpoint; port 0 picks a free one); logs go to stderr as JSON lines.
 *
 * Ingest callers send the endpoint's secret as `Authorization: Bearer <secret>`: given by
 * --ingest-secret / FLOOR_INGEST_SECRET, or generated at start into --ingest-secret-file
 * (mode 0600), which the capture pipeline reads.
 *
 * Exit codes: 0 after a graceful stop (SIGTERM/SIGINT), 1 on bad flags, a persona that does
 * not parse, a secret too short, or a failed start (daemon unreachable, join refused).
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { splitDaemonUrls, wire } from "../../channel/index.js";
import { isContextName } from "../../kb/index.js";
import { createComposer } from "../composer/index.js";
import { startFloorAgent } from "./agent.js";
import { isLoopbackBind } from "../../net/loopback.js";
import { resolveSecret } from "../../net/secret.js";
import { ComposerMouth } from "./mouth.js";
import { parsePersona } from "./persona.js";
import { systemClock, systemScheduler } from "./time.js";

interface FloorCliOptions {
  url: string;
  token?: string;
  room: string;
  persona: string;
  ingestPort: number;
  ingestHost: string;
  ingestSecret?: string;
  ingestSecretFile?: string;
}

const port = (v: string): number => {
  if (!/^[0-9]{1,5}$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError("expected a port from 0 to 65535");
  return Number(v);
};
const context = (v: string): string => {
  if (!isContextName(v)) throw new InvalidArgumentError("expected a context name: Cx followed by CapitalCamelCase, e.g. CxRoomStandup");
  return v;
};
const loopback = (v: string): string => {
  if (!isLoopbackBind(v)) throw new InvalidArgumentError("the ingest endpoint binds a loopback address only (127.0.0.1, ::1)");
  return v;
};

const log = (msg: string, extra: Record<string, unknown> = {}): void => {
  process.stderr.write(JSON.stringify({ at: new Date().toISOString(), msg, ...extra }) + "\n");
};

export function registerFloorCommand(program: Command): void {
  program
    .command("floor")
    .description(
      "run the floor agent for one voice room: hears utterances on a loopback ingest endpoint, records the room, " +
        "its floor decisions and his replies in the KB, and answers through the composer (ANTHROPIC_API_KEY, else deterministic)",
    )
    .option("--url <url>", "the daemon's base URL, or several comma-separated (the daemons of a cluster) (env KOINII_URL)", process.env.KOINII_URL ?? "http://127.0.0.1:4200")
    .option("--token <token>", "the floor agent's bearer token (env KOINII_TOKEN; the admin registers the persona id first)", process.env.KOINII_TOKEN)
    .requiredOption("--room <context>", "the room channel context, e.g. CxRoomStandup", context)
    .requiredOption("--persona <file>", "persona config (JSON): id (the agent id, e.g. AgentClankie), names, aliases, replyPolicy, chattiness, ...")
    .option("--ingest-port <n>", "ingest endpoint port (0 = any free port)", port, 4280)
    .option("--ingest-host <addr>", "ingest endpoint bind address (loopback only)", loopback, "127.0.0.1")
    .option("--ingest-secret <secret>", "the secret ingest callers send as Authorization: Bearer (env FLOOR_INGEST_SECRET; none = generate one into --ingest-secret-file)", process.env.FLOOR_INGEST_SECRET)
    .option("--ingest-secret-file <file>", "where a generated secret is written, mode 0600 (default ~/.koinii/floor/<room>.ingest.secret)")
    .action(async (o: FloorCliOptions) => {
      let persona;
      try {
        persona = parsePersona(JSON.parse(readFileSync(o.persona, "utf8")));
      } catch (e) {
        process.stderr.write(`koinii floor: ${o.persona}: ${e instanceof Error ? e.message : String(e)}\n`);
        process.exit(1);
      }
      let secret;
      try {
        secret = resolveSecret({ given: o.ingestSecret, file: o.ingestSecretFile ?? join(homedir(), ".koinii", "floor", `${o.room}.ingest.secret`) });
      } catch (e) {
        process.stderr.write(`koinii floor: ${e instanceof Error ? e.message : String(e)}\n`);
        process.exit(1);
      }
      const composer = createComposer(process.env);
      const medium = wire({ urls: splitDaemonUrls(o.url), ...(o.token ? { token: o.token } : {}) });
      const agent = await startFloorAgent({
        medium,
        room: o.room,
        persona,
        mouth: new ComposerMouth(composer, persona),
        clock: systemClock,
        scheduler: systemScheduler,
        ingestHost: o.ingestHost,
        ingestPort: o.ingestPort,
        ingestSecret: secret.value,
        onError: (e) => log("floor error", { error: e instanceof Error ? e.message : String(e) }),
      });
      log("floor started", { room: o.room, agent: persona.id, context: agent.recorder.handle.context, composer: composer.name, ...(secret.file ? { ingestSecretFile: secret.file } : {}) });
      let stopping = false;
      const stop = async (signal: string): Promise<void> => {
        if (stopping) process.exit(1);
        stopping = true;
        log("stopping", { signal });
        await agent.stop();
        await medium.close();
        log("stopped");
        process.exit(0);
      };
      process.on("SIGTERM", () => void stop("SIGTERM"));
      process.on("SIGINT", () => void stop("SIGINT"));
      process.stdout.write(`koinii floor listening on ${agent.ingest.url}\n`);
    });
}
