/**
 * Time, injected. Nothing in this folder reads the system clock or sets a timer except the
 * two `system*` values below, which a caller passes in; tests pass a manual clock.
 */

export interface Clock {
  /** Monotonic milliseconds: the floor's decay, grace and heartbeat arithmetic. */
  monotonicMs(): number;
  /** Wall-clock epoch milliseconds: only for stamping records people read (never 1970). */
  wallMs(): number;
}

export interface TimerHandle {
  cancel(): void;
}

export interface Scheduler {
  /** Run `fn` once after `delayMs`. */
  schedule(delayMs: number, fn: () => void): TimerHandle;
}

export const systemClock: Clock = {
  monotonicMs: () => performance.now(),
  wallMs: () => Date.now(),
};

export const systemScheduler: Scheduler = {
  schedule(delayMs, fn) {
    const t = setTimeout(fn, delayMs);
    return { cancel: () => clearTimeout(t) };
  },
};
