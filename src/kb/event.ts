/**
 * A feed event (K2: one write's belief diff) and its compact encoding in the SQLite event
 * log. The JSON of the whole record repeats every field name and the 71-character locator
 * per sentex; the compact form is a JSON array of positional values with the truth, the
 * strength, `derived` and `believed` packed into one flag number, and no locator (it is a
 * function of context, truth and sentence, recomputed when an event is read back, which
 * only a catch-up does). An edit of 1 000 logs about a quarter of the bytes.
 *
 *   encodeEvent(e)          '[[[7,"(dog Rex)","CxPets",8,null,1700000000000,7]],[]]'
 *   decodeEvent(7, body)    the FeedEvent again, locators included
 *
 * A body that opens with `{` is the whole-record JSON that files written before the
 * compact encoding hold; it decodes as it always did.
 */
import type { Bounded, RemovalReason, Strength } from "./engine.js";
import { locatorOf } from "./term.js";

export interface SentexRecord {
  handle: number;
  sentence: string;
  context: string;
  truth: "true" | "false";
  strength: Strength;
  creator: string | null;
  createdAt: number;
  seq: number;
  derived: boolean;
  believed: boolean;
  locator: string;
}

export interface RemovedEntry {
  handle: number;
  sentence: string;
  context: string;
  reason: RemovalReason;
}

/** One write's belief diff (K2): what entered belief and what left it, with why. */
export interface FeedEvent {
  seq: number;
  added: SentexRecord[];
  removed: RemovedEntry[];
  bounded?: Bounded;
}

const FALSE = 1;
const MONOTONIC = 2;
const DERIVED = 4;
const BELIEVED = 8;

type AddedRow = [handle: number, sentence: string, context: string, flags: number, creator: string | null, createdAt: number, seq: number];
type RemovedRow = [handle: number, sentence: string, context: string, reason: RemovalReason];
type Compact = [AddedRow[], RemovedRow[]] | [AddedRow[], RemovedRow[], Bounded];

/** The event's log body (its seq is the row's key, so it is not repeated). */
export function encodeEvent(e: FeedEvent): string {
  const added: AddedRow[] = new Array(e.added.length);
  for (let i = 0; i < e.added.length; i++) {
    const r = e.added[i]!;
    const flags = (r.truth === "false" ? FALSE : 0) | (r.strength === "monotonic" ? MONOTONIC : 0) | (r.derived ? DERIVED : 0) | (r.believed ? BELIEVED : 0);
    added[i] = [r.handle, r.sentence, r.context, flags, r.creator, r.createdAt, r.seq];
  }
  const removed: RemovedRow[] = new Array(e.removed.length);
  for (let i = 0; i < e.removed.length; i++) {
    const r = e.removed[i]!;
    removed[i] = [r.handle, r.sentence, r.context, r.reason];
  }
  return JSON.stringify(e.bounded ? [added, removed, e.bounded] : [added, removed]);
}

/** The event `seq` logged as `body` (compact, or the whole-record JSON of older files). */
export function decodeEvent(seq: number, body: string): FeedEvent {
  if (body.startsWith("{")) return JSON.parse(body) as FeedEvent;
  const [added, removed, bounded] = JSON.parse(body) as Compact;
  const e: FeedEvent = {
    seq,
    added: added.map(([handle, sentence, context, flags, creator, createdAt, rowSeq]) => {
      const truth = flags & FALSE ? "false" : "true";
      return {
        handle,
        sentence,
        context,
        truth,
        strength: flags & MONOTONIC ? "monotonic" : "default",
        creator,
        createdAt,
        seq: rowSeq,
        derived: (flags & DERIVED) !== 0,
        believed: (flags & BELIEVED) !== 0,
        locator: locatorOf(context, truth, sentence),
      };
    }),
    removed: removed.map(([handle, sentence, context, reason]) => ({ handle, sentence, context, reason })),
  };
  if (bounded) e.bounded = bounded;
  return e;
}
