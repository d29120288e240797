/**
 * The wire medium over several daemons of one cluster (real `koinii serve --store URL`
 * processes on one PostgreSQL database): writes find the writer through a follower's 307,
 * every attempt of one write carries one Idempotency-Key, reads and feeds stay on any node,
 * and when the writer is SIGKILLed writes resume on the promoted follower while a
 * subscription resumes on the surviving node, its consumer seeing every seq exactly once
 * and in order. With every node dead a write gives up `no-writer` after failoverMs.
 */
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnDaemon, spawnClusterDaemon, call, type Daemon } from "../daemon/helpers.js";
import { freshDatabase, pgQuery } from "../kb/pg.js";
import { eventually } from "./helpers.js";
import { join, openConsumer, sync, viewOf, wire, WRITE_PATHS, type FeedEvent, type WireMedium } from "../../src/channel/index.js";

const health = async (d: Daemon) => (await call(d.url, "GET", "/health")).body as { role: string; appliedSeq: number };

const eventSeqs = async (db: string) => (await pgQuery<{ seq: string }>(db, "select seq from event order by seq")).map((r) => Number(r.seq));

/**
 * An HTTP proxy in front of one daemon that records each request's path and Idempotency-Key.
 * The first `cut` write requests are forwarded and answered by the daemon, then the proxy
 * drops the connection instead of passing the answer on: a write applied whose answer was
 * lost, as when a node dies between its commit and its reply.
 */
async function recordingProxy(target: string, cut: number): Promise<{ url: string; seen: { path: string; key: string | undefined; replayed: string | undefined }[]; close(): Promise<void> }> {
  const seen: { path: string; key: string | undefined; replayed: string | undefined }[] = [];
  const t = new URL(target);
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const entry = { path: req.url!, key: req.headers["idempotency-key"] as string | undefined, replayed: undefined as string | undefined };
      seen.push(entry);
      const out = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: { ...req.headers, host: t.host } }, (answer: IncomingMessage) => {
        const body: Buffer[] = [];
        answer.on("data", (c: Buffer) => body.push(c));
        answer.on("end", () => {
          entry.replayed = answer.headers["idempotent-replayed"] as string | undefined;
          if (WRITE_PATHS.has(req.url!) && cut > 0) {
            cut--;
            req.socket.destroy();
            return;
          }
          res.writeHead(answer.statusCode!, answer.headers);
          res.end(Buffer.concat(body));
        });
      });
      out.on("error", () => req.socket.destroy());
      out.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))) };
}

