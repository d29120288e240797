/**
 * A bounded FIFO of events ordered by seq: `push` past `maxEvents` drops the oldest and
 * hands it back, so the caller can count it as lost (style.md: a limit that is hit is said
 * out loud). Invariant: seqs strictly increase from oldest to newest.
 */
export interface Sequenced {
  seq: number;
}

export class Ring<T extends Sequenced> {
  private readonly slots: (T | undefined)[];
  private head = 0; // index of the oldest
  private count = 0;

  constructor(readonly maxEvents: number) {
    if (!Number.isSafeInteger(maxEvents) || maxEvents < 1) throw new RangeError(`maxEvents must be a positive integer, got ${maxEvents}`);
    this.slots = [];
  }

  get size(): number {
    return this.count;
  }

  /** Append `item`; returns the evicted oldest item when the ring was full. */
  push(item: T): T | undefined {
    const newest = this.at(this.count - 1);
    if (newest && newest.seq >= item.seq) throw new Error(`ring invariant: seq ${item.seq} after ${newest.seq}`);
    let evicted: T | undefined;
    if (this.count === this.maxEvents) {
      evicted = this.slots[this.head];
      this.slots[this.head] = undefined;
      this.head = (this.head + 1) % this.maxEvents;
      this.count--;
    }
    this.slots[(this.head + this.count) % this.maxEvents] = item;
    this.count++;
    return evicted;
  }

  /** Drop every item with seq <= `seq` (acknowledged by the reader). */
  dropThrough(seq: number): void {
    while (this.count > 0 && this.slots[this.head]!.seq <= seq) {
      this.slots[this.head] = undefined;
      this.head = (this.head + 1) % this.maxEvents;
      this.count--;
    }
  }

  /** Items with seq > `seq`, oldest first, at most `limit`. */
  after(seq: number, limit: number): T[] {
    const out: T[] = [];
    for (let i = 0; i < this.count && out.length < limit; i++) {
      const item = this.at(i)!;
      if (item.seq > seq) out.push(item);
    }
    return out;
  }

  /** How many items have seq > `seq`. */
  countAfter(seq: number): number {
    let n = 0;
    for (let i = this.count - 1; i >= 0 && this.at(i)!.seq > seq; i--) n++;
    return n;
  }

  private at(i: number): T | undefined {
    return i < 0 || i >= this.count ? undefined : this.slots[(this.head + i) % this.maxEvents];
  }
}
