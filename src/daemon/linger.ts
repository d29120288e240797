/**
 * Lingering close: how a connection whose request body is refused unread (413
 * `body-too-large`, answered from the headers) is closed.
 *
 * Closing at once would leave the rest of the body unread in the kernel, which then resets the
 * connection: a client still sending gets EPIPE, and one that had not read the 413 yet loses
 * it. So our side ends after the answer (a FIN, the answer first), what the client still sends
 * is read and dropped, and the socket is destroyed when the client closes its side or when
 * `ms` have passed, whichever comes first. The bound is the daemon's `requestTimeoutMs`: a
 * request's body may take that long to arrive, accepted or not. A daemon that stops cuts its
 * lingering connections at once: nothing more will be said on them.
 *
 * The connection is closing from the moment its 413 is decided: a request pipelined behind
 * the refused body (Node's parser reads on) is never served (`closing`), so no write runs
 * whose answer the client could not get, and would retry.
 *
 *   const lingering = new LingeringCloses(limits.requestTimeoutMs);
 *   lingering.add(req.raw.socket); // before the 413 with `Connection: close` goes out
 *   if (lingering.closing(req.raw.socket)) ... // a later request on it: not served
 *   lingering.stop();              // when the daemon closes
 */
import type { Socket } from "node:net";

export class LingeringCloses {
  /** Connections lingering now (destroyed on `stop`). */
  private readonly sockets = new Set<Socket>();
  /** Connections whose refused body closes them: nothing more on them is served. */
  private readonly refused = new WeakSet<Socket>();
  private stopped = false;

  constructor(private readonly ms: number) {}

  /**
   * Make the coming close of `socket` a lingering one. Node's HTTP server ends a `Connection:
   * close` exchange with `socket.destroySoon()`; this socket's own replaces it.
   */
  add(socket: Socket): void {
    this.refused.add(socket);
    if (socket.destroyed || this.stopped) return;
    const sockets = this.sockets;
    const ms = this.ms;
    socket.destroySoon = function lingeringClose(this: Socket): void {
      if (this.destroyed) return;
      sockets.add(this);
      const timer = setTimeout(() => this.destroy(), ms);
      this.once("close", () => (clearTimeout(timer), sockets.delete(this)));
      this.once("end", () => this.destroy()); // the client closed its side: nothing more to drop
      this.on("data", () => {}); // dropped, should the HTTP parser let go of the socket
      this.end();
    };
  }

  /** Whether `socket`'s connection is closing after a refused body (a request on it is not served). */
  closing(socket: Socket): boolean {
    return this.refused.has(socket);
  }

  /** The daemon is stopping: cut every lingering connection now, and linger no more. */
  stop(): void {
    this.stopped = true;
    for (const s of this.sockets) s.destroy();
  }
}
