/**
 * Whether more than one client is writing: the gate of the store's inline fsync (SQLite at
 * `full`, see store.ts and walsync.ts). A lone writer's WAL fsync runs on the event loop,
 * without the thread pool's handoff there and back; while another client has sent a write
 * within `windowMs`, its next request may be in a socket already, and a blocked loop would
 * hold it for the fsync, so the fsync goes to the thread pool and that request joins the
 * next group instead.
 *
 * Two numbers, not a table of clients: the newest write's socket and time, and the time of
 * the newest write from any other socket.
 *
 *   const writers = new RecentWriters(limits.loneWriterWindowMs); // 10 ms by default
 *   writers.saw(req.raw.socket);     // each write request
 *   store.gateInlineFsync?.(() => writers.several());
 */
import { performance } from "node:perf_hooks";

export class RecentWriters {
  /** The socket of the newest write and when it came. */
  private newestFrom: object | undefined;
  private newestAt = -Infinity;
  /** When a write last came from a socket other than `newestFrom`. */
  private otherAt = -Infinity;

  constructor(
    readonly windowMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(windowMs >= 0)) throw new RangeError(`loneWriterWindowMs must be a number of ms >= 0, got ${windowMs}`);
  }

  /** A write request arrived on `socket`. */
  saw(socket: object): void {
    if (socket !== this.newestFrom) {
      this.otherAt = this.newestAt;
      this.newestFrom = socket;
    }
    this.newestAt = this.now();
  }

  /** Whether two or more sockets sent a write within the window. */
  several(): boolean {
    return this.now() - this.otherAt <= this.windowMs;
  }
}
