/**
 * `koinii serve`: the daemon on the embedded SQLite store in `--data` (or on PostgreSQL with
 * `--store postgres://...`: the elected writer, or else a follower that replays the writer's
 * log, serves reads and the feed, redirects writes, and takes over when the lease runs out), loading contexts/ from
 * the package root. Prints exactly one line on stdout, `koinii listening on http://HOST:PORT`
 * (port 0 picks a free port; the line gives the real one); logs go to stderr.
 *
 * Exit codes: 0 after a graceful stop (SIGTERM/SIGINT), 1 on bad flags or a failed start,
 * 2 when asked to bind a non-loopback address without KOINII_ADMIN_TOKEN, 3 when the store
 * failed (K12: fail-stop; a supervisor restarts the daemon from the store of record). On
 * PostgreSQL a deposed writer or a lost connection does not exit: the daemon rejoins in
 * place (src/daemon/rejoin.ts); only a broken invariant exits 3.
 */
import { join } from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import { openKb, DEFAULT_CHECKPOINT, DEFAULT_INLINE_FSYNC_MAX_MS, DEFAULT_READ_LIMITS, DEFAULT_PROGRESS_INTERVAL_MS, progressLine } from "../kb/index.js";
import { PgStore, DEFAULT_PG_LIMITS, isPostgresUrl } from "../kb/pgstore.js";
import { createServer, packageRoot, DEFAULT_DAEMON_LIMITS } from "../daemon/index.js";
import { Rejoiner } from "../daemon/rejoin.js";
import { DEFAULT_FEED_LIMITS } from "../feed/index.js";
import { DEFAULT_MCP_HTTP_LIMITS } from "../mcp/http.js";
import { isLoopbackBind } from "../net/loopback.js";
import { parseWhole } from "./client-commands.js";

