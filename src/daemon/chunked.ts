/**
 * Server-Sent-Event frames straight onto a stream's socket. Node's `res.write` frames each
 * write as an HTTP/1.1 chunk itself: per write, a byte count of the frame, four buffers
 * (size line, CRLF, frame, CRLF), a cork and a next-tick uncork. A frame shared by every
 * stream (one event, one Buffer) is framed once instead, and each stream's socket takes one
 * ready Buffer: one `write` per subscriber per event, nothing more.
 *
 *   res.writeHead(200, headers); res.flushHeaders();
 *   const frameFor = bodyFraming(res);  // chunked on HTTP/1.1, bare on a close-delimited body
 *   res.socket.write(frameFor(frame));
 *   res.end();                           // Node writes the last chunk as usual
 */
import type { ServerResponse } from "node:http";

const chunks = new WeakMap<Buffer, Buffer>();
const CRLF = Buffer.from("\r\n");

/** `frame` as one HTTP/1.1 chunk, built once per frame Buffer however many sockets it goes to. */
export function httpChunk(frame: Buffer): Buffer {
  // A chunk of size 0 ends the body: a frame is never empty.
  if (frame.length === 0) throw new Error("invariant: an empty SSE frame would end the chunked body");
  let c = chunks.get(frame);
  if (c === undefined) chunks.set(frame, (c = Buffer.concat([Buffer.from(`${frame.length.toString(16)}\r\n`), frame, CRLF])));
  return c;
}

/**
 * How a body written past `res` must be framed once its headers are sent: as chunks when
 * Node chose chunked transfer encoding (HTTP/1.1), as is when the body ends with the
 * connection (an HTTP/1.0 peer).
 */
export function bodyFraming(res: ServerResponse): (frame: Buffer) => Buffer {
  if (!res.headersSent) throw new Error("invariant: the headers must be sent before the body is written to the socket");
  return (res as ServerResponse & { chunkedEncoding: boolean }).chunkedEncoding ? httpChunk : (frame) => frame;
}
