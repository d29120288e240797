/**
 * The change feed over the wire, against real daemon processes: standing queries, the
 * complete diff (premise retraction included), cursors, rings and lagged, long poll, SSE
 * with Last-Event-ID, `from` replay after a restart and past retention, every ceiling, idle
 * reap and graceful shutdown.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import net from "node:net";
import { spawnDaemon, call, readSse, type Daemon } from "./helpers.js";

const post = (d: Daemon, path: string, body: unknown) => call(d.url, "POST", path, body);
const head = async (d: Daemon): Promise<number> => (await call(d.url, "GET", "/health")).body.seq;
type Ev = { seq: number; added: { sentence: string; context: string; bindings?: Record<string, string> }[]; removed: { sentence: string; reason: string; bindings?: Record<string, string> }[] };

/** Poll until an answer has no events; every event, in order. */
async function drain(d: Daemon, token: string, cursor: number, limit?: number): Promise<{ events: Ev[]; cursor: number; lagged: number }> {
  const events: Ev[] = [];
  let lagged = 0;
  for (;;) {
    const a = await post(d, "/v1/poll", { token, cursor, limit });
    expect(a.body.ok).toBe(true);
    lagged += a.body.lagged;
    events.push(...a.body.events);
    cursor = a.body.cursor;
    if (a.body.events.length === 0) return { events, cursor, lagged };
  }
}