const positive = (v: string): number => {
  if (!/^[0-9]{1,15}$/.test(v) || Number(v) < 1) throw new InvalidArgumentError("expected a positive whole number");
  return Number(v);
};
const absoluteUrl = (v: string): string => {
  if (!/^https?:\/\/[^/]+$/.test(v)) throw new InvalidArgumentError("expected http(s)://host[:port], no path");
  return v;
};
const port = (v: string): number => {
  if (!/^[0-9]{1,5}$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError("expected a port from 0 to 65535");
  return Number(v);
};


interface ServeOptions {
  port: number;
  data: string;
  store?: string;
  leaseMs: number;
  leaseRenewMs: number;
  pgStatementTimeoutMs: number;
  pgLockTimeoutMs: number;
  pgIdleInTransactionMs: number;
  followPollMs: number;
  memberForgetMs: number;
  advertiseUrl?: string;
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
  checkpointEvents: number;
  checkpointRows: number;
  checkpointSegmentRows: number;
  inlineFsyncMaxMs: number;
  loneWriterWindowMs: number;
  maxPollLimit: number;
  quiet?: boolean;
  progressIntervalMs: number;
  maxQuerySteps: number;
  maxResults: number;
  maxReadMs: number;
  maxMcpSessions: number;
  mcpIdleSessionMs: number;
  requestTimeoutMs: number;
  maxEditEntries: number;
  maxAtomBytes: number;
  idempotencyTtlMs: number;
}

export function registerServeCommand(program: Command): void {
  program
    .command("serve")
    .description("run the daemon (KOINII_ADMIN_TOKEN in the environment sets the admin token)")
    .option("--port <n>", "TCP port (0 = any free port)", port, 4200)
    .option("--data <dir>", "data directory (the SQLite store lives in <dir>/koinii.db)", "./data")
    .option("--store <url>", "postgres://... to keep the store of record in PostgreSQL instead of --data (env KOINII_STORE); the elected daemon writes, the others follow", process.env.KOINII_STORE)
    .option("--lease-ms <ms>", "PostgreSQL: how long the writer lease lasts without renewal (a writer paused this long is evicted; a dead one is replaced at once through the writer lock)", positive, DEFAULT_PG_LIMITS.leaseMs)
    .option("--lease-renew-ms <ms>", "PostgreSQL: how often the writer renews its lease, a follower reads it, and a daemon that lost PostgreSQL retries the connection (at most half of --lease-ms)", positive, DEFAULT_PG_LIMITS.leaseRenewMs)
    .option("--pg-statement-timeout-ms <ms>", "PostgreSQL: statement_timeout of every session", positive, DEFAULT_PG_LIMITS.statementTimeoutMs)
    .option("--pg-lock-timeout-ms <ms>", "PostgreSQL: lock_timeout of every session", positive, DEFAULT_PG_LIMITS.lockTimeoutMs)
    .option("--pg-idle-in-transaction-ms <ms>", "PostgreSQL: idle_in_transaction_session_timeout of every session", positive, DEFAULT_PG_LIMITS.idleInTransactionMs)
    .option("--follow-poll-ms <ms>", "PostgreSQL: how often a follower reads the head when no NOTIFY woke it", positive, DEFAULT_PG_LIMITS.followPollMs)
    .option("--member-forget-ms <ms>", "PostgreSQL: forget a cluster member not seen for this long (more than 3 x --lease-ms; it shows as unreachable until then)", positive, DEFAULT_PG_LIMITS.memberForgetMs)
    .option("--advertise-url <url>", "PostgreSQL: the URL other daemons redirect writes to while this one writes (default: the listening URL)", absoluteUrl)
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
    .option("--checkpoint-events <n>", "SQLite: events the log holds past the sentex table's checkpoint before the next checkpoint (bounds the reopen's replay)", positive, DEFAULT_CHECKPOINT.events)
    .option("--checkpoint-rows <n>", "SQLite: row changes the log holds past the checkpoint before the next one", positive, DEFAULT_CHECKPOINT.rows)
    .option("--checkpoint-segment-rows <n>", "SQLite: rows one checkpoint segment holds (an edit's rows are kept in segments; a change to one of its rows moves the segment's rows to the sentex table)", positive, DEFAULT_CHECKPOINT.segmentRows)
    .option("--inline-fsync-max-ms <ms>", "full: a lone writer's WAL fsync runs on the event loop (no thread-pool handoff) while the last fsync took at most this long; what arrives meanwhile waits that one fsync; 0 = always on the thread pool", parseWhole, DEFAULT_INLINE_FSYNC_MAX_MS)
    .option("--max-poll-limit <n>", "largest `limit` a poll may ask for", positive, DEFAULT_FEED_LIMITS.maxPollLimit)
    .option("--quiet", "no progress lines on stderr (reopening a large store)")
    .option("--progress-interval-ms <ms>", "how often long work (reopening the store) prints a progress line on stderr", positive, DEFAULT_PROGRESS_INTERVAL_MS)
    .option("--max-query-steps <n>", "sentexes one read may examine (422 too-costly past it)", positive, DEFAULT_READ_LIMITS.maxQuerySteps)
    .option("--max-results <n>", "rows one read may answer: a query is truncated, a match refused (422 too-costly)", positive, DEFAULT_READ_LIMITS.maxResults)
    .option("--max-read-ms <ms>", "time one read may run on the writer's thread (422 too-costly past it)", positive, DEFAULT_READ_LIMITS.maxReadMs)
    .option("--max-mcp-sessions <n>", "open MCP sessions on /mcp (429 too-many-sessions past it)", positive, DEFAULT_MCP_HTTP_LIMITS.maxSessions)
    .option("--mcp-idle-session-ms <ms>", "close an MCP session with no open request or stream for this long", positive, DEFAULT_MCP_HTTP_LIMITS.idleSessionMs)
    .option("--request-timeout-ms <ms>", "a request's headers and body must arrive within this (408 request-timeout past it)", positive, DEFAULT_DAEMON_LIMITS.requestTimeoutMs)
    .option("--max-edit-entries <n>", "most adds + removes in one edit (413 edit-too-large past it)", positive, DEFAULT_DAEMON_LIMITS.maxEditEntries)
    .option("--max-atom-bytes <n>", "longest atom in a sentence and longest context or other name, in UTF-8 bytes (400 too-long past it)", positive, DEFAULT_DAEMON_LIMITS.maxAtomBytes)
    .option("--lone-writer-window-ms <ms>", "full: a writer counts as alone (its WAL fsync may run inline, see --inline-fsync-max-ms) while no other client sent a write within this", positive, DEFAULT_DAEMON_LIMITS.loneWriterWindowMs)
    .option("--idempotency-ttl-ms <ms>", "how long a write's Idempotency-Key is honoured (and kept) after its first answer; an older key is a new write", positive, DEFAULT_DAEMON_LIMITS.idempotencyTtlMs)
    .action(async (o: ServeOptions) => {
      const adminToken = process.env.KOINII_ADMIN_TOKEN?.trim() ? process.env.KOINII_ADMIN_TOKEN : undefined;
      if (!isLoopbackBind(o.listen) && !adminToken) {
        process.stderr.write(`koinii: refusing to bind ${o.listen} without KOINII_ADMIN_TOKEN (open mode is loopback only)\n`);
        process.exit(2);
      }
      if (o.store !== undefined && !isPostgresUrl(o.store)) {
        process.stderr.write(`koinii: --store takes a postgres:// URL, got ${JSON.stringify(o.store)}\n`);
        process.exit(1);
      }
      const storeUrl = o.store;
      const pgLimits = { leaseMs: o.leaseMs, leaseRenewMs: o.leaseRenewMs, statementTimeoutMs: o.pgStatementTimeoutMs, lockTimeoutMs: o.pgLockTimeoutMs, idleInTransactionMs: o.pgIdleInTransactionMs, followPollMs: o.followPollMs, memberForgetMs: o.memberForgetMs };
      const open = async () => {
        const store = storeUrl === undefined ? undefined : await PgStore.open({ url: storeUrl, limits: pgLimits, follow: true });
        try {
          return await openKb({
            path: join(o.data, "koinii.db"),
            store,
            durability: o.durability,
            contextsDir: o.contexts,
            feedRetentionEvents: o.feedRetentionEvents,
            checkpoint: { events: o.checkpointEvents, rows: o.checkpointRows, segmentRows: o.checkpointSegmentRows },
            inlineFsyncMaxMs: o.inlineFsyncMaxMs,
            readLimits: { maxQuerySteps: o.maxQuerySteps, maxResults: o.maxResults, maxReadMs: o.maxReadMs },
            progress: o.quiet ? undefined : { report: (p) => void process.stderr.write(progressLine(p) + "\n"), intervalMs: o.progressIntervalMs },
          });
        } catch (e) {
          await store?.close();
          throw e;
        }
      };
      const kb = await open();
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
          idempotencyTtlMs: o.idempotencyTtlMs,
          loneWriterWindowMs: o.loneWriterWindowMs,
        },
        mcp: { maxSessions: o.maxMcpSessions, idleSessionMs: o.mcpIdleSessionMs },
      });
      let stopping = false;
      let url = "";
      // A cluster daemon rebuilds its KB when its store is lost; an SQLite one stops (K12).
      const rejoin =
        storeUrl === undefined
          ? undefined
          : new Rejoiner({ server, log: server.log, open, retryMs: o.leaseRenewMs, closeBoundMs: o.pgStatementTimeoutMs, advertiseUrl: () => o.advertiseUrl ?? url, exit: (code) => process.exit(code) });
      const stop = async (signal: string) => {
        if (stopping) {
          server.log.warn({ signal }, "second signal: exiting now");
          process.exit(1);
        }
        stopping = true;
        server.log.info({ signal }, "stopping");
        await server.close();
        await (rejoin ? rejoin.stop() : kb.close()); // commits what is pending, closes the store
        server.log.info("stopped");
        process.exit(0);
      };
      // K12: fail-stop. The server already refuses work and logged the reason; answer what is
      // in flight, then exit non-zero so a supervisor restarts from the store of record.
      if (rejoin) rejoin.watch(kb);
      else
        kb.onFailure(() => {
          stopping = true;
          void server.close().finally(() => process.exit(3));
        });
      process.on("SIGTERM", () => void stop("SIGTERM"));
      process.on("SIGINT", () => void stop("SIGINT"));
      url = await server.listen(o.port, o.listen);
      await server.kb.store.cluster?.advertise(o.advertiseUrl ?? url);
      process.stdout.write(`koinii listening on ${url}\n`);
    });
}
