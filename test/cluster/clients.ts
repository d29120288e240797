/**
 * Clients of a cluster of daemons, as a failover test drives them: writer loops that log
 * every acknowledgement, and subscribers (SSE on any node, long poll on followers) that log
 * every seq they were delivered. Each keeps going across daemon deaths, elections and
 * restarts, and never decides anything itself: the test reads their logs and checks them.
 *
 *   const w = writerLoop("A", nodes);     // POST /v1/assert in a loop
 *   const s = sseSubscriber("S1", nodes); // GET /v1/stream, Last-Event-ID on reconnect
 *   ...
 *   await w.stop(); w.acks; w.redirects;  s.seen;
 *
 * `nodes` is read at every attempt, so a restarted daemon (new port) is found at once.
 */
import { sseChunks } from "../daemon/helpers.js";

/** The daemons as the clients see them now. */
export interface Nodes {
  /** Every daemon that is up (listening), in a stable order. */
  urls(): string[];
  /** The ones whose latest /health said `follower`. */
  followers(): string[];
}

export interface Ack {
  key: string;
  sentence: string;
  seq: number;
  handle: number;
  /** false: the KB already held the sentence (an earlier attempt of this write committed). */
  created: boolean;
  /** Date.now() when the acknowledgement arrived. */
  at: number;
  /** Date.now() when the request it answers was sent (after any redirect): the write committed after this. */
  sentAt: number;
}

/** Bounds of the clients, in milliseconds. */
export const CLIENT_LIMITS = {
  /** A request with no answer after this is abandoned and retried (a SIGSTOPped daemon never answers). */
  requestTimeoutMs: 2_000,
  /** Sleep before a retry after a 503, a connection error or a timeout. */
  retryMs: 50,
  /** Sleep between two writes of one loop. */
  writePauseMs: 15,
  /** An SSE stream with no byte (heartbeats included) for this long is dropped and resumed elsewhere. */
  streamStallMs: 3_000,
  /** A long poll's waitMs. */
  pollWaitMs: 1_000,
};

/** A subscriber moves to another node after this many events on one (resume on any node). */
export const HOP_EVERY_EVENTS = 40;

/** The context every write of the loops goes to, and the sentence of write `i` of loop `name`. */
export const WRITE_CONTEXT = "CxFailover";
export const sentenceOf = (name: string, i: number) => `(wrote Writer${name} N${i})`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pick(urls: string[], n: number): string | undefined {
  return urls.length ? urls[n % urls.length] : undefined;
}

export interface WriterLoop {
  acks: Ack[];
  /** 307 answers followed. */
  redirects: number;
  /** 503 answers, connection errors and timeouts, each followed by a retry. */
  retries: number;
  /** Answers no retry explains (a 4xx other than a redirect): the test requires none. */
  unexpected: string[];
  stop(): Promise<void>;
}

/**
 * POST /v1/assert in a loop, each write to a node picked in turn (so most land on a
 * follower first), with an `Idempotency-Key` that its retries reuse. 307: follow Location
 * (same method and body). 503, connection error, timeout: sleep, retry on the next node.
 */
export function writerLoop(name: string, nodes: Nodes, limits = CLIENT_LIMITS): WriterLoop {
  let stopped = false;
  const w: WriterLoop = { acks: [], redirects: 0, retries: 0, unexpected: [], stop: async () => ((stopped = true), await done) };
  let turn = name.charCodeAt(0);
  const done = (async () => {
    for (let i = 0; !stopped; i++) {
      const key = `writer-${name}-${i}`;
      const sentence = sentenceOf(name, i);
      const body = JSON.stringify({ sentence, context: WRITE_CONTEXT });
      let target: string | undefined;
      let hops = 0;
      while (!stopped) {
        target ??= pick(nodes.urls(), turn++)?.concat("/v1/assert");
        if (target === undefined || hops > 3) {
          (hops = 0), (target = undefined);
          await sleep(limits.retryMs);
          continue;
        }
        try {
          const sentAt = Date.now();
          const res = await fetch(target, { method: "POST", redirect: "manual", headers: { "content-type": "application/json", "idempotency-key": key }, body, signal: AbortSignal.timeout(limits.requestTimeoutMs) });
          const text = await res.text();
          if (res.status === 307) {
            w.redirects++;
            hops++;
            target = res.headers.get("location") ?? undefined;
            continue;
          }
          if (res.status === 200) {
            const a = JSON.parse(text) as { seq: number; handle: number; created: boolean };
            w.acks.push({ key, sentence, seq: a.seq, handle: a.handle, created: a.created, at: Date.now(), sentAt });
            break;
          }
          if (res.status >= 500) w.retries++;
          else w.unexpected.push(`${res.status} from ${target}: ${text}`);
        } catch {
          w.retries++;
        }
        target = undefined;
        hops = 0;
        await sleep(limits.retryMs);
      }
      await sleep(limits.writePauseMs);
    }
  })();
  return w;
}