describe("feed semantics", () => {
  let d: Daemon;
  beforeAll(async () => {
    d = await spawnDaemon({ args: ["--max-events", "3", "--heartbeat-ms", "100"] });
  });
  afterAll(async () => {
    await d.stop();
  });

  it("a standing query delivers only matching entries from the watch context's cone, each with its bindings", async () => {
    await post(d, "/v1/assert", { sentence: "(genlCx CxZoo CxPets)", context: "CxZoo" });
    const w = await post(d, "/v1/watch", { goal: "(dog ?x)", context: "CxZoo" });
    await post(d, "/v1/edit", { add: [{ sentence: "(dog Fido)", context: "CxPets" }, { sentence: "(cat Tom)", context: "CxPets" }] });
    await post(d, "/v1/assert", { sentence: "(dog Stray)", context: "CxStreet" }); // not in CxZoo's cone
    await post(d, "/v1/assert", { sentence: "(cat Felix)", context: "CxPets" }); // does not match
    const a = await post(d, "/v1/poll", { token: w.body.token, cursor: w.body.cursor });
    expect(a.body.events).toHaveLength(1);
    expect(a.body.events[0].added).toEqual([expect.objectContaining({ sentence: "(dog Fido)", context: "CxPets", bindings: { "?x": "Fido" } })]);
    expect(a.body.cursor).toBe(await head(d)); // the last seq examined: the head, though nothing after matched
    const again = await post(d, "/v1/poll", { token: w.body.token, cursor: a.body.cursor });
    expect(again.body).toEqual({ ok: true, events: [], cursor: a.body.cursor, lagged: 0 });
  });

  it("a context watch delivers every entry that context can see; negated goals match negations only", async () => {
    const w = await post(d, "/v1/watch", { context: "CxQuiet" });
    const n = await post(d, "/v1/watch", { goal: "(not (sings ?who))", context: "CxQuiet" });
    await post(d, "/v1/assert", { sentence: "(sings Ann)", context: "CxQuiet" });
    await post(d, "/v1/assert", { sentence: "(not (sings Bob))", context: "CxQuiet" });
    await post(d, "/v1/assert", { sentence: "(sings Zed)", context: "CxLoud" });
    const all = await drain(d, w.body.token, w.body.cursor);
    expect(all.events.flatMap((e) => e.added.map((x) => x.sentence))).toEqual(["(sings Ann)", "(not (sings Bob))"]);
    const neg = await drain(d, n.body.token, n.body.cursor);
    expect(neg.events.flatMap((e) => e.added.map((x) => x.bindings))).toEqual([{ "?who": "Bob" }]);
  });

  it("every belief change is an event with its reason: premise retraction, cascade, unsupported", async () => {
    await post(d, "/v1/assert", { sentence: "(genlCx CxChat CxSpeechActs)", context: "CxChat" });
    const w = await post(d, "/v1/watch", { context: "CxChat" });
    const q = await post(d, "/v1/assert", { sentence: "(isRed Sky)", context: "CxChat" });
    await post(d, "/v1/assert", { sentence: "(implies (isRed ?x) (warm ?x))", context: "CxChat" });
    await post(d, "/v1/assert", { sentence: `(endorses AgentAtlas (sentexHandle ${q.body.handle}))`, context: "CxChat" });
    const r = await post(d, "/v1/retract", { handle: q.body.handle });
    const { events } = await drain(d, w.body.token, w.body.cursor);
    const last = events[events.length - 1]!;
    expect(last.seq).toBe(r.body.seq);
    const reasons = Object.fromEntries(last.removed.map((x) => [x.sentence, x.reason]));
    expect(reasons).toEqual({
      "(isRed Sky)": "retracted",
      [`(endorses AgentAtlas (sentexHandle ${q.body.handle}))`]: "cascade",
      "(warm Sky)": "unsupported",
    });
  });

  it("poll answers at most limit events and the cursor of the last one; polling on never repeats an event", async () => {
    const w = await post(d, "/v1/watch", { context: "CxLimit" });
    for (const n of ["One", "Two", "Three"]) await post(d, "/v1/assert", { sentence: `(n ${n})`, context: "CxLimit" });
    const a = await post(d, "/v1/poll", { token: w.body.token, cursor: w.body.cursor, limit: 2 });
    expect(a.body.events).toHaveLength(2);
    expect(a.body.cursor).toBe(a.body.events[1].seq);
    const rest = await drain(d, w.body.token, a.body.cursor);
    expect(rest.events.map((e) => e.seq)).toEqual([a.body.events[1].seq + 1]);
    const tooMany = await post(d, "/v1/poll", { token: w.body.token, cursor: rest.cursor, limit: 10_001 });
    expect([tooMany.status, tooMany.body.type]).toEqual([400, "bad-request"]);
  });

  it("a ring keeps the newest maxEvents; what fell off is counted in lagged, once", async () => {
    const w = await post(d, "/v1/watch", { context: "CxRing" });
    const seqs: number[] = [];
    for (let i = 0; i < 5; i++) seqs.push((await post(d, "/v1/assert", { sentence: `(tick T${i})`, context: "CxRing" })).body.seq);
    const a = await post(d, "/v1/poll", { token: w.body.token, cursor: w.body.cursor });
    expect(a.body.lagged).toBe(2);
    expect(a.body.events.map((e: Ev) => e.seq)).toEqual(seqs.slice(2));
    const b = await post(d, "/v1/poll", { token: w.body.token, cursor: a.body.cursor });
    expect(b.body.lagged).toBe(0);
  });

  it("a lost answer can be fetched again from the same cursor (events are held until the next cursor acknowledges them)", async () => {
    const w = await post(d, "/v1/watch", { context: "CxRetry" });
    await post(d, "/v1/assert", { sentence: "(x One)", context: "CxRetry" });
    const a = await post(d, "/v1/poll", { token: w.body.token, cursor: w.body.cursor });
    const b = await post(d, "/v1/poll", { token: w.body.token, cursor: w.body.cursor });
    expect(b.body.events).toEqual(a.body.events);
  });

  it("a long poll parks until an event arrives, and the write is not held by it", async () => {
    const w = await post(d, "/v1/watch", { goal: "(wake ?x)", context: "CxPark" });
    const parked = post(d, "/v1/poll", { token: w.body.token, cursor: w.body.cursor, waitMs: 20_000 });
    await new Promise((r) => setTimeout(r, 100));
    const write = await post(d, "/v1/assert", { sentence: "(wake Up)", context: "CxPark" });
    expect(write.body.ok).toBe(true);
    const a = await parked;
    expect(a.body.events.map((e: Ev) => e.seq)).toEqual([write.body.seq]);
  });

  it("unwatch answers a parked poll unknown-subscription", async () => {
    const w = await post(d, "/v1/watch", {});
    const parked = post(d, "/v1/poll", { token: w.body.token, cursor: w.body.cursor, waitMs: 20_000 });
    await new Promise((r) => setTimeout(r, 100));
    await post(d, "/v1/unwatch", { token: w.body.token });
    const a = await parked;
    expect([a.status, a.body.type]).toEqual([400, "unknown-subscription"]);
  });

  it("SSE: headers at once, heartbeats, one data per event with id = seq, and Last-Event-ID resumes after that seq", async () => {
    const w = await post(d, "/v1/watch", { context: "CxSse" });
    const res = await fetch(`${d.url}/v1/stream?token=${w.body.token}&cursor=${w.body.cursor}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const s1 = (await post(d, "/v1/assert", { sentence: "(s One)", context: "CxSse" })).body.seq;
    const s2 = (await post(d, "/v1/assert", { sentence: "(s Two)", context: "CxSse" })).body.seq;
    const frames = await readSse(res, (f) => f.filter((x) => x.id).length >= 2 && f.some((x) => x.comment.includes("heartbeat")));
    const data = frames.filter((f) => f.id);
    expect(data.map((f) => [Number(f.id), f.data.seq])).toEqual([[s1, s1], [s2, s2]]);
    const s3 = (await post(d, "/v1/assert", { sentence: "(s Three)", context: "CxSse" })).body.seq;
    const res2 = await fetch(`${d.url}/v1/stream?token=${w.body.token}&cursor=${w.body.cursor}`, { headers: { "last-event-id": String(s1) } });
    const resumed = await readSse(res2, (f) => f.filter((x) => x.id).length >= 2);
    expect(resumed.filter((f) => f.id).map((f) => f.data.seq)).toEqual([s2, s3]);
  });

  it("SSE says event: lagged with the count when the ring overflowed", async () => {
    const w = await post(d, "/v1/watch", { context: "CxSseLag" });
    for (let i = 0; i < 5; i++) await post(d, "/v1/assert", { sentence: `(t N${i})`, context: "CxSseLag" });
    const res = await fetch(`${d.url}/v1/stream?token=${w.body.token}&cursor=${w.body.cursor}`);
    const frames = await readSse(res, (f) => f.filter((x) => x.id).length >= 3);
    expect(frames.find((f) => f.event === "lagged")?.data).toEqual({ lagged: 2 });
  });

  it("SSE refuses an unknown token or a bad cursor as JSON before any event", async () => {
    const a = await call(d.url, "GET", "/v1/stream?token=sub_nope&cursor=0");
    expect([a.status, a.body.type]).toEqual([400, "unknown-subscription"]);
    const w = await post(d, "/v1/watch", {});
    const b = await call(d.url, "GET", `/v1/stream?token=${w.body.token}&cursor=abc`);
    expect([b.status, b.body.type]).toEqual([400, "bad-cursor"]);
  });
});

/** Send `request` on a raw TCP connection; resolve with the bytes read once `enough` says so. */
function rawExchange(url: string, request: string, enough: (bytes: Buffer) => boolean): Promise<Buffer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(port), hostname, () => sock.write(request));
    let got = Buffer.alloc(0);
    sock.on("data", (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (enough(got)) {
        sock.destroy();
        resolve(got);
      }
    });
    sock.on("error", reject);
    setTimeout(() => (sock.destroy(), reject(new Error(`timed out; read so far: ${got.toString()}`))), 10_000).unref();
  });
}

/** A chunked body split into its chunks (each checked: size line in hex, then exactly that many bytes, then CRLF). */
function chunksOf(body: Buffer): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < body.length) {
    const eol = body.indexOf("\r\n", at);
    if (eol < 0) break;
    const size = parseInt(body.subarray(at, eol).toString(), 16);
    expect(body.subarray(at, eol).toString()).toMatch(/^[0-9a-f]+$/);
    const data = body.subarray(eol + 2, eol + 2 + size);
    if (data.length < size) break; // the last chunk is still arriving
    expect(body.subarray(eol + 2 + size, eol + 4 + size).toString()).toBe("\r\n");
    out.push(data.toString());
    at = eol + 4 + size;
  }
  return out;
}

describe("SSE bytes on the wire", () => {
  let d: Daemon;
  beforeAll(async () => {
    d = await spawnDaemon({ args: ["--heartbeat-ms", "60000"] });
  });
  afterAll(async () => {
    await d.stop();
  });
  const host = () => new URL(d.url).host;
  const seqs = (text: string) => [...text.matchAll(/^id: ([0-9]+)\ndata: (.*)\n\n/gm)].map((m) => [Number(m[1]), JSON.parse(m[2]!).seq]);

  it("HTTP/1.1: the body is chunked, each event's frame exactly one chunk of its own byte length", async () => {
    const w = await post(d, "/v1/watch", { context: "CxWire" });
    const s: number[] = [];
    const writes = (async () => {
      await new Promise((r) => setTimeout(r, 100));
      for (const x of ['(w "Ünï ✓")', "(w Two)"]) {
        const a = await post(d, "/v1/assert", { sentence: x, context: "CxWire" });
        expect(a.body.ok).toBe(true);
        s.push(a.body.seq);
      }
    })();
    const bytes = await rawExchange(d.url, `GET /v1/stream?token=${w.body.token}&cursor=${w.body.cursor} HTTP/1.1\r\nHost: ${host()}\r\n\r\n`, (b) => (b.toString().match(/id: /g) ?? []).length >= 2 && b.toString().endsWith("\r\n"));
    await writes;
    const split = bytes.indexOf("\r\n\r\n");
    expect(bytes.subarray(0, split).toString().toLowerCase()).toContain("transfer-encoding: chunked");
    const chunks = chunksOf(bytes.subarray(split + 4));
    expect(chunks.map((c) => seqs(c))).toEqual([[[s[0], s[0]]], [[s[1], s[1]]]]);
  });

  it("HTTP/1.0: the body is the bare frames, ended by the connection", async () => {
    const w = await post(d, "/v1/watch", { context: "CxWire10" });
    const s: number[] = [];
    const writes = (async () => {
      await new Promise((r) => setTimeout(r, 100));
      for (const x of ["(w One)", "(w Two)"]) s.push((await post(d, "/v1/assert", { sentence: x, context: "CxWire10" })).body.seq);
    })();
    const bytes = await rawExchange(d.url, `GET /v1/stream?token=${w.body.token}&cursor=${w.body.cursor} HTTP/1.0\r\nHost: ${host()}\r\n\r\n`, (b) => (b.toString().match(/\n\n/g) ?? []).length >= 2 && b.toString().endsWith("\n\n"));
    await writes;
    const text = bytes.toString();
    const split = text.indexOf("\r\n\r\n");
    expect(text.slice(0, split).toLowerCase()).not.toContain("transfer-encoding");
    expect(seqs(text.slice(split + 4))).toEqual([[s[0], s[0]], [s[1], s[1]]]);
    expect(text.slice(split + 4)).toMatch(/^id: /);
  });
});

describe("SSE back-pressure over a real socket", () => {
  it("a reader that stops reading gets every event after it resumes, in order and once each; meanwhile they wait in the ring", async () => {
    // Atoms of 200 000 bytes: over the default --max-atom-bytes, so raised for this test.
    const d = await spawnDaemon({ args: ["--max-events", "1000", "--max-atom-bytes", "300000"] });
    try {
      const w = await post(d, "/v1/watch", { context: "CxBig" });
      const res = await fetch(`${d.url}/v1/stream?token=${w.body.token}&cursor=${w.body.cursor}`); // not read yet
      const big = "x".repeat(200_000);
      const seqs: number[] = [];
      for (let i = 0; i < 40; i++) seqs.push((await post(d, "/v1/assert", { sentence: `(blob B${i} "${big}")`, context: "CxBig" })).body.seq);
      // 8 MB of frames cannot all sit in the socket buffers: the stream left live mode and
      // the rest waits in the subscription's ring.
      const pending = /^koinii_feed_pending_events ([0-9]+)$/m.exec((await call(d.url, "GET", "/metrics")).text);
      expect(Number(pending?.[1])).toBeGreaterThan(0);
      // Read it all; once caught up, one more event must arrive live.
      let after: Promise<number> | undefined;
      const frames = await readSse(res, (f) => {
        const n = f.filter((x) => x.id).length;
        if (n === seqs.length && !after) after = post(d, "/v1/assert", { sentence: "(blob After)", context: "CxBig" }).then((a) => a.body.seq as number);
        return n > seqs.length;
      });
      expect(frames.some((f) => f.event === "lagged")).toBe(false);
      expect(frames.filter((f) => f.id).map((f) => Number(f.id))).toEqual([...seqs, await after]);
    } finally {
      await d.stop();
    }
  });
});

describe("ceilings", () => {
  let d: Daemon;
  beforeAll(async () => {
    d = await spawnDaemon({ args: ["--max-subscriptions", "2", "--max-parked", "1", "--max-wait-ms", "200"] });
  });
  afterAll(async () => {
    await d.stop();
  });

  it("one subscription past maxSubscriptions is 429 too-many-subscriptions; unwatch frees a slot", async () => {
    const a = await post(d, "/v1/watch", {});
    const b = await post(d, "/v1/watch", {});
    const c = await post(d, "/v1/watch", {});
    expect([c.status, c.body.type]).toEqual([429, "too-many-subscriptions"]);
    await post(d, "/v1/unwatch", { token: a.body.token });
    expect((await post(d, "/v1/watch", {})).body.ok).toBe(true);
    await post(d, "/v1/unwatch", { token: b.body.token });
  });

  it("one parked poll past maxParked is 429 too-many-waiters; a poll without waitMs is never refused; waitMs is capped", async () => {
    const list = (await call(d.url, "GET", "/v1/watchers")).body.watchers as { token: string; cursor: number }[];
    const w = list[0]!;
    const w2 = await post(d, "/v1/watch", {});
    const parked = post(d, "/v1/poll", { token: w.token, cursor: w.cursor, waitMs: 60_000 });
    await new Promise((r) => setTimeout(r, 50));
    const refused = await post(d, "/v1/poll", { token: w2.body.token, cursor: w2.body.cursor, waitMs: 1000 });
    expect([refused.status, refused.body.type]).toEqual([429, "too-many-waiters"]);
    expect((await post(d, "/v1/poll", { token: w2.body.token, cursor: w2.body.cursor })).body.ok).toBe(true);
    // capped at --max-wait-ms: the 60 s poll answers, empty, at the head
    const a = await parked;
    expect(a.body).toEqual({ ok: true, events: [], cursor: await head(d), lagged: 0 });
  });
});

describe("idle reap", () => {
  it("a subscription not polled within idleReapMs is reaped; its token is then unknown-subscription", async () => {
    const d = await spawnDaemon({ args: ["--idle-reap-ms", "200"] });
    try {
      const w = await post(d, "/v1/watch", {});
      const kept = await post(d, "/v1/watch", {});
      for (let i = 0; i < 8; i++) {
        await new Promise((r) => setTimeout(r, 100));
        await post(d, "/v1/poll", { token: kept.body.token, cursor: kept.body.cursor });
      }
      const a = await post(d, "/v1/poll", { token: w.body.token, cursor: w.body.cursor });
      expect([a.status, a.body.type]).toEqual([400, "unknown-subscription"]);
      expect((await post(d, "/v1/poll", { token: kept.body.token, cursor: kept.body.cursor })).body.ok).toBe(true);
    } finally {
      await d.stop();
    }
  });
});

describe("from: the durable log", () => {
  it("replays the same events after a restart, and tokens do not survive it", async () => {
    const d1 = await spawnDaemon();
    const start = await head(d1);
    const live = await post(d1, "/v1/watch", {});
    await post(d1, "/v1/assert", { sentence: "(a One)", context: "CxLog" });
    const two = await post(d1, "/v1/assert", { sentence: "(a Two)", context: "CxLog" });
    await post(d1, "/v1/retract", { handle: two.body.handle });
    const seen = await drain(d1, live.body.token, live.body.cursor);
    expect(await d1.stop()).toBe(0);
    const d2 = await spawnDaemon({ dataDir: d1.dataDir });
    try {
      expect(await head(d2)).toBe(start + 3);
      const old = await post(d2, "/v1/poll", { token: live.body.token, cursor: start });
      expect(old.body.type).toBe("unknown-subscription");
      const w = await post(d2, "/v1/watch", { from: start });
      expect(w.body.cursor).toBe(start);
      const replay = await drain(d2, w.body.token, w.body.cursor);
      expect(replay.events).toEqual(seen.events);
      expect(replay.lagged).toBe(0);
      // a standing query over the replay filters the same way
      const q = await post(d2, "/v1/watch", { goal: "(a ?x)", context: "CxLog", from: 0 });
      const qr = await drain(d2, q.body.token, q.body.cursor, 1);
      expect(qr.events.map((e) => [e.added.map((x) => x.bindings), e.removed.map((x) => x.bindings)])).toEqual([
        [[{ "?x": "One" }], []],
        [[{ "?x": "Two" }], []],
        [[], [{ "?x": "Two" }]],
      ]);
    } finally {
      await d2.stop();
    }
  });

  it("a from older than the retained log answers lagged > 0", async () => {
    const d = await spawnDaemon({ args: ["--feed-retention-events", "10", "--durability", "normal"] });
    try {
      // the log is pruned every 1024 writes, keeping the newest feedRetentionEvents
      const batch = 64;
      for (let i = 0; i < 1100; i += batch) {
        await Promise.all(Array.from({ length: Math.min(batch, 1100 - i) }, (_, j) => post(d, "/v1/assert", { sentence: `(n N${i + j})`, context: "CxRet" })));
      }
      const w = await post(d, "/v1/watch", { from: 0 });
      expect(w.body.lagged).toBeGreaterThan(0);
      const p = await post(d, "/v1/poll", { token: w.body.token, cursor: 0 });
      expect(p.body.lagged).toBeGreaterThan(0);
      expect(p.body.events[0].seq).toBeGreaterThan(1);
    } finally {
      await d.stop();
    }
  });
});

describe("graceful shutdown", () => {
  it("SIGTERM answers parked polls, closes streams, commits and exits 0; the data is intact after", async () => {
    const d = await spawnDaemon();
    const w = await post(d, "/v1/watch", {});
    const s = await post(d, "/v1/watch", {});
    const parked = post(d, "/v1/poll", { token: w.body.token, cursor: w.body.cursor, waitMs: 30_000 });
    const stream = await fetch(`${d.url}/v1/stream?token=${s.body.token}&cursor=${s.body.cursor}`);
    const a = await post(d, "/v1/assert", { sentence: "(last Word)", context: "CxBye" });
    await new Promise((r) => setTimeout(r, 100));
    const code = d.stop("SIGTERM");
    const frames = await readSse(stream, () => false); // ends when the daemon closes the stream
    expect(frames.filter((f) => f.id).map((f) => Number(f.id))).toEqual([a.body.seq]);
    expect((await parked).body.ok).toBe(true);
    expect(await code).toBe(0);
    const d2 = await spawnDaemon({ dataDir: d.dataDir });
    try {
      expect((await call(d2.url, "GET", `/v1/sentex/${a.body.handle}`)).body.sentex.sentence).toBe("(last Word)");
    } finally {
      await d2.stop();
    }
  });
});
