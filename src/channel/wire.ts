/**
 * The wire medium: a daemon connection over undici (wire.md). One keep-alive Pool per
 * connection (no connection cap, so a parked long poll never queues a write behind it);
 * each request's timeout is `timeoutMs`, extended by the long-poll wait for `poll`; every
 * `{ok: false}` answer becomes a ChannelError with the daemon's `type`, `status`, `problems`.
 *
 *   const m = wire({ url: "http://127.0.0.1:4200", token: process.env.KOINII_TOKEN });
 *   const h = await join(m, "CxDeploy", "AgentAtlas");
 */
import { Pool, errors as undiciErrors } from "undici";
import { ChannelError } from "./errors.js";
import { startPollLoop } from "./pollloop.js";
import type {
  Medium, AssertAnswer, EditAnswer, EditBatch, QueryAnswer, WatchSpec, FeedOpenAnswer, FeedPollOptions, FeedPollAnswer,
  AgentRegistration, AgentInfo, SentexRecord, Problem, Subscription, SubscribeOptions, EventCallback, Strength,
  Dispute, DisputeState, RulingAnswer, WhoRuled, Tally, MajorityOutcome, BeliefAnswer, Disagreement,
} from "./medium.js";

export interface WireConnection {
  /** The daemon's base URL, e.g. http://127.0.0.1:4200 */
  url: string;
  /** Bearer token: the admin's or an agent's (from registerAgent). None in open mode. */
  token?: string;
  /** Per-request timeout; a poll gets its waitMs on top. Default 10 000 ms. */
  timeoutMs?: number;
}

export const DEFAULT_TIMEOUT_MS = 10_000;
/** The daemon caps a park at 30 000 ms (wire.md); the client never waits for more than that plus timeoutMs. */
export const MAX_WAIT_MS = 30_000;

export class WireMedium implements Medium {
  readonly kind = "wire" as const;
  readonly url: string;
  private readonly pool: Pool;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;

  constructor(conn: WireConnection) {
    const u = new URL(conn.url);
    this.url = u.origin;
    this.timeoutMs = conn.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.pool = new Pool(u.origin, { keepAliveTimeout: 30_000, connections: null });
    this.headers = { "content-type": "application/json", accept: "application/json" };
    if (conn.token) this.headers.authorization = `Bearer ${conn.token}`;
  }

  /** One request; answers the body of an `ok: true` answer, throws a ChannelError otherwise. */
  async call<T>(method: "GET" | "POST", path: string, body?: unknown, opts: { extraMs?: number; signal?: AbortSignal } = {}): Promise<T> {
    const timeout = this.timeoutMs + (opts.extraMs ?? 0);
    let status: number;
    let text: string;
    try {
      const res = await this.pool.request({
        method,
        path,
        headers: method === "POST" ? this.headers : { accept: "application/json", ...(this.headers.authorization ? { authorization: this.headers.authorization } : {}) },
        body: method === "POST" ? JSON.stringify(body ?? {}) : undefined,
        headersTimeout: timeout,
        bodyTimeout: timeout,
        signal: opts.signal,
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (e) {
      throw transportError(e, method, path);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ChannelError("protocol", `${method} ${path} answered ${status} with a body that is not JSON`, { status });
    }
    if (!parsed || typeof parsed !== "object" || !("ok" in parsed)) {
      throw new ChannelError("protocol", `${method} ${path} answered ${status} without "ok"`, { status });
    }
    const obj = parsed as Record<string, unknown>;
    if (obj.ok === true) return obj as T;
    const { ok: _ok, type, error, problems, ...details } = obj;
    throw new ChannelError(typeof type === "string" ? type : "protocol", typeof error === "string" ? error : `${method} ${path} refused (${status})`, {
      status,
      problems: Array.isArray(problems) ? (problems as Problem[]) : undefined,
      details,
    });
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

  async feedOpen(spec: WatchSpec): Promise<FeedOpenAnswer> {
    const { token, cursor, maxEvents } = await this.call<FeedOpenAnswer>("POST", "/v1/watch", spec);
    return { token, cursor, maxEvents };
  }

  async feedPoll(token: string, cursor: number, opts: FeedPollOptions = {}): Promise<FeedPollAnswer> {
    const waitMs = Math.min(opts.waitMs ?? 0, MAX_WAIT_MS);
    const body: Record<string, unknown> = { token, cursor, waitMs };
    if (opts.limit !== undefined) body.limit = opts.limit;
    const { events, cursor: next, lagged } = await this.call<FeedPollAnswer>("POST", "/v1/poll", body, { extraMs: waitMs, signal: opts.signal });
    return { events, cursor: next, lagged };
  }

  async feedClose(token: string): Promise<boolean> {
    return (await this.call<{ dropped: boolean }>("POST", "/v1/unwatch", { token })).dropped;
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
    await this.pool.close();
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

/** A channel medium over a daemon connection (the cross-process shape). */
export const wire = (conn: WireConnection): WireMedium => new WireMedium(conn);
