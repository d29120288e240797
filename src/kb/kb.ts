/**
 * The in-process API (`openKb`) that the daemon, the local medium, the tests and the
 * benchmarks all use: the engine in memory, a store of record under it (SQLite, or
 * PostgreSQL through `store`; see store-of-record.ts), one
 * global `seq` per write, and the durable change feed's events.
 *
 *   const kb = await openKb({ path: "./data/koinii.db" });
 *   const { handle, seq } = await kb.assert("(dog Muffet)", "CxPets");
 *   kb.query("(dog ?x)", "CxPets").solutions; // [{ "?x": "Muffet" }]
 *
 * K9: a write is checked and applied synchronously (no await between check and apply),
 * persisted into the turn's open transaction, and answered only after the group commit;
 * its event is handed to listeners right after the commit, in seq order.
 *
 * K11: a read (`read`) is computed from memory at the applied seq and answered only once
 * that seq is durable, naming it (`asOf`); every read is bounded in steps, results and time
 * (`ReadLimits`), so the writer's thread never runs unbounded work.
 *
 * K12: fail-stop. A store failure (a statement, the COMMIT, the fsync) or a broken
 * invariant after `engine.apply` leaves memory ahead of disk: the KB stops (`failure`),
 * refuses every later write and read with `unavailable`, rolls back what was not
 * committed, and tells `onFailure` listeners once. The store of record is the truth on
 * the next open.
 */
import { mkdirSync } from "node:fs";
import { AsyncLocalStorage } from "node:async_hooks";
import { dirname } from "node:path";
import { KbError, type Problem } from "./errors.js";
import { Engine, type AddEntry, type EngineLimits, type WriteOutcome, type WrittenAdd } from "./engine.js";
import type { Strength, RemovalReason, Bounded, PreparedAdd } from "./write.js";
import { SqliteStore, type CheckpointLimits, type FsyncFn } from "./store.js";
import { NotWriterError, type Durability, type LoggedEvent, type StoreOfRecord } from "./store-of-record.js";
import type { Node } from "./node.js";
import { OUT, IN_MONO } from "./write.js";
import { parseTerm, locatorOf, printTerm, type Bindings, type List } from "./term.js";
import { goalShape, literalShape, checkContextName } from "./sentence.js";
import { solve, matchExact, ReadBudget, type ReadLimits, DEFAULT_READ_LIMITS } from "./query.js";
import { loadContextsDir } from "./loader.js";
import { ProgressMeter, type ProgressSink } from "./progress.js";
import { LOCATOR_UNSET, withLocators, type FeedEvent, type SentexRecord } from "./event.js";

export type { FeedEvent, SentexRecord, RemovedEntry } from "./event.js";

export interface AssertResult {
  handle: number;
  seq: number;
  created: boolean;
  bounded?: Bounded;
}

export interface EditBatch {
  add?: AddEntry[];
  remove?: number[];
}

export interface EditResult {
  seq: number;
  added: number[];
  removed: number[];
  bounded?: Bounded;
}

export interface WhyResult {
  believed: boolean;
  premise: boolean;
  strength?: Strength;
  support: { rule: number; antecedents: number[]; edges: number[] }[];
  reason?: "defeated" | "unsupported" | "retracted" | "cascade";
}

export interface ClashSide {
  handle: number;
  sentence: string;
  context: string;
  strength: Strength;
  derived: boolean;
}

export interface ClashEntry {
  id: string;
  kind: "contradiction" | "conflict";
  sides: [ClashSide, ClashSide];
}

export interface KbOptions {
  /** SQLite file; created with its directory when missing. ":memory:" for a throwaway KB. Unused with `store`. */
  path: string;
  /** Another store of record, opened by the caller (PostgreSQL: `PgStore.open`); the KB closes it. */
  store?: StoreOfRecord;
  durability?: Durability;
  limits?: Partial<EngineLimits>;
  /** Load every `<dir>/*.kb` file at open (idempotent). */
  contextsDir?: string;
  /** How many feed events the durable log keeps (older ones are pruned). */
  feedRetentionEvents?: number;
  /** Injected clock (epoch ms) for createdAt. */
  now?: () => number;
  /** Work bounds of every read (K11): steps, results, time. */
  readLimits?: Partial<ReadLimits>;
  /** The WAL fsync seam (tests simulate a power cut through it); default `fs.fsync`. */
  fsync?: FsyncFn;
  /** The synchronous fsync of a lone writer's group (store.ts `StoreOptions.fsyncSync`). */
  fsyncSync?: (fd: number) => void;
  /** A lone writer's fsync runs inline while the last fsync took at most this long (ms); 0 = never (store.ts). */
  inlineFsyncMaxMs?: number;
  /** When the SQLite log is checkpointed into the sentex table (store.ts `CheckpointLimits`). */
  checkpoint?: Partial<CheckpointLimits>;
  /** Where the reopen reports its progress, and how often (none: silent). */
  progress?: ProgressSink;
}

