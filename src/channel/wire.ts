/**
 * The wire medium: a connection to one daemon or to several daemons of a cluster, over
 * undici (docs/wire.md, docs/channel.md "Several daemons"). One keep-alive Pool per daemon (no
 * connection cap, so a parked long poll never queues a write behind it); each request's
 * timeout is `timeoutMs`, extended by the long-poll wait for `poll`; every `{ok: false}`
 * answer becomes a ChannelError with the daemon's `type`, `status`, `problems`.
 *
 * Routing: a write goes to the writer (following a 307 `not-writer`, waiting out a 503
 * `no-writer`, moving on from a node that does not answer, all within `failoverMs`) and
 * carries one `Idempotency-Key` for all its attempts; a read goes to the node that answered
 * last, or the next that answers; a feed token's polls go to the node that issued it.
 *
 *   const m = wire({ urls: ["http://node1:4200", "http://node2:4200"], token: process.env.KOINII_TOKEN });
 *   const h = await join(m, "CxDeploy", "AgentAtlas");
 */
import { errors as undiciErrors } from "undici";
import { nanoid } from "nanoid";
import { ChannelError } from "./errors.js";
import { startPollLoop } from "./pollloop.js";
import { DaemonNodes, daemonOrigins } from "./nodes.js";
import type {
  Medium, AssertAnswer, EditAnswer, EditBatch, QueryAnswer, WatchSpec, FeedOpenAnswer, FeedPollOptions, FeedPollAnswer,
  AgentRegistration, AgentInfo, SentexRecord, Problem, Subscription, SubscribeOptions, EventCallback, Strength,
  Dispute, DisputeState, RulingAnswer, WhoRuled, Tally, MajorityOutcome, BeliefAnswer, Disagreement,
} from "./medium.js";

export interface WireConnection {
  /** One daemon's base URL, e.g. http://127.0.0.1:4200 (the same as `urls: [url]`). */
  url?: string;
  /** The base URLs of the daemons of one cluster (any order; writes find the writer). */
  urls?: string[];
  /** Bearer token: the admin's or an agent's (from registerAgent). None in open mode. */
  token?: string;
  /** Per-request timeout; a poll gets its waitMs on top. Default 10 000 ms. */
  timeoutMs?: number;
  /** How long one write may look for a writer (redirects, elections, dead nodes) before `no-writer`. Default 15 000 ms. */
  failoverMs?: number;
  /** The longest a 503 `no-writer`'s Retry-After is waited before asking again. Default 2 000 ms. */
  maxRetryAfterMs?: number;
}

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_FAILOVER_MS = 15_000;
export const DEFAULT_MAX_RETRY_AFTER_MS = 2_000;
/** The daemon caps a park at 30 000 ms (docs/wire.md); the client never waits for more than that plus timeoutMs. */
export const MAX_WAIT_MS = 30_000;
/** The pause after a round in which no node took the write, doubling up to the max. */
const ROUND_PAUSE_MS = 50;
const ROUND_PAUSE_MAX_MS = 1_000;

/**
 * The POST routes that may write: a follower sends them to the writer (307), so the medium
 * sends them to the writer first, with an Idempotency-Key. Every other route is a read or
 * the feed's, served by any node.
 */
export const WRITE_PATHS: ReadonlySet<string> = new Set([
  "/v1/assert", "/v1/edit", "/v1/retract", "/v1/agents",
  "/v1/disputes/notify", "/v1/disputes/sweep", "/v1/disputes/reopen", "/v1/rule", "/v1/withdraw-rulings", "/v1/majority",
  "/v1/quarantine", "/v1/unquarantine", "/v1/convene", "/v1/disregard", "/v1/restore",
]);

/**
 * Writes that take no Idempotency-Key: registering answers a fresh token, which the daemon
 * stores only hashed, so it cannot replay the answer. A retry registers again (rotating the
 * token: the token of the last answer is the one that works).
 */
export const KEYLESS_PATHS: ReadonlySet<string> = new Set(["/v1/agents"]);

/** Answers (503) of a node that has stopped or is stopping: the request did not run there; another node may take it. */
const NODE_GONE_TYPES: ReadonlySet<string> = new Set(["unavailable", "shutting-down"]);

interface Raw {
  status: number;
  location: string | undefined;
  retryAfter: string | undefined;
  text: string;
}

type Method = "GET" | "POST";

