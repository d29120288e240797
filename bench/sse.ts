/**
 * Reading a daemon's SSE stream (`/v1/stream`) and the benchmark's write markers, shared by
 * the subscriber processes (bench/fixtures/subscribers.ts) and the cluster bench's
 * in-process follower subscription (bench/cluster.ts).
 */
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";

/** A marked write's sentence: `(lat M<marker>)`. */
export const markedSentence = (marker: number): string => `(lat M${marker})`;
const marker = /\(lat M([0-9]+)\)/;

/** The markers of the sentences an event added. */
export function markersOf(ev: { added?: { sentence: string }[] }): number[] {
  const out: number[] = [];
  for (const a of ev.added ?? []) {
    const m = marker.exec(a.sentence);
    if (m) out.push(Number(m[1]));
  }
  return out;
}

/**
 * Reads SSE frames from `body` until it ends: each event's JSON to `onEvent`, each `lagged`
 * notice's count to `onLagged`. Frames are handled in the stream's own `data` callback, as
 * a pg client handles a NOTIFY in its socket's: no promise per chunk.
 */
export function readSse(body: Readable, onEvent: (ev: { added?: { sentence: string }[] }) => void, onLagged: (n: number) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const utf8 = new StringDecoder("utf8"); // a character cut between chunks waits for its rest
    body.on("data", (bytes: Buffer | string) => {
      const chunk = typeof bytes === "string" ? bytes : utf8.write(bytes);
      buf = buf.length === 0 ? chunk : buf + chunk;
      let from = 0;
      let end: number;
      while ((end = buf.indexOf("\n\n", from)) >= 0) {
        const at = buf.indexOf("data: ", from); // the frame's last line; its JSON may hold the same text
        if (at >= 0 && at < end) {
          const data = JSON.parse(buf.slice(at + 6, end)) as { lagged?: number; added?: { sentence: string }[] };
          if (buf.startsWith("event: lagged", from)) onLagged(data.lagged!);
          else onEvent(data);
        }
        from = end + 2;
      }
      if (from !== 0) buf = buf.slice(from);
    });
    body.once("end", resolve);
    body.once("error", reject);
  });
}
