/**
 * Idempotency keys (docs/daemon.md D18): a writing route (every route a follower redirects
 * to the writer, `writerOnly`) takes an `Idempotency-Key` header. The first successful
 * answer to a key is stored with the caller, a sha256 of the request (method, path, body),
 * its status, its body and the seq, in the `idempotency` table, inside the SAME group
 * transaction as the write (`Kb.atomically`): the key is durable exactly when the write is.
 * A retry with the key answers that stored answer byte for byte, with `Idempotent-Replayed:
 * true`, and writes nothing; a retry with another request is 422 `idempotency-key-reused`;
 * a retry while the first is in flight waits for it. A refusal stores nothing.
 *
 * Keys are scoped by caller (the agent id of the token; "admin" for the admin and open
 * mode) and honoured for `idempotencyTtlMs` after their first answer; older ones are
 * dropped from memory and pruned from the table inside a later keyed write's group.
 *
 *   const keys = new IdempotencyKeys(kb, 86_400_000, Date.now);
 *   await keys.load(); // a writer: the live keys of the table
 *   return keys.answer(reply, "AgentAtlas", "k-1", requestSha256("POST", "/v1/edit", body), () => handler());
 */
import { createHash } from "node:crypto";
import type { FastifyReply } from "fastify";
import type { Kb } from "../kb/index.js";
import type { IdempotencyRow } from "../kb/store-of-record.js";
import { WireError } from "./errors.js";

export const IDEMPOTENCY_HEADER = "idempotency-key";
export const REPLAYED_HEADER = "idempotent-replayed";

/** 1..255 printable ASCII characters (space to tilde). */
const KEY_SHAPE = /^[\x20-\x7e]{1,255}$/;

/**
 * The request's key, if it sent one; undefined when it sent none. A malformed key, or a key
 * on a route whose answer is a secret, is 400 `bad-idempotency-key`.
 */
export function idempotencyKey(header: string | string[] | undefined, secretAnswer: boolean): string | undefined {
  if (header === undefined) return undefined;
  if (secretAnswer) throw new WireError("bad-idempotency-key", "this route takes no Idempotency-Key: its answer is a fresh secret, which is never stored");
  if (typeof header !== "string" || !KEY_SHAPE.test(header)) throw new WireError("bad-idempotency-key", "an Idempotency-Key is 1 to 255 printable ASCII characters, sent once");
  return header;
}

/** What a retry must repeat: the method, the path and the body (as parsed JSON). */
export const requestSha256 = (method: string, path: string, body: unknown): string =>
  createHash("sha256").update(`${method} ${path}\n${JSON.stringify(body ?? null)}`, "utf8").digest("hex");

const idOf = (caller: string, key: string): string => `${caller}\n${key}`;

export class IdempotencyKeys {
  /** Answered keys by caller and key, in the order they were answered (oldest first). */
  private readonly answered = new Map<string, IdempotencyRow>();
  /** Keys whose first request is running: a retry waits for it. */
  private readonly pending = new Map<string, Promise<IdempotencyRow>>();
  /** The keys' one read from the table (retried after a failed read). */
  private loaded: Promise<void> | undefined;
  /** The table may hold keys past the retention that memory never held (read at load). */
  private tableMayHoldExpired = true;

  constructor(
    private readonly kb: Kb,
    readonly ttlMs: number,
    private readonly now: () => number,
  ) {
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1) throw new RangeError(`idempotencyTtlMs must be a positive whole number of milliseconds, got ${ttlMs}`);
  }

  /**
   * Read the keys still within the retention from the table, once, as the writer: at open
   * (the SQLite daemon, an elected writer) or, on a follower (which replays writes, not
   * keys), at its first keyed request once promoted: a follower redirects every write, so
   * that request comes after it caught up and took the lease, and every key of the old
   * writer is committed by then (its commits are fenced by the lease we now hold).
   */
  load(): Promise<void> {
    if (this.loaded) return this.loaded;
    const done = this.kb.store.idempotencyKeys(this.now() - this.ttlMs).then((rows) => {
      for (const r of rows) this.answered.set(idOf(r.caller, r.key), r);
    });
    this.loaded = done;
    done.catch(() => {
      if (this.loaded === done) this.loaded = undefined; // the next keyed request reads again
    });
    return done;
  }

  /** How many keys memory holds (for tests). */
  get size(): number {
    return this.answered.size;
  }

  /**
   * Answer a keyed request: the stored answer of `caller`'s `key` when there is a live one
   * (the same request) or a refusal (another request); else run `write` (the route's
   * handler) and store its answer in the group of its writes.
   */
  async answer(reply: FastifyReply, caller: string, key: string, sha256: string, write: () => Promise<unknown>): Promise<FastifyReply> {
    await this.load();
    const id = idOf(caller, key);
    for (let running = this.pending.get(id); running; running = this.pending.get(id)) await running.catch(() => undefined);
    const stored = this.live(id);
    if (stored) {
      if (stored.requestSha256 !== sha256) throw new WireError("idempotency-key-reused", `the Idempotency-Key ${JSON.stringify(key)} was used for another request (method, path or body differ); use a new key`);
      reply.header(REPLAYED_HEADER, "true");
      return send(reply, stored);
    }
    const first = this.first(id, caller, key, sha256, write);
    this.pending.set(id, first);
    return send(reply, await first);
  }

  private async first(id: string, caller: string, key: string, sha256: string, write: () => Promise<unknown>): Promise<IdempotencyRow> {
    try {
      let row: IdempotencyRow | undefined;
      await this.kb.atomically(write, (out) => {
        const at = this.now();
        row = { caller, key, requestSha256: sha256, status: 200, answer: JSON.stringify({ ok: true, ...(out as object) }), seq: this.kb.appliedSeq, createdAt: at };
        this.prune(at);
        this.kb.store.insertIdempotency(row);
      });
      this.answered.delete(id); // an expired answer of the same key: the new one goes last
      this.answered.set(id, row!);
      return row!;
    } finally {
      this.pending.delete(id);
    }
  }

  /** A stored answer still within the retention. */
  private live(id: string): IdempotencyRow | undefined {
    const r = this.answered.get(id);
    return r && r.createdAt >= this.now() - this.ttlMs ? r : undefined;
  }

  /** Inside the open group: forget the keys past the retention, and delete them from the table. */
  private prune(now: number): void {
    const cutoff = now - this.ttlMs;
    let due = this.tableMayHoldExpired;
    for (const [id, r] of this.answered) {
      if (r.createdAt >= cutoff) break;
      this.answered.delete(id);
      due = true;
    }
    if (!due) return;
    this.kb.store.pruneIdempotency(cutoff);
    this.tableMayHoldExpired = false;
  }
}

function send(reply: FastifyReply, row: IdempotencyRow): FastifyReply {
  return reply.code(row.status).type("application/json; charset=utf-8").send(row.answer);
}