/** Why the KB stopped (K12). */
export interface KbFailure {
  reason: string;
  error: unknown;
}

/** A read's answer and the durable seq it reflects. */
export interface ReadAt<T> {
  value: T;
  asOf: number;
}

export type EventListener = (event: FeedEvent) => void;

/**
 * A write's input as the engine applied it, kept with its event so a follower can apply
 * the same write at the same seq: the adds (placed, canonical), the removes, and the clock
 * the write read (every createdAt it set).
 */
interface WriteInput {
  at: number;
  add: WrittenAdd[];
  remove: readonly number[];
}

/**
 * The writes of one `atomically` call: they wait for no commit of their own (the call waits
 * once, after its seal joined their group); `group` is the store group the first of them
 * joined, which the seal must join too.
 */
interface WriteScope {
  group: number | undefined;
}

/** The engine's clock, held still for the length of one write so a replay reads the same time. */
class WriteClock {
  private pinned: number | undefined;
  constructor(private readonly base: () => number) {}
  readonly now = (): number => this.pinned ?? this.base();
  /** Run `fn` with the clock held at `at` (default: now). */
  hold<T>(fn: (at: number) => T, at: number = this.base()): T {
    this.pinned = at;
    try {
      return fn(at);
    } finally {
      this.pinned = undefined;
    }
  }
}

export class Kb {
  readonly engine: Engine;
  readonly store: StoreOfRecord;
  readonly durability: Durability;
  readonly feedRetentionEvents: number;
  readonly readLimits: ReadLimits;
  private readonly listeners = new Set<EventListener>();
  private readonly failureListeners = new Set<(f: KbFailure) => void>();
  private closed = false;
  private failed: KbFailure | undefined;
  /** The newest seq whose group has committed and whose event has been published. */
  private published: number;
  private writesSinceprune = 0;
  private readonly clock: WriteClock;
  private readonly scopes = new AsyncLocalStorage<WriteScope>();

