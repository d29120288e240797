/**
 * Checkpoint segments of the SQLite store (store.ts): the rows of one large write (an
 * edit's: more than `checkpoint.eventRows` rows) kept in the checkpoint as `segment` rows of
 * at most `checkpoint.segmentRows` sentexes each, instead of one `sentex` row each. One row
 * of a few kilobytes costs the COMMIT a handful of pages where a thousand B-tree inserts
 * cost a thousand index searches and cell writes, and the sentences are already in memory
 * as the JSON encoder wants them.
 *
 * A body is the JSON of runs (runs.ts), as the event log writes an edit's entries (event.ts):
 * consecutive handles that share context, premise, creator, time and seq are one run, the
 * first handle, the sentences, then the shared fields; a run of one is the row itself.
 *
 *   encodeSegment(rows)   '[[7,["(rel E1 V1)","(rel E2 V2)"],"CxBench",1,"AgentAva",1700000000000,3]]'
 *   decodeSegment(body)   [[7,"CxBench","(rel E1 V1)",1,"AgentAva",1700000000000,3], [8, ...]]
 *
 * A segment row is never changed in place: before a row it holds is updated, the store
 * moves the whole segment's rows to the `sentex` table (`SegmentRanges.holding` finds it);
 * rows a group removes from it are dropped by writing the segment once more without them
 * (or deleting it, when none is left). So a segment only ever holds rows as they were
 * written, and its range may have holes: handles removed for good, never reused.
 */
import type { StoredRow, PremiseMark, RawRow } from "./write.js";
import { eachRow, RunWriter, type Row, type Run } from "./runs.js";

/** The body of a segment holding `rows` (in handle order): their runs, the premise mark as the tag. */
export function encodeSegment(rows: readonly StoredRow[]): string {
  const runs = new RunWriter();
  for (const r of rows) runs.push(r.handle, r.sentence, r.context, r.premise, r.creator, r.createdAt, r.seq);
  return JSON.stringify(runs.done());
}

/** The rows a segment body holds, in handle order, as the `sentex` table's rows read raw. */
export function decodeSegment(body: string): RawRow[] {
  const rows: RawRow[] = [];
  eachRow(JSON.parse(body) as (Row | Run)[], (handle, sentence, context, premise, creator, createdAt, seq) => rows.push([handle, context, sentence, premise as PremiseMark, creator, createdAt, seq]));
  return rows;
}

/**
 * The handle ranges of the stored segments, [first, last] each, kept in order of `first`.
 * Ranges never overlap: each segment holds rows of one write, whose handles are fresh.
 */
export class SegmentRanges {
  constructor(
    private readonly firsts: number[] = [],
    private readonly lasts: number[] = [],
  ) {}

  get size(): number {
    return this.firsts.length;
  }

  copy(): SegmentRanges {
    return new SegmentRanges(this.firsts.slice(), this.lasts.slice());
  }

  add(first: number, last: number): void {
    const i = this.after(first);
    if ((i > 0 && this.lasts[i - 1]! >= first) || (i < this.firsts.length && this.firsts[i]! <= last)) {
      throw new Error(`invariant: segment [${first}, ${last}] overlaps a stored one`);
    }
    this.firsts.splice(i, 0, first);
    this.lasts.splice(i, 0, last);
  }

  remove(first: number): void {
    const i = this.after(first) - 1;
    if (this.firsts[i] !== first) throw new Error(`invariant: no segment starts at ${first}`);
    this.firsts.splice(i, 1);
    this.lasts.splice(i, 1);
  }

  /** The first handle of the segment whose range holds `h`, if any. */
  holding(h: number): number | undefined {
    const i = this.after(h) - 1;
    return i >= 0 && this.lasts[i]! >= h ? this.firsts[i] : undefined;
  }

  /** The index of the first range starting after `h`. */
  private after(h: number): number {
    let lo = 0;
    let hi = this.firsts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.firsts[mid]! <= h) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** Two handle-ordered row streams with no handle in common, merged in handle order. */
export function* mergeByHandle(a: Iterable<RawRow>, b: Iterable<RawRow>): Generator<RawRow> {
  const ib = b[Symbol.iterator]();
  let nb = ib.next();
  for (const r of a) {
    while (!nb.done && nb.value[0] < r[0]) {
      yield nb.value;
      nb = ib.next();
    }
    if (!nb.done && nb.value[0] === r[0]) throw new Error(`invariant: handle ${r[0]} is both in a segment and in the sentex table`);
    yield r;
  }
  while (!nb.done) {
    yield nb.value;
    nb = ib.next();
  }
}

/** The rows of segments (bodies in order of their first handle), decoded one segment at a time. */
export function* segmentRows(bodies: readonly { body: string }[]): Generator<RawRow> {
  for (const { body } of bodies) yield* decodeSegment(body);
}
