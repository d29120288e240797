/**
 * `koinii serve`: the daemon on the embedded SQLite store in `--data`, loading contexts/ from
 * the package root. Prints exactly one line on stdout, `koinii listening on http://HOST:PORT`
 * (port 0 picks a free port; the line gives the real one); logs go to stderr.
 *
 * Exit codes: 0 after a graceful stop (SIGTERM/SIGINT), 1 on bad flags or a failed start,
 * 2 when asked to bind a non-loopback address without KOINII_ADMIN_TOKEN.
 */
import { join } from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import { openKb } from "../kb/index.js";
import { createServer, packageRoot, DEFAULT_DAEMON_LIMITS } from "../daemon/index.js";
import { DEFAULT_FEED_LIMITS } from "../feed/index.js";
import { isLoopbackBind } from "../net/loopback.js";

const positive = (v: string): number => {
  if (!/^[0-9]{1,15}$/.test(v) || Number(v) < 1) throw new InvalidArgumentError("expected a positive whole number");
  return Number(v);
};
const port = (v: string): number => {
  if (!/^[0-9]{1,5}$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError("expected a port from 0 to 65535");
  return Number(v);
};


interface ServeOptions {
  port: number;
  data: string;
  listen: string;
  durability: "full" | "normal";
  contexts: string;
  maxSubscriptions: number;
  maxParked: number;
  maxEvents: number;
  maxWaitMs: number;
  maxBodyBytes: number;
  idleReapMs: number;
  heartbeatMs: number;
  shutdownGraceMs: number;
  feedRetentionEvents: number;
  maxPollLimit: number;
  requestTimeoutMs: number;
  maxEditEntries: number;
  maxAtomBytes: number;
}

export function registerServeCommand(program: Command): void {
  program
    .command("serve")
    .description("run the daemon (KOINII_ADMIN_TOKEN in the environment sets the admin token)")
    .option("--port <n>", "TCP port (0 = any free port)", port, 4200)
    .option("--data <dir>", "data directory (the SQLite store lives in <dir>/koinii.db)", "./data")
    .option("--listen <addr>", "address to bind; non-loopback requires KOINII_ADMIN_TOKEN", "127.0.0.1")
    .addOption(new Option("--durability <mode>", "full: fsync every group commit; normal: survives a process kill, not a power loss").choices(["full", "normal"]).default("full"))
    .option("--contexts <dir>", "context files loaded at boot", join(packageRoot(), "contexts"))
    .option("--max-subscriptions <n>", "subscriptions per daemon (429 too-many-subscriptions past it)", positive, DEFAULT_FEED_LIMITS.maxSubscriptions)
    .option("--max-parked <n>", "long polls parked at once (429 too-many-waiters past it)", positive, DEFAULT_FEED_LIMITS.maxParked)
    .option("--max-events <n>", "undelivered events a subscription keeps in memory (the newest)", positive, DEFAULT_FEED_LIMITS.maxEvents)
    .option("--max-wait-ms <ms>", "cap on a poll's waitMs", positive, DEFAULT_FEED_LIMITS.maxWaitMs)
    .option("--max-body-bytes <n>", "largest request body (413 body-too-large past it)", positive, DEFAULT_DAEMON_LIMITS.maxBodyBytes)
    .option("--idle-reap-ms <ms>", "reap a subscription neither polled nor streamed for this long", positive, DEFAULT_FEED_LIMITS.idleReapMs)
    .option("--heartbeat-ms <ms>", "SSE heartbeat comment interval", positive, DEFAULT_DAEMON_LIMITS.heartbeatMs)
    .option("--shutdown-grace-ms <ms>", "bound on a graceful stop before connections are cut", positive, DEFAULT_DAEMON_LIMITS.shutdownGraceMs)
    .option("--feed-retention-events <n>", "events the durable log keeps for `from` replay", positive, 1_000_000)
    .option("--max-poll-limit <n>", "largest `limit` a poll may ask for", positive, DEFAULT_FEED_LIMITS.maxPollLimit)
    .option("--request-timeout-ms <ms>", "a request's headers and body must arrive within this (408 request-timeout past it)", positive, DEFAULT_DAEMON_LIMITS.requestTimeoutMs)
    .option("--max-edit-entries <n>", "most adds + removes in one edit (413 edit-too-large past it)", positive, DEFAULT_DAEMON_LIMITS.maxEditEntries)
    .option("--max-atom-bytes <n>", "longest atom in a sentence and longest context or other name, in UTF-8 bytes (400 too-long past it)", positive, DEFAULT_DAEMON_LIMITS.maxAtomBytes)
    .action(async (o: ServeOptions) => {
      const adminToken = process.env.KOINII_ADMIN_TOKEN?.trim() ? process.env.KOINII_ADMIN_TOKEN : undefined;
      if (!isLoopbackBind(o.listen) && !adminToken) {
        process.stderr.write(`koinii: refusing to bind ${o.listen} without KOINII_ADMIN_TOKEN (open mode is loopback only)\n`);
        process.exit(2);
      }
      const kb = await openKb({ path: join(o.data, "koinii.db"), durability: o.durability, contextsDir: o.contexts, feedRetentionEvents: o.feedRetentionEvents });
      const server = await createServer({
        kb,
        adminToken,
        feed: { maxSubscriptions: o.maxSubscriptions, maxParked: o.maxParked, maxEvents: o.maxEvents, maxWaitMs: o.maxWaitMs, idleReapMs: o.idleReapMs, maxPollLimit: o.maxPollLimit },
        limits: {
          maxBodyBytes: o.maxBodyBytes,
          heartbeatMs: o.heartbeatMs,
          shutdownGraceMs: o.shutdownGraceMs,
          requestTimeoutMs: o.requestTimeoutMs,
          maxEditEntries: o.maxEditEntries,
          maxAtomBytes: o.maxAtomBytes,
        },
      });
      let stopping = false;
      const stop = async (signal: string) => {
        if (stopping) {
          server.log.warn({ signal }, "second signal: exiting now");
          process.exit(1);
        }
        stopping = true;
        server.log.info({ signal }, "stopping");
        await server.close();
        await kb.close(); // commits what is pending, closes the store
        server.log.info("stopped");
        process.exit(0);
      };
      process.on("SIGTERM", () => void stop("SIGTERM"));
      process.on("SIGINT", () => void stop("SIGINT"));
      const url = await server.listen(o.port, o.listen);
      process.stdout.write(`koinii listening on ${url}\n`);
    });
}