export class WireMedium implements Medium {
  readonly kind = "wire" as const;
  /** The daemons this medium speaks to. */
  readonly nodes: DaemonNodes;
  private readonly authorization: string | undefined;
  private readonly timeoutMs: number;
  private readonly failoverMs: number;
  private readonly maxRetryAfterMs: number;
  /** The node that issued each open feed token (a token means nothing on another node). */
  private readonly tokenNode = new Map<string, string>();

  constructor(conn: WireConnection) {
    if (conn.url !== undefined && conn.urls !== undefined) throw new ChannelError("bad-connection", "give url or urls, not both");
    this.nodes = new DaemonNodes(daemonOrigins(conn.urls ?? (conn.url === undefined ? [] : [conn.url])));
    this.timeoutMs = positiveMs("timeoutMs", conn.timeoutMs, DEFAULT_TIMEOUT_MS);
    this.failoverMs = positiveMs("failoverMs", conn.failoverMs, DEFAULT_FAILOVER_MS);
    this.maxRetryAfterMs = positiveMs("maxRetryAfterMs", conn.maxRetryAfterMs, DEFAULT_MAX_RETRY_AFTER_MS);
    this.authorization = conn.token ? `Bearer ${conn.token}` : undefined;
  }

  /** The node reads go to first (the one that answered last). */
  get url(): string {
    return this.nodes.current;
  }

  /** One request routed by its kind (write, read); answers the body of an `ok: true` answer, throws a ChannelError otherwise. */
  async call<T>(method: Method, path: string, body?: unknown, opts: { extraMs?: number; signal?: AbortSignal } = {}): Promise<T> {
    return (await this.routed<T>(method, path, body, opts)).value;
  }

  private routed<T>(method: Method, path: string, body: unknown, opts: { extraMs?: number; signal?: AbortSignal }): Promise<{ origin: string; value: T }> {
    return method === "POST" && WRITE_PATHS.has(path) ? this.write<T>(path, body, opts.signal) : this.read<T>(method, path, body, opts);
  }

  /** A read: the node that answered last, else the next one that answers; every node unreachable throws the last transport error. */
  private async read<T>(method: Method, path: string, body: unknown, opts: { extraMs?: number; signal?: AbortSignal }): Promise<{ origin: string; value: T }> {
    let last: ChannelError | undefined;
    for (const origin of this.nodes.readOrder()) {
      let raw: Raw;
      try {
        raw = await this.send(origin, method, path, body, { timeoutMs: this.timeoutMs + (opts.extraMs ?? 0), signal: opts.signal });
      } catch (e) {
        last = transportError(e, method, path);
        if (last.type === "aborted") throw last;
        continue;
      }
      const answer = decode<T>(raw, method, path);
      if (answer instanceof ChannelError) {
        if (raw.status === 503 && NODE_GONE_TYPES.has(answer.type)) {
          last = answer;
          continue;
        }
        this.nodes.answered(origin);
        throw answer;
      }
      this.nodes.answered(origin);
      return { origin, value: answer };
    }
    throw last!;
  }

