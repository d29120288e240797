/**
 * Catch-up (reference §8.7, D6): a consumer holds a VIEW of a goal in a context (the
 * sentexes matching it that the context sees) and folds the feed's tail into it: added
 * entries in, removed entries out (K2: the feed reports every belief change, so the tail
 * alone keeps the view exact while nothing was lost). When something was lost it takes a
 * fresh snapshot: on `lagged` > 0, on `unknown-subscription` (reaped, daemon restarted) and
 * on `bad-cursor`. Its position (token, cursor, view) lives in a CursorStore, in memory or
 * in a file written atomically, so a restarted agent process resumes where it stopped.
 *
 *   const c = await openConsumer(h, "(queries ?a ?q)", h.channel, fileCursorStore("./atlas.cursor.json"));
 *   const { added } = await sync(c); // the new queries since the last sync
 */
import { writeFile, rename, readFile, open as openFile } from "node:fs/promises";
import { dirname, basename, join } from "node:path";
import { ChannelError } from "./errors.js";
import { coneOf, type AgentHandle } from "./channel.js";
import { NODE_LOST_TYPES } from "./pollloop.js";
import type { ContextName, FeedEvent, FeedAdded, FeedRemoved, Handle, Seq } from "./medium.js";

/** Where a consumer stands: its feed token, the last seq folded, and its view (handle -> sentence). */
export interface CursorPosition {
  token: string;
  cursor: Seq;
  view: [Handle, string][];
}

export interface CursorStore {
  read(): Promise<CursorPosition | undefined>;
  write(position: CursorPosition): Promise<void>;
}

/** A CursorStore in memory (the default; lost with the process). */
export function memoryCursorStore(initial?: CursorPosition): CursorStore {
  let pos = initial ? structuredClone(initial) : undefined;
  return {
    read: async () => (pos ? structuredClone(pos) : undefined),
    write: async (p) => {
      pos = structuredClone(p);
    },
  };
}

/**
 * A CursorStore in a JSON file. Each write goes to a temp file in the same directory, is
 * fsynced, then renamed over the old file: a crash leaves the old position or the new one,
 * never a torn file. A missing file reads as "no position"; a file that is not a position
 * is refused `bad-cursor-file` (never silently replaced).
 */
export function fileCursorStore(path: string): CursorStore {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  return {
    async read() {
      let text: string;
      try {
        text = await readFile(path, "utf8");
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw e;
      }
      let p: unknown;
      try {
        p = JSON.parse(text);
      } catch {
        throw new ChannelError("bad-cursor-file", `${path} is not JSON`);
      }
      if (!isPosition(p)) throw new ChannelError("bad-cursor-file", `${path} does not hold a cursor position ({token, cursor, view})`);
      return p;
    },
    async write(p) {
      await writeFile(tmp, JSON.stringify(p));
      const fh = await openFile(tmp, "r");
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, path);
    },
  };
}

function isPosition(p: unknown): p is CursorPosition {
  if (!p || typeof p !== "object") return false;
  const o = p as Record<string, unknown>;
  return typeof o.token === "string" && Number.isSafeInteger(o.cursor) && Array.isArray(o.view) && o.view.every((e) => Array.isArray(e) && typeof e[0] === "number" && typeof e[1] === "string");
}

export interface Consumer {
  readonly handle: AgentHandle;
  readonly goal: string;
  readonly context: ContextName;
  readonly store: CursorStore;
  /** handle -> sentence of every sentex in the view. */
  readonly view: Map<Handle, string>;
  position: { token: string; cursor: Seq } | undefined;
}

/**
 * A consumer of `goal` in `context`, resuming from the store's position when it holds one
 * (the view comes back with it). Nothing is read from the medium until the first sync.
 */
export async function openConsumer(h: AgentHandle, goal: string, context: ContextName, store: CursorStore = memoryCursorStore()): Promise<Consumer> {
  const saved = await store.read();
  return {
    handle: h,
    goal,
    context,
    store,
    view: new Map(saved?.view ?? []),
    position: saved ? { token: saved.token, cursor: saved.cursor } : undefined,
  };
}

/** The view's sentences, sorted and distinct (two contexts may hold the same sentence). */
export const viewOf = (c: Consumer): string[] => [...new Set(c.view.values())].sort();

/**
 * The snapshot: the believed sentexes matching the goal in the contexts `context` sees.
 * Read with match over the cone rather than query: the same sentences (pinned by a test),
 * but each with its handle, so a sentence two agents hold leaves the view only when both
 * copies are gone.
 */
export async function snapshot(h: AgentHandle, goal: string, context: ContextName): Promise<Map<Handle, string>> {
  const [cone, hits] = await Promise.all([coneOf(h.medium, context), h.medium.match(goal, "?ctx")]);
  const view = new Map<Handle, string>();
  for (const s of hits) if (cone.has(s.context)) view.set(s.handle, s.sentence);
  return view;
}

