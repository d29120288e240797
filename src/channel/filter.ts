/**
 * The local medium's in-process watch filter: the daemon's own (src/feed/filter.ts), so the
 * two media cannot drift apart. Refusals keep their type (`not-watchable`, `bad-request`,
 * `naming`, `parse-error`) as ChannelErrors, as they would over the wire.
 */
import type { Kb, FeedEvent as KbFeedEvent } from "../kb/index.js";
import { compileWatch, filterEvent, EventView, type CompiledWatch } from "../feed/index.js";
import { ChannelError } from "./errors.js";
import type { FeedEvent } from "./medium.js";

export type LocalWatch = CompiledWatch;

export function compileLocalWatch(spec: { goal?: string; context?: string }): LocalWatch {
  try {
    return compileWatch(spec);
  } catch (e) {
    if (e instanceof Error && "type" in e && typeof e.type === "string") throw new ChannelError(e.type, e.message);
    throw e;
  }
}

/** The part of one event a watch delivers, or null when no entry is left. */
export function filterLocal(w: LocalWatch, ev: KbFeedEvent, kb: Kb): FeedEvent | null {
  const f = filterEvent(w, new EventView(ev), (viewer, seen) => kb.sees(viewer, seen));
  return f ? { seq: f.seq, added: f.added, removed: f.removed } : null;
}