  private constructor(engine: Engine, clock: WriteClock, store: StoreOfRecord, opts: KbOptions) {
    this.clock = clock;
    this.engine = engine;
    this.store = store;
    this.durability = opts.durability ?? "full";
    this.feedRetentionEvents = opts.feedRetentionEvents ?? 1_000_000;
    this.readLimits = { ...DEFAULT_READ_LIMITS, ...opts.readLimits };
    for (const [k, v] of Object.entries(this.readLimits)) {
      if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`read limit ${k} must be a positive integer, got ${v}`);
    }
    this.published = engine.headSeq;
    store.onFailure = (e) => this.fail(e);
  }

  static async open(opts: KbOptions): Promise<Kb> {
    const store: StoreOfRecord = opts.store ?? (await openSqlite(opts));
    const clock = new WriteClock(opts.now ?? Date.now);
    const engine = new Engine({ limits: opts.limits, now: clock.now });
    const meta = store.openMeta;
    const meter = new ProgressMeter("reopening the store", "sentexes", opts.progress, { total: store.rowCount() });
    const rebuilt = engine.rebuild(counted(store.rows(), meter), meta.nextHandle, meta.headSeq);
    meter.end();
    const kb = new Kb(engine, clock, store, opts);
    if (store.cluster?.role === "follower") {
      // A follower writes nothing: the writer persists its own rebuild and loads the contexts.
      store.cluster.follow((e) => kb.replay(e));
      return kb;
    }
    // Persist what the rebuild had to mint or found underivable; no event (recover is silent).
    if (rebuilt.created.length || rebuilt.removedHandles.length) {
      store.begin();
      store.insertSentexes(rebuilt.created.map((n) => kb.row(n)));
      for (const h of rebuilt.removedHandles) store.deleteSentex(h, "unsupported", meta.headSeq);
      store.setMeta({ nextHandle: engine.nextHandle, headSeq: engine.headSeq });
      await store.durable();
    }
    if (opts.contextsDir) await loadContextsDir(kb, opts.contextsDir);
    return kb;
  }

  /** The newest seq applied in memory; it may belong to a group not yet durable (never tell a reader). */
  get appliedSeq(): number {
    return this.engine.headSeq;
  }

  /** The newest seq that is durable and published: what a reader may be told. */
  get headSeq(): number {
    return this.published;
  }

  /** Why the KB stopped, once it has (K12); undefined while healthy. */
  get failure(): KbFailure | undefined {
    return this.failed;
  }

  /** Hear the KB stop (K12), once. Returns the unsubscribe function. */
  onFailure(listener: (f: KbFailure) => void): () => void {
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  /**
   * Stop for good (K12): memory may be ahead of the store, so nothing more is written or
   * read; what was not committed is rolled back; listeners hear it once.
   */
  fail(error: unknown, reason?: string): void {
    if (this.failed) return;
    const why = reason ?? `the store failed: ${error instanceof Error ? error.message : String(error)}`;
    this.failed = { reason: why, error };
    this.store.abort(error);
    for (const l of this.failureListeners) {
      try {
        l(this.failed);
      } catch {
        // a listener's own failure cannot make the stop less final
      }
    }
  }

  get size(): number {
    return this.engine.index.size;
  }

  // ------------------------------------------------------------ writes

  /**
   * Assert one sentence. Identity is (context, truth, canonical sentence): a repeat
   * returns the same handle, `created: false`, and the seq that stored it.
   */
  async assert(sentence: string, context: string, opts: { strength?: Strength; creator?: string | null } = {}): Promise<AssertResult> {
    this.checkOpen();
    const prepared = this.engine.prepare({ sentence, context, strength: opts.strength, creator: opts.creator ?? null });
    const outcome = this.write([prepared], []);
    const handle = outcome.addedHandles[0]!;
    const node = this.engine.index.byHandle.get(handle);
    await this.writeDurable();
    const result: AssertResult = { handle, seq: outcome.seq ?? node?.seq ?? this.appliedSeq, created: outcome.createdFlags[0]! };
    if (outcome.bounded) result.bounded = outcome.bounded;
    return result;
  }

  /** Retract a stored sentex (and, recursively, every target-following meta-sentex naming it). */
  async retract(handle: number): Promise<{ seq: number; removed: number[] }> {
    this.checkOpen();
    if (!Number.isSafeInteger(handle) || handle < 1) throw new KbError("bad-request", `a handle is a positive integer, got ${JSON.stringify(handle)}`);
    if (!this.engine.index.byHandle.has(handle)) throw new KbError("unknown-handle", `no sentex has handle ${handle}`);
    const outcome = this.write([], [handle]);
    await this.writeDurable();
    return { seq: outcome.seq ?? this.appliedSeq, removed: outcome.removedHandles };
  }

  /** Every problem a batch would meet, each with `in` and `index`; stores nothing. */
  checkEdit(batch: EditBatch): Problem[] {
    return this.engine.checkEdit(batch.add ?? [], batch.remove ?? []).problems;
  }

  /**
   * Apply a batch atomically (K3): every entry is checked first, one problem refuses the
   * whole batch (`inadmissible`, with `problems`) and stores nothing; adds land before
   * removes and the batch settles once, as one seq and one event.
   */
  async edit(batch: EditBatch): Promise<EditResult> {
    this.checkOpen();
    const { problems, prepared } = this.engine.checkEdit(batch.add ?? [], batch.remove ?? []);
    if (problems.length) throw new KbError("inadmissible", `the batch has ${problems.length} problem${problems.length === 1 ? "" : "s"}; nothing was stored`, { problems });
    const outcome = this.write(prepared, batch.remove ?? []);
    await this.writeDurable();
    const result: EditResult = { seq: outcome.seq ?? this.appliedSeq, added: outcome.addedHandles, removed: outcome.removedHandles };
    if (outcome.bounded) result.bounded = outcome.bounded;
    return result;
  }

  /**
   * Run `fn` (which writes through this KB) and then `seal` (which adds rows of its own to
   * the store's open group, from `fn`'s answer) so that the rows of every write `fn` made and
   * the seal's rows commit in ONE group transaction: durable together or not at all. The
   * writes inside `fn` do not wait for their commit (memory is applied at once, and `fn` must
   * not await anything but this KB's writes); the call waits once, after the seal, and
   * answers only once that group is durable. When `fn` throws, what it wrote is still waited
   * for (answered after commit, as any write) and its error rethrown; nothing is sealed.
   *
   *   const out = await kb.atomically(() => kb.assert("(dog Rex)", "CxPets"), (r) => store.insertIdempotency(row(r)));
   */
  async atomically<T>(fn: () => Promise<T>, seal: (value: T) => void): Promise<T> {
    const scope: WriteScope = { group: undefined };
    let value: T;
    try {
      value = await this.scopes.run(scope, fn);
    } catch (e) {
      if (scope.group !== undefined) await this.durable();
      throw e;
    }
    this.checkOpen();
    this.store.begin();
    try {
      if (scope.group !== undefined && scope.group !== this.store.groupSerial) {
        throw new Error(`invariant: the writes of an atomic call went into group ${scope.group}, its seal into ${this.store.groupSerial} (fn awaited more than this KB's writes)`);
      }
      seal(value);
    } catch (e) {
      this.fail(e);
      throw this.unavailable();
    }
    await this.durable();
    return value;
  }

  /** A write's wait for its commit; inside `atomically`, deferred to the call's one wait. */
  private writeDurable(): Promise<void> | undefined {
    const scope = this.scopes.getStore();
    if (!scope) return this.durable();
    scope.group ??= this.store.groupSerial;
    return undefined;
  }

  /** Resolves once every write so far is durable; a store failure stops the KB (K12). */
  private durable(): Promise<void> {
    return this.store.durable().catch((e: unknown) => {
      this.fail(e);
      throw this.unavailable();
    });
  }

  /**
   * Synchronous core of every write: apply, persist into the open transaction, queue the
   * event. Anything thrown after `engine.apply` began leaves memory mutated: fail-stop (K12).
   */
  private write(adds: Parameters<Engine["apply"]>[0], removes: readonly number[]): WriteOutcome {
    this.store.begin();
    try {
      return this.applyAndPersist(adds, removes);
    } catch (e) {
      this.fail(e);
      throw this.unavailable();
    }
  }

  private applyAndPersist(adds: readonly PreparedAdd[], removes: readonly number[], at?: number): WriteOutcome {
    return this.clock.hold((now) => {
      const outcome = this.engine.apply(adds, removes, this.engine.headSeq + 1);
      if (outcome.seq !== undefined) this.persist(outcome, () => JSON.stringify({ at: now, add: adds.map(Engine.written), remove: removes } satisfies WriteInput));
      return outcome;
    }, at);
  }

  /**
   * A follower's half of a write (see Cluster in store-of-record.ts): apply the writer's
   * input at the writer's clock, inside the store's replay group. The store checks that
   * the event and input this produces are byte-equal to the logged ones.
   */
  replay(e: LoggedEvent): void {
    if (e.seq !== this.engine.headSeq + 1) throw new Error(`invariant: replaying seq ${e.seq} on an engine at ${this.engine.headSeq}`);
    const input = JSON.parse(e.write) as WriteInput;
    const outcome = this.applyAndPersist(input.add.map((a) => this.engine.replayAdd(a)), input.remove, input.at);
    if (outcome.seq !== e.seq) throw new Error(`invariant: the replay of seq ${e.seq} took seq ${outcome.seq ?? "none"}`);
  }

  /** Hand one applied write's rows, counters and event to the store's open group. */
  private persist(outcome: WriteOutcome, input: () => string): void {
    const seq = outcome.seq!;
    if (outcome.created.length) this.store.insertSentexes(outcome.created.map((n) => this.row(n)));
    for (const n of outcome.updated) this.store.updateSentex(n.h, n.premise, n.creator, n.createdAt);
    for (const d of outcome.deleted) this.store.deleteSentex(d.node.h, d.reason, seq);
    this.store.setMeta({ nextHandle: this.engine.nextHandle, headSeq: seq });
    const event: FeedEvent = {
      seq,
      added: outcome.beliefAdded.map((n) => this.record(n, false)),
      removed: outcome.beliefRemoved.map(({ node, reason }) => ({ handle: node.h, sentence: node.text, context: node.ctx, reason })),
    };
    if (outcome.bounded) event.bounded = outcome.bounded;
    this.store.insertEvent(event, input);
    if (++this.writesSinceprune >= 1024) {
      this.writesSinceprune = 0;
      if (seq > this.feedRetentionEvents) this.store.pruneEvents(seq - this.feedRetentionEvents);
    }
    this.store.onCommit(() => this.publish(event));
  }

  /**
   * Hand a durable event to every listener, in seq order. Listeners are the feed hubs,
   * which never throw by contract: one that does broke an invariant, and a listener
   * skipped would silently miss the event, so the KB stops (K12).
   */
  private publish(event: FeedEvent): void {
    if (this.failed) return;
    if (event.seq !== this.published + 1) {
      this.fail(new Error(`invariant: seq ${event.seq} published after ${this.published}`), `invariant broken: seq ${event.seq} published after ${this.published}`);
      return;
    }
    this.published = event.seq;
    if (this.listeners.size) withLocators(event);
    for (const l of this.listeners) {
      try {
        l(event);
      } catch (e) {
        this.fail(e, `invariant broken: a feed listener threw on seq ${event.seq}: ${e instanceof Error ? e.message : String(e)}`);
        return;
      }
    }
  }

  /** Listen to every committed event, in seq order. Returns the unsubscribe function. */
  onEvent(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Durable events after `afterSeq` (oldest first, at most `limit`). */
  async readEvents(afterSeq: number, limit: number): Promise<FeedEvent[]> {
    return this.store.readEvents(afterSeq, limit);
  }

  /** The oldest seq the durable log still holds (head + 1 when empty). */
  oldestRetainedSeq(): number {
    return this.store.oldestEventSeq() ?? this.published + 1;
  }

  // ------------------------------------------------------------ reads

  /**
   * A read as a reader may see it (K11): `fn` runs now, on memory at the applied seq, and
   * the answer waits until that seq is durable (at most the group in flight and its fsync),
   * naming it as `asOf`. A store failure meanwhile refuses the read (`unavailable`).
   *
   *   const { value, asOf } = await kb.read(() => kb.query("(dog ?x)", "CxPets"));
   */
  async read<T>(fn: () => T): Promise<ReadAt<T>> {
    this.checkUsable();
    const asOf = this.engine.headSeq;
    const value = fn();
    if (asOf > this.published) await this.durable();
    this.checkUsable();
    return { value, asOf };
  }

  sentex(handle: number): SentexRecord | undefined {
    this.checkUsable();
    const n = this.engine.index.byHandle.get(handle);
    return n ? this.record(n) : undefined;
  }

  /**
   * Cone-aware query: literals, `(and ...)`, `(not S)` over stored negations, `(unknown G)`
   * as negation as failure. Solutions map each variable to canonical text.
   */
  query(goal: string, context: string, opts: { limit?: number } = {}): { solutions: Record<string, string>[]; truncated: boolean } {
    this.checkUsable();
    const ctx = checkContextName(context);
    const g = goalShape(parseTerm(goal, this.engine.limits));
    const limit = Math.min(opts.limit ?? this.readLimits.maxResults, this.readLimits.maxResults);
    if (!Number.isSafeInteger(limit) || limit < 0) throw new KbError("bad-request", "limit must be a whole number");
    const { solutions, truncated } = solve(this.engine.index, this.visibleFrom(ctx), g, limit, new ReadBudget(this.readLimits));
    return { solutions: solutions.map(printSolution), truncated };
  }

  /** Believed sentexes stored exactly in `context` (`?ctx` = any context) matching a literal. */
  match(sentence: string, context: string): SentexRecord[] {
    this.checkUsable();
    const ctx = context.startsWith("?") ? context : checkContextName(context);
    const lit = literalShape(parseTerm(sentence, this.engine.limits));
    const budget = new ReadBudget(this.readLimits);
    return matchExact(this.engine.index, ctx, lit.neg, lit.atom, (n, c) => this.engine.hiddenFrom(n, c), budget).map((n) => this.record(n));
  }

  /** Believed, premise, every justification (rule, antecedents, genlCx edges crossed), and a reason when not believed. */
  why(handle: number): WhyResult {
    this.checkUsable();
    const n = this.engine.index.byHandle.get(handle);
    if (!n) {
      const t = this.store.tombstone(handle);
      if (!t) throw new KbError("unknown-handle", `no sentex has handle ${handle}`);
      return { believed: false, premise: false, support: [], reason: t.reason as WhyResult["reason"] };
    }
    const support = this.engine.justsOf(n)
      .map((j) => ({ rule: j.rule.h, antecedents: j.ants.map((a) => a.h), edges: this.engine.edgesCrossed(j) }))
      .sort((a, b) => a.rule - b.rule || a.antecedents.join().localeCompare(b.antecedents.join()));
    const out: WhyResult = { believed: n.label !== OUT, premise: n.premise !== 0, strength: this.strength(n), support };
    if (n.label === OUT) out.reason = "defeated";
    return out;
  }

  /** Believed default/default contradictions and monotonic/monotonic conflicts visible from `context`. */
  contradictions(context: string): { contradictions: ClashEntry[]; conflicts: ClashEntry[] } {
    this.checkUsable();
    const ctx = checkContextName(context);
    const entries = this.engine.clashes(ctx).map((c): ClashEntry => ({
      id: clashId(c.sides[0].h, c.sides[1].h),
      kind: c.kind,
      sides: [this.side(c.sides[0]), this.side(c.sides[1])],
    }));
    return { contradictions: entries.filter((e) => e.kind === "contradiction"), conflicts: entries.filter((e) => e.kind === "conflict") };
  }

  /** What a read from `ctx` may see: sentexes in its cone that no `except` mask it sees hides. */
  visibleFrom(ctx: string): (n: Node) => boolean {
    const cone = this.engine.topology.up(ctx);
    if (this.engine.index.predSize("except") === 0) return (n) => cone.has(n.ctx);
    return (n) => cone.has(n.ctx) && !this.engine.hiddenFrom(n, ctx);
  }

  /** Every context `context` sees (itself and CxCore included). */
  cone(context: string): ReadonlySet<string> {
    return this.engine.topology.up(checkContextName(context));
  }

  sees(viewer: string, seen: string): boolean {
    return this.engine.topology.sees(viewer, seen);
  }

  // ------------------------------------------------------------ projection

  /** The record of a stored sentex; the write path leaves its locator to `withLocators` (event.ts). */
  record(n: Node, locator = true): SentexRecord {
    return {
      handle: n.h,
      sentence: n.text,
      context: n.ctx,
      truth: n.neg ? "false" : "true",
      strength: this.strength(n),
      creator: n.creator,
      createdAt: n.createdAt,
      seq: n.seq,
      derived: n.premise === 0,
      believed: n.label !== OUT && !n.gone,
      locator: locator ? locatorOf(n.ctx, n.neg ? "false" : "true", n.text) : LOCATOR_UNSET,
    };
  }

  /**
   * A rule is labelled IN_MONO so that it never weakens a firing (its own strength is not an
   * input), but it reads back at the strength it was asserted with.
   */
  private strength(n: Node): Strength {
    if (n.rule) return n.premise === 2 ? "monotonic" : "default";
    return n.premise === 2 || n.label === IN_MONO ? "monotonic" : "default";
  }

  private side(n: Node): ClashSide {
    return { handle: n.h, sentence: n.text, context: n.ctx, strength: this.strength(n), derived: n.premise === 0 };
  }

  private row(n: Node) {
    return { handle: n.h, context: n.ctx, sentence: n.text, premise: n.premise, creator: n.creator, createdAt: n.createdAt, seq: n.seq };
  }

  private checkOpen(): void {
    if (this.closed) throw new KbError("closed", "the knowledge base is closed");
    this.checkUsable();
    const c = this.store.cluster;
    if (c && c.role !== "writer") throw new NotWriterError(c.writerUrl, c.retryAfterMs);
  }

  /** `writer` unless the store follows another daemon's writes. */
  get role(): "writer" | "follower" {
    return this.store.cluster?.role ?? "writer";
  }

  /** After a failure memory may hold what the store refused: refuse every read and write (K12). */
  private checkUsable(): void {
    if (this.failed) throw this.unavailable();
  }

  private unavailable(): KbError {
    return new KbError("unavailable", `the knowledge base stopped: ${this.failed?.reason ?? "the store failed"}; restart it from the store of record`);
  }

  /** Commit what is pending and close the store. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.store.close();
  }
}

/** The rows, each counted as it is read. */
function* counted<T>(rows: Iterable<T>, meter: ProgressMeter): Iterable<T> {
  for (const r of rows) {
    meter.tick();
    yield r;
  }
}

/** A clash's id: its two handles in ascending order, independent of side order. */
export const clashId = (a: number, b: number): string => (a < b ? `${a}-${b}` : `${b}-${a}`);

function printSolution(b: Bindings): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(b)) out[k] = printTerm(b[k]!);
  return out;
}

export const openKb = (opts: KbOptions): Promise<Kb> => Kb.open(opts);

function openSqlite(opts: KbOptions): Promise<SqliteStore> {
  if (opts.path !== ":memory:") mkdirSync(dirname(opts.path), { recursive: true });
  return SqliteStore.open(opts.path, opts.durability ?? "full", { fsync: opts.fsync, fsyncSync: opts.fsyncSync, inlineFsyncMaxMs: opts.inlineFsyncMaxMs, checkpoint: opts.checkpoint });
}

export type { List };
