/**
 * Prometheus metrics at GET /metrics (prom-client), one registry per server so several
 * servers can live in one process (tests, benchmarks).
 */
import client from "prom-client";
import type { FeedHub } from "../feed/index.js";
import type { StoreOfRecord } from "../kb/index.js";

export class Metrics {
  readonly registry = new client.Registry();
  readonly writes: client.Counter<"route">;
  readonly events: client.Counter;
  readonly lost: client.Counter;
  readonly refusals: client.Counter<"type">;
  readonly latency: client.Histogram<"method" | "route" | "status">;

  constructor(hub: () => FeedHub | undefined, headSeq: () => number, store: () => StoreOfRecord | undefined) {
    const registers = [this.registry];
    this.writes = new client.Counter({ name: "koinii_writes_total", help: "Writes answered ok, by route", labelNames: ["route"], registers });
    this.events = new client.Counter({ name: "koinii_feed_events_total", help: "Change-feed events published (one per seq)", registers });
    this.lost = new client.Counter({ name: "koinii_feed_lagged_events_total", help: "Events subscriptions lost to ring overflow", registers });
    this.refusals = new client.Counter({ name: "koinii_refusals_total", help: "Answers with ok:false, by type", labelNames: ["type"], registers });
    this.latency = new client.Histogram({
      name: "koinii_http_request_duration_seconds",
      help: "Request latency by method, route and status",
      labelNames: ["method", "route", "status"],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30],
      registers,
    });
    const gauge = (name: string, help: string, read: () => number) =>
      new client.Gauge({ name, help, registers, collect() { this.set(read()); } });
    gauge("koinii_head_seq", "The newest committed seq", headSeq);
    gauge("koinii_feed_subscriptions", "Live subscriptions", () => hub()?.subscriptionCount ?? 0);
    gauge("koinii_feed_parked_polls", "Polls parked waiting for an event", () => hub()?.parkedCount ?? 0);
    gauge("koinii_feed_streams", "Open SSE streams", () => hub()?.streamCount ?? 0);
    gauge("koinii_feed_pending_events", "Undelivered events held in subscription rings", () => hub()?.pendingCount ?? 0);
    // Cumulative counts the store keeps itself, read at scrape time.
    const counter = (name: string, help: string, read: () => number) =>
      new client.Counter({ name, help, registers, collect() { this.reset(); this.inc(read()); } });
    counter("koinii_store_commits_total", "Group commits of the store of record", () => store()?.commits ?? 0);
    counter("koinii_wal_fsyncs_total", "WAL fsyncs the store ran itself (SQLite at durability full)", () => store()?.walFsyncs?.count ?? 0);
    counter("koinii_wal_fsyncs_inline_total", "Of those, the fsyncs a lone writer ran on the event loop (--inline-fsync-max-ms)", () => store()?.walFsyncs?.inline ?? 0);
    counter("koinii_wal_fsync_seconds_total", "Time those WAL fsyncs took, in seconds (divide by koinii_wal_fsyncs_total for the mean a group waits)", () => store()?.walFsyncs?.seconds ?? 0);
    client.collectDefaultMetrics({ register: this.registry, prefix: "koinii_" });
  }
}