  /**
   * A write: to the known writer first, then every node in turn. A 307 `not-writer` is
   * followed (to a listed or named origin only); a 503 `no-writer` is waited out
   * (Retry-After, at most maxRetryAfterMs); a node that does not answer, or has stopped,
   * is passed over; after a round with no taker, a pause. Every attempt carries the same
   * Idempotency-Key. Past failoverMs: `no-writer`.
   */
  private async write<T>(path: string, body: unknown, signal: AbortSignal | undefined): Promise<{ origin: string; value: T }> {
    const key = KEYLESS_PATHS.has(path) ? undefined : nanoid();
    const deadline = Date.now() + this.failoverMs;
    let order = this.nodes.writeOrder();
    let i = 0;
    let pause = ROUND_PAUSE_MS;
    let redirected = false;
    let problem: ChannelError | undefined;
    const wait = async (ms: number) => {
      await sleep(Math.min(ms, Math.max(0, deadline - Date.now())), signal);
      if (signal?.aborted) throw new ChannelError("aborted", `POST ${path}: aborted`);
    };
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) {
        const why = problem ? `; last: ${problem.message}` : "";
        throw new ChannelError("no-writer", `POST ${path}: no daemon accepted the write within failoverMs (${this.failoverMs} ms)${why}`, { cause: problem });
      }
      if (i >= order.length) {
        await wait(pause);
        pause = Math.min(2 * pause, ROUND_PAUSE_MAX_MS);
        order = this.nodes.writeOrder();
        i = 0;
        continue;
      }
      const origin = order[i]!;
      let raw: Raw;
      try {
        raw = await this.send(origin, "POST", path, body, { timeoutMs: Math.min(this.timeoutMs, left), signal, idempotencyKey: key });
      } catch (e) {
        problem = transportError(e, "POST", path);
        if (problem.type === "aborted") throw problem;
        this.nodes.lost(origin);
        i++;
        continue;
      }
      const answer = decode<T>(raw, "POST", path);
      if (!(answer instanceof ChannelError)) {
        this.nodes.wrote(origin);
        return { origin, value: answer };
      }
      problem = answer;
      if (raw.status === 307 && answer.type === "not-writer") {
        const writer = this.nodes.redirect(raw.location, answer.details.writer);
        if (!writer) throw new ChannelError("protocol", `POST ${path}: ${origin} redirected to ${JSON.stringify(raw.location)}, which is neither a listed daemon nor the writer it named`, { status: 307, details: answer.details });
        if (redirected) await wait(pause); // a second redirect in a row: the nodes disagree on the writer for now
        redirected = true;
        order = [writer, ...order.filter((o) => o !== writer)];
        i = 0;
        continue;
      }
      redirected = false;
      if (raw.status === 503 && answer.type === "no-writer") {
        const seconds = Number(raw.retryAfter);
        await wait(Math.min(Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : pause, this.maxRetryAfterMs));
        continue; // the same node: it redirects once it knows the new writer
      }
      if (raw.status === 503 && NODE_GONE_TYPES.has(answer.type)) {
        this.nodes.lost(origin);
        i++;
        continue;
      }
      throw answer;
    }
  }

  /** One request to one node and its raw answer; transport failures are thrown as undici raised them. */
  private async send(origin: string, method: Method, path: string, body: unknown, o: { timeoutMs: number; signal?: AbortSignal; idempotencyKey?: string }): Promise<Raw> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (method === "POST") headers["content-type"] = "application/json";
    if (this.authorization) headers.authorization = this.authorization;
    if (o.idempotencyKey) headers["idempotency-key"] = o.idempotencyKey;
    const res = await this.nodes.pool(origin).request({
      method,
      path,
      headers,
      body: method === "POST" ? JSON.stringify(body ?? {}) : undefined,
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
      signal: o.signal,
    });
    const text = await res.body.text();
    return { status: res.statusCode, location: header(res.headers.location), retryAfter: header(res.headers["retry-after"]), text };
  }

  /** A request to the node that issued `token` (a poll or an unwatch). */
  private async atTokenNode<T>(token: string, path: string, body: unknown, opts: { extraMs?: number; signal?: AbortSignal } = {}): Promise<T> {
    const origin = this.tokenNode.get(token) ?? this.nodes.current;
    let raw: Raw;
    try {
      raw = await this.send(origin, "POST", path, body, { timeoutMs: this.timeoutMs + (opts.extraMs ?? 0), signal: opts.signal });
    } catch (e) {
      throw transportError(e, "POST", path);
    }
    const answer = decode<T>(raw, "POST", path);
    if (answer instanceof ChannelError) throw answer;
    return answer;
  }

  async assert(sentence: string, context: string, opts: { strength?: Strength; creator?: string } = {}): Promise<AssertAnswer> {
    const { handle, seq, created } = await this.call<AssertAnswer>("POST", "/v1/assert", { sentence, context, ...opts });
    return { handle, seq, created };
  }

  async edit(batch: EditBatch): Promise<EditAnswer> {
    const { seq, added, removed } = await this.call<EditAnswer>("POST", "/v1/edit", { add: batch.add ?? [], remove: batch.remove ?? [] });
    return { seq, added, removed };
  }

  async checkEdit(batch: EditBatch): Promise<Problem[]> {
    return (await this.call<{ problems: Problem[] }>("POST", "/v1/check-edit", { add: batch.add ?? [], remove: batch.remove ?? [] })).problems;
  }

  async retract(handle: number): Promise<{ seq: number; removed: number[] }> {
    const { seq, removed } = await this.call<{ seq: number; removed: number[] }>("POST", "/v1/retract", { handle });
    return { seq, removed };
  }

  async sentex(handle: number): Promise<SentexRecord> {
    return (await this.call<{ sentex: SentexRecord }>("GET", `/v1/sentex/${encodeURIComponent(String(handle))}`)).sentex;
  }

  async match(sentence: string, context: string): Promise<SentexRecord[]> {
    return (await this.call<{ sentexes: SentexRecord[] }>("POST", "/v1/match", { sentence, context })).sentexes;
  }

  async query(goal: string, context: string, opts: { limit?: number } = {}): Promise<QueryAnswer> {
    const { solutions, truncated, asOf } = await this.call<QueryAnswer>("POST", "/v1/query", { goal, context, ...opts });
    return { solutions, truncated, asOf };
  }

  /** Opens the feed on the node reads go to; its polls then go to that node. */
  async feedOpen(spec: WatchSpec): Promise<FeedOpenAnswer> {
    const { origin, value } = await this.routed<FeedOpenAnswer>("POST", "/v1/watch", spec, {});
    this.tokenNode.set(value.token, origin);
    return { token: value.token, cursor: value.cursor, maxEvents: value.maxEvents };
  }

  async feedPoll(token: string, cursor: number, opts: FeedPollOptions = {}): Promise<FeedPollAnswer> {
    const waitMs = Math.min(opts.waitMs ?? 0, MAX_WAIT_MS);
    const body: Record<string, unknown> = { token, cursor, waitMs };
    if (opts.limit !== undefined) body.limit = opts.limit;
    const { events, cursor: next, lagged } = await this.atTokenNode<FeedPollAnswer>(token, "/v1/poll", body, { extraMs: waitMs, signal: opts.signal });
    return { events, cursor: next, lagged };
  }

  async feedClose(token: string): Promise<boolean> {
    try {
      return (await this.atTokenNode<{ dropped: boolean }>(token, "/v1/unwatch", { token })).dropped;
    } finally {
      this.tokenNode.delete(token);
    }
  }

  async subscribe(spec: { goal?: string; context?: string }, callback: EventCallback, opts: SubscribeOptions = {}): Promise<Subscription> {
    const open = await this.feedOpen(spec);
    return startPollLoop(this, spec, open, callback, opts);
  }

  async registerAgent(id: string, opts: { displayName?: string; trust?: number } = {}): Promise<AgentRegistration> {
    const { agent, context, token } = await this.call<AgentRegistration>("POST", "/v1/agents", { id, ...opts });
    return { agent, context, token };
  }

  async agents(): Promise<AgentInfo[]> {
    return (await this.call<{ agents: AgentInfo[] }>("GET", "/v1/agents")).agents;
  }

  async headSeq(): Promise<number> {
    return (await this.call<{ seq: number }>("GET", "/health")).seq;
  }

  async close(): Promise<void> {
    await this.nodes.close();
  }

  // ------------------------------------------------------------ disputes, adjudication, belief (docs/disputes.md)

  async disputesIn(context: string): Promise<Dispute[]> {
    return (await this.call<{ disputes: Dispute[] }>("POST", "/v1/disputes", { context })).disputes;
  }

  async disputed(sentence: string, context: string): Promise<boolean> {
    return (await this.call<{ disputed: boolean }>("POST", "/v1/disputed", { sentence, context })).disputed;
  }

  async disputeState(id: string): Promise<{ id: string; state: DisputeState }> {
    const r = await this.call<{ id: string; state: DisputeState }>("POST", "/v1/dispute-state", { id });
    return { id: r.id, state: r.state };
  }

  async notifyDisputes(context: string): Promise<Dispute[]> {
    return (await this.call<{ notified: Dispute[] }>("POST", "/v1/disputes/notify", { context })).notified;
  }

  async sweepStale(context: string, opts: { staleTimeoutMs?: number } = {}): Promise<Dispute[]> {
    return (await this.call<{ stale: Dispute[] }>("POST", "/v1/disputes/sweep", { context, ...opts })).stale;
  }

  async reopenDispute(id: string): Promise<number> {
    return (await this.call<{ removed: number }>("POST", "/v1/disputes/reopen", { id })).removed;
  }

  async rule(req: { arbiter: string; id: string; upheld: string; channel: string }): Promise<RulingAnswer> {
    const { ruling, withdrawn } = await this.call<RulingAnswer>("POST", "/v1/rule", req);
    return { ruling, withdrawn };
  }

  async withdrawRulings(arbiter: string, id: string): Promise<number[]> {
    return (await this.call<{ withdrawn: number[] }>("POST", "/v1/withdraw-rulings", { arbiter, id })).withdrawn;
  }

  async standingRulings(arbiter: string, id: string): Promise<number[]> {
    return (await this.call<{ rulings: number[] }>("POST", "/v1/rulings", { arbiter, id })).rulings;
  }

  async whoRuled(handle: number): Promise<WhoRuled | null> {
    return (await this.call<{ ruling: WhoRuled | null }>("POST", "/v1/who-ruled", { handle })).ruling;
  }

  async tally(claim: number): Promise<Tally> {
    const { ok: _ok, asOf: _asOf, ...t } = await this.call<Tally & { ok: true; asOf: number }>("POST", "/v1/tally", { handle: claim });
    return t;
  }

  async resolveByMajority(id: string, claim: number, channel: string): Promise<MajorityOutcome> {
    const { ok: _ok, ...r } = await this.call<MajorityOutcome & { ok: true }>("POST", "/v1/majority", { id, claim, channel });
    return r;
  }

  async contestedPremises(sentence: string, context: string): Promise<number[]> {
    return (await this.call<{ premises: number[] }>("POST", "/v1/contested", { sentence, context })).premises;
  }

  async quarantine(context: string, handle: number): Promise<number> {
    return (await this.call<{ mask: number }>("POST", "/v1/quarantine", { context, handle })).mask;
  }

  async unquarantine(context: string, handle: number): Promise<boolean> {
    return (await this.call<{ removed: boolean }>("POST", "/v1/unquarantine", { context, handle })).removed;
  }

  async quarantined(context: string): Promise<number[]> {
    return (await this.call<{ handles: number[] }>("POST", "/v1/quarantined", { context })).handles;
  }

  async believes(agent: string, goal: string): Promise<BeliefAnswer> {
    const { believed, solutions } = await this.call<BeliefAnswer>("POST", "/v1/believes", { agent, goal });
    return { believed, solutions };
  }

  async convene(context: string, agents: string[]): Promise<string[]> {
    return (await this.call<{ agents: string[] }>("POST", "/v1/convene", { context, agents })).agents;
  }

  async disagreements(context: string): Promise<{ agents: string[]; disagreements: Disagreement[] }> {
    const { agents, disagreements } = await this.call<{ agents: string[]; disagreements: Disagreement[] }>("POST", "/v1/disagreements", { context });
    return { agents, disagreements };
  }

  async disregard(agent: string, handle: number): Promise<number> {
    return (await this.call<{ mask: number }>("POST", "/v1/disregard", { agent, handle })).mask;
  }

  async restore(agent: string, handle: number): Promise<boolean> {
    return (await this.call<{ restored: boolean }>("POST", "/v1/restore", { agent, handle })).restored;
  }

  async disregards(agent: string): Promise<number[]> {
    return (await this.call<{ handles: number[] }>("POST", "/v1/disregards", { agent })).handles;
  }
}

