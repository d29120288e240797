/**
 * The client verbs: `koinii assert|query|retract|watch ... [--url] [--token]`, each speaking
 * to a running daemon over the wire. Answers print as one JSON line on stdout; a refusal
 * prints its JSON on stderr and exits 1.
 */
import { type Command, InvalidArgumentError } from "commander";
import { getGlobalDispatcher } from "undici";
import { WireClient, WireClientError } from "./client.js";

export const DEFAULT_URL = "http://127.0.0.1:4200";

export interface ConnOptions {
  url: string;
  token?: string;
}

export function withConn(cmd: Command): Command {
  return cmd
    .option("--url <url>", "the daemon's base URL (env KOINII_URL)", process.env.KOINII_URL ?? DEFAULT_URL)
    .option("--token <token>", "bearer token (env KOINII_TOKEN)", process.env.KOINII_TOKEN);
}

export function parseWhole(value: string): number {
  if (!/^[0-9]{1,15}$/.test(value)) throw new InvalidArgumentError("expected a whole number");
  return Number(value);
}

export async function run(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
    // One command per process: drop the kept-alive connections, or they hold it open for seconds.
    await getGlobalDispatcher().close();
  } catch (e) {
    if (e instanceof WireClientError) process.stderr.write(JSON.stringify(e.body ?? { ok: false, type: e.type, error: e.message }) + "\n");
    else process.stderr.write(`koinii: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  }
}

export const print = (v: unknown): void => {
  process.stdout.write(JSON.stringify(v) + "\n");
};

/** Register assert, query, retract and watch on `program`. */
export function registerClientCommands(program: Command): void {
  withConn(program.command("assert <sentence>").description("assert one sentence into a context"))
    .requiredOption("-c, --context <context>", "the context, e.g. CxAtlas")
    .option("--strength <strength>", "default or monotonic")
    .option("--creator <id>", "creator (admin only; an agent is stamped with its id)")
    .action((sentence: string, o: ConnOptions & { context: string; strength?: string; creator?: string }) =>
      run(async () => print(await new WireClient(o.url, o.token).call("POST", "/v1/assert", { sentence, context: o.context, strength: o.strength, creator: o.creator }))),
    );

  withConn(program.command("query <goal>").description("a cone-aware query; prints the solutions"))
    .requiredOption("-c, --context <context>", "the context whose cone is read")
    .option("--limit <n>", "most solutions", parseWhole)
    .action((goal: string, o: ConnOptions & { context: string; limit?: number }) =>
      run(async () => print(await new WireClient(o.url, o.token).call("POST", "/v1/query", { goal, context: o.context, limit: o.limit }))),
    );

  withConn(program.command("retract <handle>").description("retract a sentex (and its target-following replies)"))
    .action((handle: string, o: ConnOptions) => run(async () => print(await new WireClient(o.url, o.token).call("POST", "/v1/retract", { handle: parseWhole(handle) }))));

  withConn(program.command("watch [goal]").description("subscribe and print each event as one JSON line as it comes (lagged notices go to stderr)"))
    .option("-c, --context <context>", "watch what this context sees (required with a goal)")
    .option("--from <seq>", "replay the durable log after this seq first", parseWhole)
    .option("--wait-ms <ms>", "long-poll wait per request", parseWhole, 25_000)
    .option("--count <n>", "stop after this many events", parseWhole)
    .action((goal: string | undefined, o: ConnOptions & { context?: string; from?: number; waitMs: number; count?: number }) =>
      run(async () => {
        const client = new WireClient(o.url, o.token);
        const w = await client.call<{ token: string; cursor: number; lagged: number }>("POST", "/v1/watch", { goal, context: o.context, from: o.from });
        let stop = false;
        const onSignal = () => {
          stop = true;
        };
        process.once("SIGINT", onSignal);
        process.once("SIGTERM", onSignal);
        let cursor = w.cursor;
        let seen = 0;
        try {
          while (!stop && (o.count === undefined || seen < o.count)) {
            const a = await client.call<{ events: { seq: number }[]; cursor: number; lagged: number }>(
              "POST",
              "/v1/poll",
              { token: w.token, cursor, waitMs: o.waitMs },
              { timeoutMs: o.waitMs + 30_000 },
            );
            if (a.lagged > 0) process.stderr.write(JSON.stringify({ lagged: a.lagged, cursor: a.cursor }) + "\n");
            for (const e of a.events) {
              if (o.count !== undefined && seen >= o.count) break;
              print(e);
              seen++;
            }
            cursor = a.cursor;
          }
        } finally {
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
          await client.call("POST", "/v1/unwatch", { token: w.token }).catch(() => undefined);
        }
      }),
    );
}
