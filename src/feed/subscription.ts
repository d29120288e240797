/**
 * One subscription: what it watches, who owns it, where it started, its ring of undelivered
 * events and what it lost. Cursors are seqs (docs/wire.md): events with seq <= `logUpTo` are read
 * back from the durable log, newer ones from the ring.
 */
import { Ring } from "./ring.js";
import type { CompiledWatch, WireEvent } from "./filter.js";

export type WakeReason = "event" | "timeout" | "dropped" | "shutdown";

export class Subscription {
  /** Matching events the ring lost to overflow that no answer has reported yet. */
  lostCount = 0;
  /** The newest seq lost to overflow (0 = none pending). */
  lostUpTo = 0;
  /**
   * Losses the latest answer reported, told again to a poll that repeats an older cursor (a
   * lost answer) until a cursor passes `reportedUpTo`, so each loss is counted once per
   * answer cycle, never twice across cycles.
   */
  reportedCount = 0;
  reportedUpTo = 0;
  /** Highest cursor the reader has sent: everything at or below it was delivered. */
  ackSeq: number;
  /** The cursor the latest answer (poll or stream) handed out. */
  answeredSeq: number;
  /** Events at or below this seq come from the durable log; newer ones from the ring. */
  logUpTo: number;
  polledAt: number;
  streaming: { close(): void } | undefined;
  /** Set while a caught-up stream follows live: takes each matching event, returns true once written. */
  live: ((ev: WireEvent) => boolean) | undefined;
  private readonly waiters = new Set<(reason: WakeReason) => void>();
  readonly ring: Ring<WireEvent>;
  /** Subscriptions with equal keys (goal and context) share one filtered event per publish. */
  readonly filterKey: string;

  constructor(
    readonly token: string,
    readonly owner: string,
    readonly watch: CompiledWatch,
    /** The seq the subscription starts after (the head at watch, or `from`). */
    readonly startSeq: number,
    /** The head when it was registered: the live ring holds only newer events. */
    liveFrom: number,
    maxEvents: number,
    now: number,
  ) {
    this.ackSeq = startSeq;
    this.answeredSeq = startSeq;
    this.logUpTo = liveFrom;
    this.polledAt = now;
    this.ring = new Ring<WireEvent>(maxEvents);
    this.filterKey = `${watch.goal ?? ""}\u0000${watch.context ?? ""}`;
  }

  /**
   * File a matching event; returns true when the ring had to drop an event nobody was
   * answered. An evicted event the latest answer already carried (answered, not yet
   * acknowledged by the next cursor) is not lost: the durable log backs it from now on, so
   * a poll repeating an older cursor reads it back from there.
   */
  push(ev: WireEvent): boolean {
    const evicted = this.ring.push(ev);
    let lost = false;
    if (evicted && evicted.seq <= this.answeredSeq) {
      this.logUpTo = Math.max(this.logUpTo, evicted.seq); // the ring now holds only newer events
      if (this.logUpTo >= this.reportedUpTo) this.clearReported(); // a repeat reads those from the log now
    } else if (evicted) {
      this.lostCount++;
      this.lostUpTo = evicted.seq;
      lost = true;
    }
    this.wake("event");
    return lost;
  }

  /** The reader sent `cursor`: it holds everything up to it. */
  ack(cursor: number): void {
    if (cursor <= this.ackSeq) return;
    this.ackSeq = cursor;
    this.ring.dropThrough(cursor);
    if (cursor > this.logUpTo) this.logUpTo = cursor;
    if (cursor >= this.reportedUpTo) this.clearReported();
    if (cursor >= this.lostUpTo) {
      this.lostCount = 0;
      this.lostUpTo = 0;
    }
  }

  /**
   * The ring losses an answer from `cursor` that reaches the ring reports: those the latest
   * answer reported (when `cursor` repeats one below them) plus those not reported yet,
   * which become the reported ones. Every loss is newer than the durable-log part of the
   * answer and older than its ring part, so the answer's cursor passes all of them.
   */
  takeLost(cursor: number): number {
    const repeated = cursor < this.reportedUpTo ? this.reportedCount : 0;
    if (this.lostCount > 0) {
      this.reportedCount = repeated + this.lostCount;
      this.reportedUpTo = this.lostUpTo;
      this.lostCount = 0;
      this.lostUpTo = 0;
      return this.reportedCount;
    }
    return repeated;
  }

  private clearReported(): void {
    this.reportedCount = 0;
    this.reportedUpTo = 0;
  }

  get parked(): number {
    return this.waiters.size;
  }

  /** Wait until a matching event, the end of `waitMs`, an unwatch/reap, or shutdown (a parked poll). */
  park(waitMs: number): Promise<WakeReason> {
    return new Promise((resolve) => {
      const done = (reason: WakeReason) => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve(reason);
      };
      const timer = setTimeout(() => done("timeout"), waitMs);
      this.waiters.add(done);
    });
  }

  wake(reason: WakeReason): void {
    for (const w of [...this.waiters]) w(reason);
  }
}
