/**
 * A subscription's callback queue: events are handed over in seq order, one callback at a
 * time (an async callback is awaited before the next event), always on a later turn than
 * the one that received them, so the poll loop (or the KB's publisher) never waits on a
 * callback. A throw goes to onError and the next event is still delivered. The queue is
 * bounded (`maxQueuedEvents`); what happens at the bound is the medium's choice (the wire
 * loop stops polling, the local listener drops the oldest and reports it as lagged).
 */
import type { EventCallback, FeedEvent } from "./medium.js";

export const DEFAULT_MAX_QUEUED_EVENTS = 1024;

export class Delivery {
  private readonly queue: FeedEvent[] = [];
  private running = false;
  private closed = false;
  private spaceWaiters: (() => void)[] = [];
  private lastSeq = 0;

  constructor(
    private readonly callback: EventCallback,
    private readonly onError: ((e: unknown) => void) | undefined,
    readonly maxQueuedEvents: number = DEFAULT_MAX_QUEUED_EVENTS,
  ) {
    if (!(maxQueuedEvents >= 1)) throw new RangeError("maxQueuedEvents must be at least 1");
  }

  get size(): number {
    return this.queue.length;
  }

  get full(): boolean {
    return this.queue.length >= this.maxQueuedEvents;
  }

  /** Queue one event. Seq must strictly increase across pushes (the total order, K2). */
  push(ev: FeedEvent): void {
    if (this.closed) return;
    if (ev.seq <= this.lastSeq) throw new Error(`delivery out of order: seq ${ev.seq} after ${this.lastSeq}`);
    this.lastSeq = ev.seq;
    this.queue.push(ev);
    if (!this.running) {
      this.running = true;
      setImmediate(() => void this.drain());
    }
  }

  /** Drop the oldest queued event (the local medium's overflow); true when one was dropped. */
  dropOldest(): boolean {
    const dropped = this.queue.shift() !== undefined;
    if (dropped) this.wakeSpace();
    return dropped;
  }

  /** Resolves once the queue is below its bound (or the delivery is closed). */
  waitForSpace(): Promise<void> {
    if (!this.full || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.spaceWaiters.push(resolve));
  }

  /** Deliver nothing more; queued events are dropped. */
  close(): void {
    this.closed = true;
    this.queue.length = 0;
    this.wakeSpace();
  }

  private wakeSpace(): void {
    const ws = this.spaceWaiters;
    this.spaceWaiters = [];
    for (const w of ws) w();
  }

  private async drain(): Promise<void> {
    while (!this.closed && this.queue.length > 0) {
      const ev = this.queue.shift()!;
      if (!this.full) this.wakeSpace();
      try {
        await this.callback(ev);
      } catch (e) {
        report(this.onError, e);
      }
    }
    this.running = false;
  }
}

/** Call a user hook; a hook that throws is not allowed to break the loop that called it. */
export function report(hook: ((e: unknown) => void) | undefined, e: unknown): void {
  if (!hook) return;
  try {
    hook(e);
  } catch {
    // an onError that throws has nowhere left to report to
  }
}
