/**
 * Failover and rejoining in place, with real daemons on one PostgreSQL database: a writer
 * SIGKILLed with the default lease is replaced as soon as PostgreSQL ends its session (the
 * writer lock), before its lease runs out; a writer paused past its lease is evicted, and on
 * waking becomes a follower of the new epoch in the same process; daemons cut off from
 * PostgreSQL (a proxy drops every connection) reconnect by themselves. After each: the log
 * holds 1..max, every acknowledged write is stored with its seq, epochs never go back.
 */
import { createServer, type Server, type Socket, connect } from "node:net";
import { describe, expect, it, onTestFailed } from "vitest";
import { spawnDaemon, spawnClusterDaemon, call, readSse, eventually, type Daemon } from "../daemon/helpers.js";
import { freshDatabase, pgQuery } from "../kb/pg.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


const health = async (d: Daemon) => (await call(d.url, "GET", "/health")).body as { seq: number; role: string; epoch: number; appliedSeq: number; reason?: string };
const applied = (d: Daemon, seq: number) => eventually(async () => ((await health(d)).appliedSeq >= seq ? true : undefined));
type Ack = { handle: number; seq: number };
const assert = (d: Daemon, sentence: string) => call(d.url, "POST", "/v1/assert", { sentence, context: "CxRejoin" });

/** The first write a daemon acknowledges itself (a redirect to a paused writer is not followed), retried every 20 ms. */
const firstAck = (d: Daemon, sentence: string) =>
  eventually(async () => {
    const r = await fetch(`${d.url}/v1/assert`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ sentence, context: "CxRejoin" }), redirect: "manual" });
    return r.status === 200 ? ((await r.json()) as Ack) : undefined;
  });

/** The log holds exactly 1..max, each acknowledged write is stored with its seq, and epochs never go back. */
async function checkLog(url: string, acked: Ack[]): Promise<{ seq: number; epoch: number }[]> {
  const log = (await pgQuery<{ seq: string; epoch: string }>(url, "select seq, epoch from event order by seq")).map((r) => ({ seq: Number(r.seq), epoch: Number(r.epoch) }));
  expect(log.map((r) => r.seq)).toEqual(Array.from({ length: log.length }, (_, i) => i + 1));
  for (let i = 1; i < log.length; i++) expect(log[i]!.epoch).toBeGreaterThanOrEqual(log[i - 1]!.epoch);
  const bySeq = new Map(log.map((r) => [r.seq, r.epoch]));
  for (const w of acked) {
    const [row] = await pgQuery<{ seq: string }>(url, "select seq from sentex where handle = $1", [w.handle]);
    expect(Number(row?.seq)).toBe(w.seq);
    expect(bySeq.has(w.seq)).toBe(true);
  }
  return log;
}

describe("failover through the writer lock", () => {
  it("SIGKILL the writer with the default lease: a follower writes before the dead writer's lease would have run out, with no gap", async () => {
    const url = await freshDatabase();
    const a = await spawnDaemon({ args: ["--store", url] }); // default lease (5000 ms)
    const b = await spawnDaemon({ args: ["--store", url] });
    try {
      const acked: Ack[] = [];
      for (let i = 0; i < 10; i++) acked.push((await assert(a, `(n K${i})`)).body);
      await applied(b, acked.at(-1)!.seq);
      // A's lease runs out no earlier than this (a renewal after this read only moves it later).
      const [old] = await pgQuery<{ expires_at: Date }>(url, "select expires_at from lease");
      const killedAt = Date.now();
      await a.stop("SIGKILL");
      const first = await firstAck(b, "(n AfterKill)");
      console.log(`failover (default lease 5000 ms): writer SIGKILL to the first acknowledged write on the new writer took ${Date.now() - killedAt} ms`);
      // By PostgreSQL's clock, the dead writer's lease has not run out yet: the lock, not the lease, elected B.
      const [lease] = await pgQuery<{ epoch: string; before_old_expiry: boolean }>(url, "select epoch, clock_timestamp() < $1 as before_old_expiry from lease", [old!.expires_at]);
      expect(lease).toEqual({ epoch: "2", before_old_expiry: true });
      expect((await health(b)).role).toBe("writer");
      expect(first.seq).toBe(acked.at(-1)!.seq + 1);
      acked.push(first);
      const log = await checkLog(url, acked);
      expect(acked.slice(0, -1).map((w) => log[w.seq - 1]!.epoch)).toEqual(Array(10).fill(1));
      expect(log.at(-1)).toEqual({ seq: first.seq, epoch: 2 });
    } finally {
      await b.stop();
      await a.stop();
    }
  });
});