function transportError(e: unknown, method: string, path: string): ChannelError {
  const what = `${method} ${path}`;
  if (e instanceof undiciErrors.HeadersTimeoutError || e instanceof undiciErrors.BodyTimeoutError) {
    return new ChannelError("timeout", `${what}: no answer within the request timeout`, { cause: e });
  }
  if (e instanceof Error && (e.name === "AbortError" || e instanceof undiciErrors.RequestAbortedError)) {
    return new ChannelError("aborted", `${what}: aborted`, { cause: e });
  }
  const msg = e instanceof Error ? e.message : String(e);
  return new ChannelError("network", `${what}: ${msg}`, { cause: e });
}

/** An `{ok: true}` body, or the ChannelError an answer stands for. */
function decode<T>(raw: Raw, method: Method, path: string): T | ChannelError {
  const { status, text } = raw;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return new ChannelError("protocol", `${method} ${path} answered ${status} with a body that is not JSON`, { status });
  }
  if (!parsed || typeof parsed !== "object" || !("ok" in parsed)) {
    return new ChannelError("protocol", `${method} ${path} answered ${status} without "ok"`, { status });
  }
  const obj = parsed as Record<string, unknown>;
  if (obj.ok === true) return obj as T;
  const { ok: _ok, type, error, problems, ...details } = obj;
  return new ChannelError(typeof type === "string" ? type : "protocol", typeof error === "string" ? error : `${method} ${path} refused (${status})`, {
    status,
    problems: Array.isArray(problems) ? (problems as Problem[]) : undefined,
    details,
  });
}

const header = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

function positiveMs(name: string, v: number | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (!Number.isSafeInteger(v) || v <= 0) throw new ChannelError("bad-connection", `${name} is a positive whole number of milliseconds, not ${v}`);
  return v;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** A channel medium over a daemon connection (the cross-process shape). */
export const wire = (conn: WireConnection): WireMedium => new WireMedium(conn);
