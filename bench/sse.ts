/**
 * Reading a daemon's SSE stream (`/v1/stream`) and the benchmark's write markers, shared by
 * the subscriber processes (bench/fixtures/subscribers.ts) and the cluster bench's
 * in-process follower subscription (bench/cluster.ts).
 */

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

/** Reads SSE frames from `body` until it ends: each event's JSON to `onEvent`, each `lagged` notice's count to `onLagged`. */
export async function readSse(body: AsyncIterable<Buffer | Uint8Array | string>, onEvent: (ev: { added?: { sentence: string }[] }) => void, onLagged: (n: number) => void): Promise<void> {
  let buf = "";
  for await (const chunk of body) {
    buf += chunk.toString();
    let i: number;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = frame.split("\n").find((l) => l.startsWith("data: "));
      if (!data) continue;
      if (frame.includes("event: lagged")) onLagged((JSON.parse(data.slice(6)) as { lagged: number }).lagged);
      else onEvent(JSON.parse(data.slice(6)));
    }
  }
}