/** A loopback URL nothing listens on. */
async function deadUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}`;
}

describe("wire({ urls })", () => {
  it("refuses a list that is not at least one http(s) origin, and a bound that is not a positive whole number of ms, as bad-connection", () => {
    const bad: unknown[] = [
      { urls: [] },
      {},
      { urls: ["ftp://127.0.0.1:4200"] },
      { urls: ["http://127.0.0.1:4200/v1"] },
      { urls: ["http://u:p@127.0.0.1:4200"] },
      { urls: ["not a url"] },
      { urls: [4200] },
      { url: "http://127.0.0.1:4200", urls: ["http://127.0.0.1:4201"] },
      { urls: ["http://127.0.0.1:4200"], failoverMs: 0 },
      { urls: ["http://127.0.0.1:4200"], failoverMs: 1.5 },
    ];
    for (const conn of bad) expect(() => wire(conn as never), JSON.stringify(conn)).toThrow(expect.objectContaining({ name: "ChannelError", type: "bad-connection" }));
    const m = wire({ urls: ["http://127.0.0.1:4200/", "http://127.0.0.1:4200", "https://node2.example:443"] });
    expect(m.nodes.listed).toEqual(["http://127.0.0.1:4200", "https://node2.example"]);
    expect(wire({ url: "http://127.0.0.1:4200" }).nodes.listed).toEqual(["http://127.0.0.1:4200"]);
  });
});

describe("a medium over a follower and a writer", () => {
  let db: string;
  let writer: Daemon;
  let follower: Daemon;
  beforeAll(async () => {
    db = await freshDatabase();
    writer = await spawnClusterDaemon(db);
    follower = await spawnClusterDaemon(db);
  });
  afterAll(async () => {
    await follower?.stop();
    await writer?.stop();
  });

  it("given [follower, writer], writes reach the writer through the follower's 307; a subscriber opened on the follower sees them", async () => {
    const m = wire({ urls: [follower.url, writer.url] });
    try {
      const seen: FeedEvent[] = [];
      const sub = await m.subscribe({ context: "CxRedirect" }, (ev) => void seen.push(ev), { waitMs: 1_000 });
      const w1 = await m.assert("(dog Rex)", "CxRedirect");
      expect(m.nodes.knownWriter).toBe(writer.url);
      const w2 = await m.edit({ add: [{ sentence: "(dog Fido)", context: "CxRedirect" }] });
      expect(w2.seq).toBe(w1.seq + 1);
      expect((await pgQuery(db, "select 1 from sentex where sentence in ('(dog Rex)', '(dog Fido)')")).length).toBe(2);
      await eventually(() => seen.length, (n) => n >= 2);
      expect(seen.map((e) => e.seq)).toEqual([w1.seq, w2.seq]);
      expect(seen.map((e) => e.added[0]!.sentence)).toEqual(["(dog Rex)", "(dog Fido)"]);
      // The feed was opened on the follower, and its polls stay there (its cursor moved there).
      const tokens = async (d: Daemon) => ((await call(d.url, "GET", "/v1/watchers")).body.watchers as { token: string; cursor: number }[]);
      expect((await tokens(follower)).find((x) => x.token === sub.token)?.cursor).toBeGreaterThanOrEqual(w2.seq);
      expect((await tokens(writer)).map((x) => x.token)).not.toContain(sub.token);
      await sub.stop();
    } finally {
      await m.close();
    }
  });

  it("every attempt of one write carries the same Idempotency-Key, and a new call a new key; the retry is answered as replayed and applied once", async () => {
    const proxy = await recordingProxy(writer.url, 1);
    const m = wire({ urls: [proxy.url] });
    try {
      const before = (await eventSeqs(db)).length;
      const w = await m.edit({ add: [{ sentence: "(cat Tom)", context: "CxIdem" }] });
      const writes = proxy.seen.filter((s) => s.path === "/v1/edit");
      expect(writes.length).toBe(2); // the first answer was cut: the medium sent the write again
      expect(writes[0]!.key).toMatch(/^[\w-]{16,}$/);
      expect(writes[1]!.key).toBe(writes[0]!.key);
      // The daemon knows the key: the retry was answered from the first application.
      expect(writes[1]!.replayed).toBe("true");
      expect((await eventSeqs(db)).length).toBe(before + 1);
      expect((await eventSeqs(db)).at(-1)).toBe(w.seq);
      await m.assert("(cat Felix)", "CxIdem");
      const next = proxy.seen.filter((s) => s.path === "/v1/assert");
      expect(next.length).toBe(1);
      expect(next[0]!.key).not.toBe(writes[0]!.key);
      // Reads carry no key.
      await m.match("(cat ?x)", "CxIdem");
      expect(proxy.seen.find((s) => s.path === "/v1/match")!.key).toBeUndefined();
    } finally {
      await m.close();
      await proxy.close();
    }
  });
});

describe("failover through one medium", () => {
  it("SIGKILL the writer while a loop of writes and a subscription run: writes resume on the promoted node, the subscription on the surviving one, and the consumer sees every seq exactly once, in order", async () => {
    const db = await freshDatabase();
    const a = await spawnClusterDaemon(db);
    const b = await spawnClusterDaemon(db);
    const m: WireMedium = wire({ urls: [b.url, a.url], failoverMs: 15_000 });
    try {
      const acked: number[] = [];
      let killedAt = 0;
      let resumedAt = 0;
      const write = async (i: number) => {
        acked.push((await m.assert(`(w N${i})`, "CxLoop")).seq);
        if (killedAt && !resumedAt) resumedAt = Date.now();
      };
      const h = await join(m, "CxLoop", "AgentWatcher");
      await write(0);
      expect(m.url).toBe(a.url); // the writer answered last: the feeds open there
      const consumer = await openConsumer(h, "(w ?x)", "CxLoop");
      expect(viewOf(consumer)).toEqual([]);
      await sync(consumer);
      expect(viewOf(consumer)).toEqual(["(w N0)"]);
      const seen: number[] = [];
      const errors: unknown[] = [];
      const sub = await m.subscribe({ context: "CxLoop" }, (ev) => void seen.push(ev.seq), { waitMs: 1_000, onError: (e) => errors.push(e) });
      const firstToken = sub.token;

      let i = 1;
      let killed = false;
      const loop = (async () => {
        while (!killed || acked.length < 40) await write(i++);
      })();
      await eventually(() => acked.length, (n) => n >= 20, 3_000);
      const killedSeq = acked.at(-1)!;
      killedAt = Date.now();
      await a.stop("SIGKILL");
      killed = true;
      await loop;
      console.log(`failover through one medium: ${acked.length} writes acknowledged, ${acked.filter((s) => s > killedSeq).length} after the SIGKILL; the first of them ${resumedAt - killedAt} ms after it (lease 2000 ms)`);

      expect(await health(b)).toMatchObject({ role: "writer" });
      expect(m.nodes.knownWriter).toBe(b.url);
      const last = acked.at(-1)!;
      await eventually(() => seen.at(-1)!, (s) => s >= last, 3_000);
      expect(sub.token).not.toBe(firstToken); // re-watched on the surviving node
      await sub.stop();
      expect(errors).toEqual([]);

      const log = await eventSeqs(db);
      expect(log).toEqual(Array.from({ length: log.length }, (_, k) => k + 1));
      // Every event after the subscription opened (after acked[0]), none twice, in order.
      expect(seen).toEqual(log.filter((s) => s > acked[0]!));
      for (const s of acked.slice(1)) expect(seen).toContain(s);
      expect(new Set(acked).size).toBe(acked.length);

      // The catch-up consumer's token was on the dead node: its next sync re-opens the feed
      // from its cursor on the surviving node, without a re-snapshot, and its view is exact.
      const caught = await sync(consumer);
      expect(caught.resnapshots).toEqual([]);
      expect(caught.events).toBe(acked.length - 1);
      expect(viewOf(consumer)).toEqual(Array.from({ length: acked.length }, (_, k) => `(w N${k})`).sort());
    } finally {
      await m.close();
      await b.stop();
      await a.stop();
    }
  });

  it("with every node dead, a write gives up no-writer after failoverMs, and a read fails network at once", async () => {
    const m = wire({ urls: [await deadUrl(), await deadUrl()], failoverMs: 600 });
    try {
      const t0 = Date.now();
      await expect(m.assert("(x X)", "CxDead")).rejects.toMatchObject({ name: "ChannelError", type: "no-writer" });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(600);
      await expect(m.match("(x ?x)", "CxDead")).rejects.toMatchObject({ type: "network" });
    } finally {
      await m.close();
    }
  });
});
