/**
 * The row changes an SQLite event row carries (store.ts): the log is the store of record,
 * the sentex and tombstone tables a checkpoint of it.
 *
 * A group's row changes between two of its events are appended to one flat array, each
 * change a tag and its values, and written as that array's JSON in the next event's
 * `changes` column (one `JSON.stringify` of primitives: the cheapest encoding V8 offers,
 * and `JSON.parse` the cheapest decoding):
 *
 *   INSERT  0, handle, context, sentence, premise, creator, createdAt, seq
 *   UPDATE  1, handle, premise, creator, createdAt
 *   DELETE  2, handle, reason, seq            (the row goes, its tombstone comes)
 *
 *   '[0,7,"CxPets","(dog Rex)",1,null,1700000000000,7]'
 *
 * When an event's row changes are exactly one insert per added record, in order, each with
 * the record's own values (`asAdded`: a premise's assert, most small edits), the column holds
 * AS_ADDED instead, and the open rebuilds the inserts from the event's body (`addedInserts`):
 * the same values are not encoded and written twice.
 *
 * `Pending` is the net effect, per handle, of every change since the last checkpoint: what
 * the open merges into the checkpoint's rows and what the next checkpoint writes to the
 * tables, without rereading the log. Its entries are never mutated (a change replaces the
 * entry), so `copy()` is a shallow Map copy a checkpoint may extend and drop.
 */
import type { StoredRow, PremiseMark, RawRow } from "./write.js";
import type { SentexRecord } from "./event.js";

export const INSERT = 0;
export const UPDATE = 1;
export const DELETE = 2;

/** Values per change, tag included, by tag. */
const WIDTH = [8, 5, 4] as const;

/** A flat change list (see the module comment). */
export type Changes = (number | string | null)[];

export interface Tombstone {
  reason: string;
  seq: number;
}

/** The net effect on one handle since the checkpoint. */
export interface Entry {
  /** The row as it stands, when it was inserted since the checkpoint. */
  readonly ins?: RawRow;
  /** premise, creator, createdAt: an update of a checkpoint row. */
  readonly upd?: readonly [PremiseMark, string | null, number];
  /** The first removal since the checkpoint (a tombstone is never replaced). */
  readonly del?: Tombstone;
  /** The handle's first change since the checkpoint inserted it: the checkpoint has no row for it. */
  readonly fresh: boolean;
}

export function pushInsert(out: Changes, r: StoredRow): void {
  out.push(INSERT, r.handle, r.context, r.sentence, r.premise, r.creator, r.createdAt, r.seq);
}

export function pushUpdate(out: Changes, handle: number, premise: number, creator: string | null, createdAt: number): void {
  out.push(UPDATE, handle, premise, creator, createdAt);
}

export function pushDelete(out: Changes, handle: number, reason: string, seq: number): void {
  out.push(DELETE, handle, reason, seq);
}

/** The `changes` of an event row whose row changes are its added records' inserts (never JSON: that opens with `[`). */
export const AS_ADDED = "+";

/** The premise mark a record's row has when the record alone describes it. */
const premiseOf = (r: SentexRecord): PremiseMark => (r.derived ? 0 : r.strength === "monotonic" ? 2 : 1);

/** Whether `c[from..]` is exactly one insert per record of `added`, in order, each with the record's values. */
export function asAdded(c: Changes, from: number, added: readonly SentexRecord[]): boolean {
  if (c.length - from !== added.length * WIDTH[INSERT]) return false;
  for (let k = 0, i = from; k < added.length; k++, i += WIDTH[INSERT]) {
    const r = added[k]!;
    if (c[i] !== INSERT || c[i + 1] !== r.handle || c[i + 2] !== r.context || c[i + 3] !== r.sentence || c[i + 4] !== premiseOf(r) || c[i + 5] !== r.creator || c[i + 6] !== r.createdAt || c[i + 7] !== r.seq) return false;
  }
  return true;
}

