/**
 * A feed event (K2: one write's belief diff) and its compact encoding in the SQLite event
 * log. The JSON of the whole record repeats every field name and the 71-character locator
 * per sentex; the compact form is a JSON array of positional values with the truth, the
 * strength, `derived` and `believed` packed into one flag number, and no locator (it is a
 * function of context, truth and sentence, recomputed when an event is read back, which
 * only a catch-up does).
 *
 * Added sentexes that follow each other with consecutive handles and the same context,
 * flags, creator, time and seq (an edit's entries) are one run: the first handle, the
 * sentences, and the shared fields once. An edit of 1 000 `(rel E123456 V123456)` logs about
 * 24 bytes an entry (67 as one row each; the whole-record JSON about ten times that).
 *
 *   encodeEvent(e)          '[[[7,"(dog Rex)","CxPets",8,null,1700000000000,7]],[]]'
 *                           '[[[7,["(dog Rex)","(dog Fido)"],"CxPets",8,null,1700000000000,7]],[]]'  (handles 7 and 8)
 *   decodeEvent(7, body)    the FeedEvent again, locators included
 *
 * A body that opens with `{` is the whole-record JSON that files written before the
 * compact encoding hold; it decodes as it always did, and so do bodies of one row per
 * added sentex.
 */
import type { Bounded, RemovalReason, Strength } from "./write.js";
import { locatorOf } from "./term.js";
import { eachRow, RunWriter, type Row, type Run } from "./runs.js";

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

/**
 * The locator of a record the write path built: computed only when the event leaves the KB
 * (`withLocators`: to its listeners, or to a store that logs whole records), since the
 * SQLite log does not hold it and a KB with no listener never sends the event anywhere.
 */
export const LOCATOR_UNSET = "";

/**
 * Fill the locator of every added record the write path left unset (LOCATOR_UNSET); each is
 * computed once per event. Returns the event.
 */
export function withLocators(event: FeedEvent): FeedEvent {
  for (const r of event.added) if (r.locator === LOCATOR_UNSET) r.locator = locatorOf(r.context, r.truth, r.sentence);
  return event;
}

const FALSE = 1;
const MONOTONIC = 2;
const DERIVED = 4;
const BELIEVED = 8;

type RemovedRow = [handle: number, sentence: string, context: string, reason: RemovalReason];
/** Added records as runs (runs.ts: the tag is the record's flags), then the removed ones. */
type Compact = [(Row | Run)[], RemovedRow[]] | [(Row | Run)[], RemovedRow[], Bounded];

const flagsOf = (r: SentexRecord): number =>
  (r.truth === "false" ? FALSE : 0) | (r.strength === "monotonic" ? MONOTONIC : 0) | (r.derived ? DERIVED : 0) | (r.believed ? BELIEVED : 0);

/** The event's log body (its seq is the row's key, so it is not repeated). */
export function encodeEvent(e: FeedEvent): string {
  const runs = new RunWriter();
  for (let i = 0; i < e.added.length; i++) {
    const r = e.added[i]!;
    runs.push(r.handle, r.sentence, r.context, flagsOf(r), r.creator, r.createdAt, r.seq);
  }
  const added = runs.done();
  const removed: RemovedRow[] = new Array(e.removed.length);
  for (let i = 0; i < e.removed.length; i++) {
    const r = e.removed[i]!;
    removed[i] = [r.handle, r.sentence, r.context, r.reason];
  }
  return JSON.stringify(e.bounded ? [added, removed, e.bounded] : [added, removed]);
}

function addedRecord(handle: number, sentence: string, context: string, flags: number, creator: string | null, createdAt: number, seq: number): SentexRecord {
  const truth = flags & FALSE ? "false" : "true";
  return {
    handle,
    sentence,
    context,
    truth,
    strength: flags & MONOTONIC ? "monotonic" : "default",
    creator,
    createdAt,
    seq,
    derived: (flags & DERIVED) !== 0,
    believed: (flags & BELIEVED) !== 0,
    locator: locatorOf(context, truth, sentence),
  };
}

/** The event `seq` logged as `body` (compact, or the whole-record JSON of older files). */
export function decodeEvent(seq: number, body: string): FeedEvent {
  if (body.startsWith("{")) return JSON.parse(body) as FeedEvent;
  const [added, removed, bounded] = JSON.parse(body) as Compact;
  const records: SentexRecord[] = [];
  eachRow(added, (handle, sentence, context, flags, creator, createdAt, rowSeq) => records.push(addedRecord(handle, sentence, context, flags, creator, createdAt, rowSeq)));
  const e: FeedEvent = {
    seq,
    added: records,
    removed: removed.map(([handle, sentence, context, reason]) => ({ handle, sentence, context, reason })),
  };
  if (bounded) e.bounded = bounded;
  return e;
}