export interface Subscriber {
  name: string;
  /** Every seq delivered, in delivery order (a correct run: 1, 2, 3, ...). */
  seen: number[];
  /** Sum of every `lagged` reported (a correct run: 0). */
  lagged: number;
  /** Connections made (the first one included). */
  connections: number;
  /** Distinct node URLs it was delivered events from. */
  servedBy: Set<string>;
  stop(): Promise<void>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function post(url: string, path: string, body: unknown, timeoutMs: number): Promise<{ status: number; body: any }> {
  const res = await fetch(url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

function subscriber(name: string, session: (s: Subscriber, url: string, signal: AbortSignal) => Promise<void>, choose: () => string[]): Subscriber {
  let stopped = false;
  const stop = new AbortController();
  const s: Subscriber = { name, seen: [], lagged: 0, connections: 0, servedBy: new Set(), stop: async () => ((stopped = true), stop.abort(), await done) };
  let turn = name.length;
  const done = (async () => {
    while (!stopped) {
      const url = pick(choose(), turn++);
      if (url !== undefined) {
        s.connections++;
        await session(s, url, stop.signal).catch(() => {});
      }
      if (!stopped) await sleep(CLIENT_LIMITS.retryMs);
    }
  })();
  return s;
}

/** Record one delivered event. */
function saw(s: Subscriber, url: string, seq: number): void {
  s.seen.push(seq);
  s.servedBy.add(url);
}

/**
 * Watch every event from the last seq it saw, stream it with `Last-Event-ID` set to that
 * seq; on any end (the node died, stalled, or HOP_EVERY_EVENTS passed) do it again on the
 * next node.
 */
export function sseSubscriber(name: string, nodes: Nodes): Subscriber {
  return subscriber(
    name,
    async (s, url, stopped) => {
      const last = () => s.seen.at(-1) ?? 0;
      const w = await post(url, "/v1/watch", { from: last() }, CLIENT_LIMITS.requestTimeoutMs);
      if (w.status !== 200) return;
      const abort = new AbortController();
      const onStop = () => abort.abort();
      stopped.addEventListener("abort", onStop);
      let stall: NodeJS.Timeout | undefined;
      const arm = () => (clearTimeout(stall), (stall = setTimeout(() => abort.abort(), CLIENT_LIMITS.streamStallMs)));
      try {
        arm();
        const res = await fetch(`${url}/v1/stream?token=${w.body.token}`, { headers: { "last-event-id": String(last()) }, signal: abort.signal });
        if (res.status !== 200) return;
        let here = 0;
        for await (const frames of sseChunks(res)) {
          arm();
          for (const f of frames) {
            if (f.event === "lagged") s.lagged += Number(f.data?.lagged ?? 1);
            else if (f.id !== undefined) saw(s, url, Number(f.id)), here++;
          }
          if (here >= HOP_EVERY_EVENTS) return;
        }
      } finally {
        clearTimeout(stall);
        stopped.removeEventListener("abort", onStop);
        abort.abort();
      }
    },
    () => nodes.urls(),
  );
}

/**
 * Watch every event from the last seq it saw, on a follower (any node while none is
 * known), then long-poll it with each answer's cursor; on any failure or after
 * HOP_EVERY_EVENTS, do it again on the next follower.
 */
export function pollSubscriber(name: string, nodes: Nodes): Subscriber {
  return subscriber(
    name,
    async (s, url, stopped) => {
      const w = await post(url, "/v1/watch", { from: s.seen.at(-1) ?? 0 }, CLIENT_LIMITS.requestTimeoutMs);
      if (w.status !== 200) return;
      let cursor = w.body.cursor as number;
      let here = 0;
      while (!stopped.aborted && here < HOP_EVERY_EVENTS) {
        const p = await post(url, "/v1/poll", { token: w.body.token, cursor, waitMs: CLIENT_LIMITS.pollWaitMs }, CLIENT_LIMITS.pollWaitMs + CLIENT_LIMITS.requestTimeoutMs);
        if (p.status !== 200) return;
        for (const e of p.body.events as { seq: number }[]) saw(s, url, e.seq), here++;
        s.lagged += p.body.lagged;
        cursor = p.body.cursor;
      }
    },
    () => (nodes.followers().length ? nodes.followers() : nodes.urls()),
  );
}