describe("rejoining in place", () => {
  it("SIGSTOP the writer past its lease: a follower evicts it and writes; on SIGCONT the old writer follows the new epoch in the same process and port", async () => {
    const url = await freshDatabase();
    const a = await spawnClusterDaemon(url);
    const b = await spawnClusterDaemon(url);
    onTestFailed(() => console.log(`A:\n${a.stderr()}\nB:\n${b.stderr()}`));
    try {
      const acked: Ack[] = [];
      for (let i = 0; i < 10; i++) acked.push((await assert(a, `(n S${i})`)).body);
      // A subscriber on A: its stream ends when A rejoins, and resumes there with its cursor.
      const watched = await call(a.url, "POST", "/v1/watch", { context: "CxRejoin" });
      const streamEnded = fetch(`${a.url}/v1/stream?token=${watched.body.token}`).then((res) => readSse(res, () => false)); // resolves once the daemon ends the stream
      const aPid = a.proc.pid;
      await applied(b, acked.at(-1)!.seq);
      a.proc.kill("SIGSTOP");
      const first = await firstAck(b, "(n AfterStop)");
      acked.push(first);
      expect(await health(b)).toMatchObject({ role: "writer", epoch: 2 });
      // A's sessions were ended by the election (eviction): none remain with A's lock.
      for (let i = 0; i < 5; i++) acked.push((await assert(b, `(n B${i})`)).body);
      a.proc.kill("SIGCONT");
      const head = acked.at(-1)!.seq;
      await eventually(async () => {
        const h = await health(a);
        return h.role === "follower" && h.appliedSeq >= head ? h : undefined;
      });
      expect(a.proc.pid).toBe(aPid);
      expect(a.proc.exitCode).toBeNull();
      // The log line travels on stderr's pipe, not with the health answer: wait until it is read.
      await eventually(async () => (/rejoined/.test(a.stderr()) ? true : undefined));
      expect(a.stderr()).toMatch(/rejoined/);
      // The open stream was ended and the watch token expired: the subscriber resumes with its cursor.
      await streamEnded;
      expect((await call(a.url, "POST", "/v1/poll", { token: watched.body.token, cursor: 10 })).body.type).toBe("unknown-subscription");
      // Reads on A equal B's at the same seq.
      for (const q of [{ sentence: "(n ?x)", context: "CxRejoin" }]) {
        const [ra, rb] = [await call(a.url, "POST", "/v1/match", q), await call(b.url, "POST", "/v1/match", q)];
        expect(ra.body.asOf).toBe(rb.body.asOf);
        expect(ra.body).toEqual(rb.body);
      }
      // A write sent to A is redirected to B (fetch follows the 307).
      const redirected = await assert(a, "(n ViaA)");
      expect(redirected.status).toBe(200);
      acked.push(redirected.body);

      // The old stream ended; resumed on A with its cursor, every seq arrives once, in order.
      const rewatched = await call(a.url, "POST", "/v1/watch", { context: "CxRejoin", from: 0 });
      expect(rewatched.status).toBe(200);
      const resumed = await fetch(`${a.url}/v1/stream?token=${rewatched.body.token}`);
      const last = acked.at(-1)!.seq;
      const frames = await readSse(resumed, (f) => f.some((x) => Number(x.id) >= last));
      const ids = frames.filter((x) => x.id).map((x) => Number(x.id));
      expect(ids).toEqual([...new Set(ids)].sort((x, y) => x - y)); // once each, in order
      expect(acked.filter((w) => !ids.includes(w.seq))).toEqual([]);

      const log = await checkLog(url, acked);
      // Each epoch belongs to one daemon: A's writes carry 1, B's (and those A redirected to B) carry 2.
      const epochOf = new Map(log.map((r) => [r.seq, r.epoch]));
      expect(acked.slice(0, 10).map((w) => epochOf.get(w.seq))).toEqual(Array(10).fill(1));
      expect(acked.slice(10).map((w) => epochOf.get(w.seq))).toEqual(Array(acked.length - 10).fill(2));
    } finally {
      a.proc.kill("SIGCONT");
      await b.stop();
      await a.stop();
    }
  });

  it("every connection to PostgreSQL is cut and refused for 2 s: the daemons answer 503 rejoining meanwhile, reconnect by themselves, one writes, nothing acknowledged is lost", async () => {
    const url = await freshDatabase();
    const proxy = await tcpProxy(new URL(url));
    const viaProxy = Object.assign(new URL(url), { host: `127.0.0.1:${proxy.port}` }).toString();
    const a = await spawnClusterDaemon(viaProxy);
    const b = await spawnClusterDaemon(viaProxy);
    onTestFailed(() => console.log(`A:\n${a.stderr()}\nB:\n${b.stderr()}`));
    const pids = [a.proc.pid, b.proc.pid];
    try {
      const acked: Ack[] = [];
      for (let i = 0; i < 10; i++) acked.push((await assert(a, `(n P${i})`)).body);
      // A client writes all along (to either node; a follower redirects it).
      let writing = true;
      const loop = (async () => {
        for (let i = 0; writing; i++) {
          const r = await assert(i % 2 ? a : b, `(n Loop${i})`).catch(() => undefined);
          if (r?.status === 200) acked.push(r.body);
          else await sleep(20);
        }
      })();
      await sleep(200);
      proxy.cut();
      const seen = new Map<Daemon, string[]>([[a, []], [b, []]]);
      const cutUntil = Date.now() + 2_000;
      while (Date.now() < cutUntil) {
        for (const d of [a, b]) {
          const h = await call(d.url, "GET", "/health");
          if (h.status === 503) seen.get(d)!.push(h.body.reason);
        }
        await sleep(50);
      }
      proxy.restore();
      for (const d of [a, b]) expect(seen.get(d)!.some((r) => r.startsWith("rejoining: "))).toBe(true);
      const writer = await eventually(async () => {
        const roles = await Promise.all([a, b].map(async (d) => (await health(d)).role));
        return roles.filter((r) => r === "writer").length === 1 && roles.every((r) => r === "writer" || r === "follower") ? [a, b][roles.indexOf("writer")] : undefined;
      });
      const after = await firstAck(writer!, "(n AfterCut)");
      writing = false;
      await loop;
      acked.push(after);
      expect([a.proc.pid, b.proc.pid]).toEqual(pids);
      expect([a.proc.exitCode, b.proc.exitCode]).toEqual([null, null]);
      expect(acked.filter((w) => w.seq > 10).length).toBeGreaterThan(0);
      const log = await checkLog(url, acked);
      expect(log.at(-1)!.epoch).toBeGreaterThan(1);
      const head = log.at(-1)!.seq;
      for (const d of [a, b]) await applied(d, head);
    } finally {
      await b.stop();
      await a.stop();
      await proxy.close();
    }
  });
});

/** A TCP proxy to PostgreSQL that the test can cut (every connection dropped, new ones refused) and restore. */
async function tcpProxy(target: URL): Promise<{ port: number; cut(): void; restore(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let refusing = false;
  const server: Server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    cut() {
      refusing = true;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    restore() {
      refusing = false;
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}