export type ResnapshotReason = "bootstrap" | "lagged" | "unknown-subscription" | "bad-cursor";

export interface SyncOptions {
  /** Most events per poll (default 1000). */
  limit?: number;
  /** Called (and awaited) with each folded event before the cursor past it is stored: at-least-once processing. */
  onEvent?: (ev: FeedEvent) => void | Promise<void>;
}

export interface SyncResult {
  /** Entries folded in by this sync (not those a snapshot brought). */
  added: FeedAdded[];
  removed: FeedRemoved[];
  /** Events folded. */
  events: number;
  /** Why the view was re-read from a snapshot during this sync, in order. */
  resnapshots: ResnapshotReason[];
  cursor: Seq;
}

/** Re-snapshots in one sync before it gives up (each needs a fresh failure of the feed). */
export const MAX_RESNAPSHOTS_PER_SYNC = 4;
/** Feeds re-opened on another node in one sync (the token's node lost) before it gives up. */
export const MAX_REOPENS_PER_SYNC = 4;

/**
 * Fold everything after the consumer's cursor into its view and store the position after
 * every poll. Non-blocking (waitMs 0): it returns once a poll answers no events and does not
 * move the cursor. Idempotent when nothing moved.
 */
export async function sync(c: Consumer, opts: SyncOptions = {}): Promise<SyncResult> {
  const m = c.handle.medium;
  const result: SyncResult = { added: [], removed: [], events: 0, resnapshots: [], cursor: c.position?.cursor ?? 0 };
  const persist = () => c.store.write({ token: c.position!.token, cursor: c.position!.cursor, view: [...c.view] });

  const resnapshot = async (reason: ResnapshotReason, keepToken: { token: string; cursor: Seq } | undefined) => {
    if (result.resnapshots.length >= MAX_RESNAPSHOTS_PER_SYNC) {
      throw new ChannelError(reason, `catch-up re-snapshotted ${MAX_RESNAPSHOTS_PER_SYNC} times in one sync and the feed still answers ${reason}`);
    }
    result.resnapshots.push(reason);
    // Open the feed first, then read: every change after the feed's cursor is folded onto a
    // snapshot taken at or after it, which converges (the last change to each sentex wins).
    const pos = keepToken ?? (await m.feedOpen({ goal: c.goal, context: c.context }));
    const fresh = await snapshot(c.handle, c.goal, c.context);
    c.view.clear();
    for (const [k, v] of fresh) c.view.set(k, v);
    c.position = { token: pos.token, cursor: pos.cursor };
    await persist();
  };

  if (!c.position) await resnapshot("bootstrap", undefined);
  let reopens = 0;
  for (;;) {
    const pos = c.position!;
    let r;
    try {
      r = await m.feedPoll(pos.token, pos.cursor, { waitMs: 0, limit: opts.limit });
    } catch (e) {
      if (e instanceof ChannelError && (e.type === "unknown-subscription" || e.type === "bad-cursor")) {
        if (e.type === "bad-cursor") await m.feedClose(pos.token).catch(() => false);
        await resnapshot(e.type, undefined);
        continue;
      }
      if (e instanceof ChannelError && NODE_LOST_TYPES.has(e.type) && reopens++ < MAX_REOPENS_PER_SYNC) {
        // The token's node is unreachable: a cursor means the same on every node, so the
        // feed opens again from it wherever the medium reaches, and the view stays exact.
        const again = await m.feedOpen({ goal: c.goal, context: c.context, from: pos.cursor });
        c.position = { token: again.token, cursor: again.cursor };
        await persist();
        continue;
      }
      throw e;
    }
    if (r.lagged > 0) {
      // Events were lost before r.cursor: the snapshot replaces them, and folding goes on from r.cursor.
      await resnapshot("lagged", { token: pos.token, cursor: r.cursor });
      continue;
    }
    for (const ev of r.events) {
      for (const a of ev.added) c.view.set(a.handle, a.sentence);
      for (const d of ev.removed) c.view.delete(d.handle);
      result.added.push(...ev.added);
      result.removed.push(...ev.removed);
      result.events++;
      if (opts.onEvent) await opts.onEvent(ev);
    }
    const moved = r.cursor !== pos.cursor;
    c.position = { token: pos.token, cursor: r.cursor };
    if (moved || r.events.length > 0) await persist();
    // An answer with no events ends the sync, unless its cursor moved (a poll may stop at
    // its scan bound with nothing matched yet): then there may be more to read.
    if (r.events.length === 0 && !moved) break;
  }
  result.cursor = c.position!.cursor;
  return result;
}

/** Drop the consumer's feed at the daemon (the stored position then re-snapshots on its next sync). */
export async function closeConsumer(c: Consumer): Promise<void> {
  if (c.position) await c.handle.medium.feedClose(c.position.token).catch(() => false);
}
