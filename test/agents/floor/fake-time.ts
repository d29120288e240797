/** A manual clock and scheduler: time moves only when a test says so. */
import type { Clock, Scheduler, TimerHandle } from "../../../src/agents/floor/index.js";

export const WALL_EPOCH_MS = Date.UTC(2026, 7, 18, 12, 0, 0);

export class ManualTime implements Clock, Scheduler {
  #now = 0;
  #nextId = 0;
  #timers = new Map<number, { dueMs: number; id: number; fn: () => void }>();

  monotonicMs(): number {
    return this.#now;
  }

  wallMs(): number {
    return WALL_EPOCH_MS + this.#now;
  }

  schedule(delayMs: number, fn: () => void): TimerHandle {
    const id = this.#nextId++;
    this.#timers.set(id, { dueMs: this.#now + delayMs, id, fn });
    return { cancel: () => void this.#timers.delete(id) };
  }

  /** Delays of the timers still pending, from now. */
  pending(): number[] {
    return [...this.#timers.values()].map((t) => t.dueMs - this.#now).sort((a, b) => a - b);
  }

  /** Move to `targetMs`, firing due timers in due order (ties in scheduling order). */
  advanceTo(targetMs: number): void {
    if (targetMs < this.#now) throw new Error(`time cannot go back: ${targetMs} < ${this.#now}`);
    for (;;) {
      let next: { dueMs: number; id: number; fn: () => void } | undefined;
      for (const t of this.#timers.values()) {
        if (t.dueMs <= targetMs && (next === undefined || t.dueMs < next.dueMs || (t.dueMs === next.dueMs && t.id < next.id))) next = t;
      }
      if (next === undefined) break;
      this.#timers.delete(next.id);
      this.#now = next.dueMs;
      next.fn();
    }
    this.#now = targetMs;
  }

  advanceBy(ms: number): void {
    this.advanceTo(this.#now + ms);
  }
}