/** The row changes an AS_ADDED event stands for: its added records' inserts. */
export function addedInserts(added: readonly SentexRecord[]): Changes {
  const out: Changes = [];
  for (const r of added) out.push(INSERT, r.handle, r.context, r.sentence, premiseOf(r), r.creator, r.createdAt, r.seq);
  return out;
}

/** The tombstone a change list gives `handle`, if it removes it. */
export function tombstoneIn(c: Changes, handle: number): Tombstone | undefined {
  for (let i = 0; i < c.length; i += WIDTH[c[i] as 0 | 1 | 2]) {
    if (c[i] === DELETE && c[i + 1] === handle) return { reason: c[i + 2] as string, seq: c[i + 3] as number };
  }
  return undefined;
}

export class Pending {
  readonly map: Map<number, Entry>;
  /** Events and row changes since the checkpoint (the thresholds count them). */
  events = 0;
  rows = 0;

  constructor(map: Map<number, Entry> = new Map()) {
    this.map = map;
  }

  copy(): Pending {
    const p = new Pending(new Map(this.map));
    p.events = this.events;
    p.rows = this.rows;
    return p;
  }

  /** Fold `c[from..]` (whole changes) in, in order. */
  apply(c: Changes, from = 0): this {
    for (let i = from; i < c.length; ) {
      const tag = c[i] as 0 | 1 | 2;
      const h = c[i + 1] as number;
      const e = this.map.get(h);
      if (tag === INSERT) {
        const row: RawRow = [h, c[i + 2] as string, c[i + 3] as string, c[i + 4] as PremiseMark, c[i + 5] as string | null, c[i + 6] as number, c[i + 7] as number];
        this.map.set(h, { ins: row, del: e?.del, fresh: e ? e.fresh : true });
      } else if (tag === UPDATE) {
        const premise = c[i + 2] as PremiseMark;
        const creator = c[i + 3] as string | null;
        const createdAt = c[i + 4] as number;
        if (e?.ins) this.map.set(h, { ...e, ins: [h, e.ins[1], e.ins[2], premise, creator, createdAt, e.ins[6]] });
        else this.map.set(h, { del: e?.del, upd: [premise, creator, createdAt], fresh: e?.fresh ?? false });
      } else if (tag === DELETE) {
        this.map.set(h, { del: e?.del ?? { reason: c[i + 2] as string, seq: c[i + 3] as number }, fresh: e?.fresh ?? false });
      } else throw new Error(`invariant: row change tag ${String(tag)} at ${i}`);
      this.rows++;
      i += WIDTH[tag];
    }
    return this;
  }

  /** The rows inserted since the checkpoint and still there, in handle order. */
  inserted(): RawRow[] {
    const out: RawRow[] = [];
    for (const e of this.map.values()) if (e.ins) out.push(e.ins);
    return out.sort((a, b) => a[0] - b[0]);
  }

  /** How many rows the changes add to the checkpoint's count (negative: they remove more). */
  countDelta(): number {
    let d = 0;
    for (const e of this.map.values()) {
      const before = e.fresh ? 0 : 1;
      d += (e.ins ? 1 : e.del ? 0 : before) - before;
    }
    return d;
  }
}

/**
 * The rows as of the head: the checkpoint's (in handle order, streamed) with the pending
 * changes applied. Handles only grow, so fresh inserts mostly follow every checkpoint row;
 * the merge does not rely on it.
 */
export function* mergeRows(checkpoint: Iterable<RawRow>, pending: Pending): Generator<RawRow> {
  const fresh = pending.inserted();
  let i = 0;
  for (const r of checkpoint) {
    const h = r[0];
    while (i < fresh.length && fresh[i]![0] < h) yield fresh[i++]!;
    const e = pending.map.get(h);
    if (!e) yield r;
    else if (e.ins) {
      if (fresh[i]?.[0] === h) yield fresh[i++]!;
    } else if (!e.del && e.upd) yield [h, r[1], r[2], e.upd[0], e.upd[1], e.upd[2], r[6]];
    else if (!e.del) yield r;
  }
  while (i < fresh.length) yield fresh[i++]!;
}
