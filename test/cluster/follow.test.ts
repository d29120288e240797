/**
 * A writer and a follower daemon on one PostgreSQL database (real processes, `koinii serve
 * --store URL`): the follower replays the writer's log and answers every read exactly as the
 * writer did at the same seq, redirects writes, resumes a feed from a cursor the writer
 * gave, and takes over when the writer is killed, with no gap in the log.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { spawnDaemon, spawnClusterDaemon, call, readSse, eventually, type Daemon } from "../daemon/helpers.js";
import { freshDatabase, pgQuery } from "../kb/pg.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


const health = async (d: Daemon) => (await call(d.url, "GET", "/health")).body as { seq: number; role: string; epoch: number; appliedSeq: number; lagMs: number };
const applied = (d: Daemon, seq: number) => eventually(async () => ((await health(d)).appliedSeq >= seq ? true : undefined));

/** A daemon on `url`, started after the previous one so the first is the writer. */

describe("a follower daemon", () => {
  let url: string;
  let writer: Daemon;
  let follower: Daemon;
  beforeAll(async () => {
    url = await freshDatabase();
    writer = await spawnClusterDaemon(url);
    follower = await spawnClusterDaemon(url);
  });
  afterAll(async () => {
    await follower?.stop();
    await writer?.stop();
  });

  it("reports its role, epoch, applied seq and lag; writes on the writer appear on it; a write sent to it is redirected to the writer", async () => {
    const w = await call(writer.url, "POST", "/v1/assert", { sentence: "(dog Muffet)", context: "CxPets" });
    expect(w.status).toBe(200);
    await applied(follower, w.body.seq);
    expect(await health(writer)).toMatchObject({ role: "writer", epoch: 1, appliedSeq: w.body.seq, lagMs: 0 });
    expect(await health(follower)).toMatchObject({ role: "follower", epoch: 0, appliedSeq: w.body.seq, lagMs: 0 });
    const m = await call(follower.url, "POST", "/v1/match", { sentence: "(dog ?x)", context: "CxPets" });
    expect(m.body).toMatchObject({ asOf: w.body.seq, sentexes: [{ handle: w.body.handle, sentence: "(dog Muffet)" }] });

    const redirected = await fetch(follower.url + "/v1/assert", { method: "POST", redirect: "manual", headers: { "content-type": "application/json" }, body: JSON.stringify({ sentence: "(dog Rex)", context: "CxPets" }) });
    expect(redirected.status).toBe(307);
    expect(redirected.headers.get("location")).toBe(writer.url + "/v1/assert");
    expect(await redirected.json()).toMatchObject({ ok: false, type: "not-writer", writer: writer.url });
    // fetch follows a 307 with the same method and body: the write lands on the writer.
    const followed = await call(follower.url, "POST", "/v1/assert", { sentence: "(dog Rex)", context: "CxPets" });
    expect(followed.status).toBe(200);
    expect(followed.body.seq).toBe(w.body.seq + 1);
    expect((await pgQuery(url, "select 1 from sentex where sentence = '(dog Rex)'")).length).toBe(1);
  });

  it("with no writer URL in the lease, a write sent to it is 503 no-writer with Retry-After", async () => {
    const [lease] = await pgQuery<{ url: string }>(url, "select url from lease");
    await pgQuery(url, "update lease set url = null");
    try {
      const r = await eventually(async () => {
        const a = await call(follower.url, "POST", "/v1/retract", { handle: 1 }, { headers: {} });
        return a.status === 503 ? a : undefined;
      });
      expect(r.body).toMatchObject({ ok: false, type: "no-writer" });
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    } finally {
      await pgQuery(url, "update lease set url = $1", [lease!.url]);
    }
  });

  it("for any program of writes, every read on the follower at seq N equals the writer's at seq N", async () => {
    const sentences = ["(dog Rex)", "(not (dog Rex))", "(dog Fido)", "(cat Tom)", "(implies (dog ?x) (animal ?x))", "(implies (cat ?x) (animal ?x))", "(genlCx CxZoo CxPets)", "(animal Tom)"];
    const contexts = ["CxPets", "CxZoo"];
    const add = fc.record({ sentence: fc.constantFrom(...sentences), context: fc.constantFrom(...contexts), strength: fc.constantFrom("default", "monotonic") });
    const op = fc.oneof(
      add.map((a) => ({ path: "/v1/assert", body: a as object })),
      fc.nat(40).map((h) => ({ path: "/v1/retract", body: { handle: h + 1 } as object })),
      fc.tuple(fc.array(add, { minLength: 1, maxLength: 3 }), fc.array(fc.nat(40), { maxLength: 2 })).map(([adds, rm]) => ({ path: "/v1/edit", body: { add: adds, remove: [...new Set(rm.map((h) => h + 1))] } as object })),
    );
    const reads = (maxHandle: number): [string, string, object | undefined][] => [
      ...contexts.flatMap((context) => ["(animal ?x)", "(dog ?x)", "(not (dog ?x))", "(cat ?x)"].map((goal): [string, string, object] => ["POST", "/v1/query", { goal, context }])),
      ["POST", "/v1/match", { sentence: "(dog ?x)", context: "?ctx" }],
      ["POST", "/v1/match", { sentence: "(animal ?x)", context: "CxZoo" }],
      ...contexts.map((context): [string, string, object] => ["POST", "/v1/contradictions", { context }]),
      ...Array.from({ length: maxHandle }, (_, i): [string, string, object | undefined][] => [
        ["POST", "/v1/why", { handle: i + 1 }],
        ["GET", `/v1/sentex/${i + 1}`, undefined],
      ]).flat(),
    ];
    let compared = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 6 }), async (program) => {
        for (const o of program) {
          const w = await call(writer.url, "POST", o.path, o.body);
          if (w.status !== 200 || w.body.seq === undefined) continue; // a refusal writes nothing
          const seq = (await health(writer)).appliedSeq; // nothing else writes: this is the seq both must be at
          await applied(follower, seq);
          const maxHandle = Number((await pgQuery<{ value: string }>(url, "select value from meta where key = 'next_handle'"))[0]!.value) - 1;
          for (const [method, path, body] of reads(maxHandle)) {
            const [a, b] = await Promise.all([call(writer.url, method, path, body), call(follower.url, method, path, body)]);
            expect(b.status).toBe(a.status);
            expect(b.body).toEqual(a.body);
            if (a.status === 200) expect(a.body.asOf).toBe(seq);
            compared++;
          }
        }
      }),
      { numRuns: 8 },
    );
    expect(compared).toBeGreaterThan(0);
  });

  it("a subscriber resumes on the follower with the writer's Last-Event-ID (and a poll cursor), and a follower behind that cursor waits for it", async () => {
    const watched = await call(writer.url, "POST", "/v1/watch", { context: "CxFeed" });
    const stream = await fetch(`${writer.url}/v1/stream?token=${watched.body.token}`);
    const seqs: number[] = [];
    for (const s of ["(bird Tweety)", "(bird Polly)"]) seqs.push((await call(writer.url, "POST", "/v1/assert", { sentence: s, context: "CxFeed" })).body.seq);
    const seen = await readSse(stream, (f) => f.filter((x) => x.id).length >= 2);
    const lastId = seen.filter((x) => x.id).at(-1)!.id!;
    expect(Number(lastId)).toBe(seqs[1]);

    // The follower is stopped while the writer commits more: when it resumes, our requests
    // reach it before it has applied the writer's seqs, so it must wait rather than refuse.
    follower.proc.kill("SIGSTOP");
    const more = (await call(writer.url, "POST", "/v1/assert", { sentence: "(bird Kiwi)", context: "CxFeed" })).body.seq;
    const ahead = (await call(writer.url, "POST", "/v1/assert", { sentence: "(bird Emu)", context: "CxFeed" })).body.seq;
    const watching = call(follower.url, "POST", "/v1/watch", { context: "CxFeed", from: Number(lastId) });
    await sleep(100);
    follower.proc.kill("SIGCONT");
    const fw = await watching;
    expect(fw.status).toBe(200);
    const resumed = await fetch(`${follower.url}/v1/stream?token=${fw.body.token}`, { headers: { "last-event-id": lastId } });
    const frames = await readSse(resumed, (f) => f.filter((x) => x.id).length >= 2);
    expect(frames.filter((x) => x.id).map((x) => Number(x.id))).toEqual([more, ahead]);
    expect(frames.filter((x) => x.id).map((x) => x.data.added[0].sentence)).toEqual(["(bird Kiwi)", "(bird Emu)"]);

    // A poll cursor ahead of the follower: it waits, then answers what follows the cursor.
    const pw = await call(follower.url, "POST", "/v1/watch", { context: "CxFeed", from: ahead });
    follower.proc.kill("SIGSTOP");
    const beyond = (await call(writer.url, "POST", "/v1/assert", { sentence: "(bird Moa)", context: "CxFeed" })).body.seq;
    const next = (await call(writer.url, "POST", "/v1/assert", { sentence: "(bird Dodo)", context: "CxFeed" })).body.seq;
    const polling = call(follower.url, "POST", "/v1/poll", { token: pw.body.token, cursor: beyond, waitMs: 5_000 });
    await sleep(100);
    follower.proc.kill("SIGCONT");
    const polled = await polling;
    expect(polled.status).toBe(200);
    expect(polled.body.events.map((e: { seq: number }) => e.seq)).toEqual([next]);

    // A stream resumed with a Last-Event-ID the follower has not applied waits until it has.
    follower.proc.kill("SIGSTOP");
    const last = (await call(writer.url, "POST", "/v1/assert", { sentence: "(bird Rhea)", context: "CxFeed" })).body.seq;
    const after = (await call(writer.url, "POST", "/v1/assert", { sentence: "(bird Kea)", context: "CxFeed" })).body.seq;
    const streaming = fetch(`${follower.url}/v1/stream?token=${fw.body.token}`, { headers: { "last-event-id": String(last) } });
    await sleep(100);
    follower.proc.kill("SIGCONT");
    const again = await streaming;
    expect(again.status).toBe(200);
    const tail = await readSse(again, (f) => f.some((x) => x.id));
    expect(tail.filter((x) => x.id).map((x) => Number(x.id))).toEqual([after]);
  });
});

describe("agent tokens on a follower", () => {
  it("a token the writer issues is accepted by a follower, and a rotated one stops working there", async () => {
    const url = await freshDatabase();
    const env = { KOINII_ADMIN_TOKEN: "admin-secret" };
    const writer = await spawnClusterDaemon(url, [], env);
    const follower = await spawnClusterDaemon(url, [], env);
    try {
      const issue = async () => (await call(writer.url, "POST", "/v1/agents", { id: "AgentAtlas" }, { token: "admin-secret" })).body.token as string;
      const status = async (token: string) => (await call(follower.url, "POST", "/v1/match", { sentence: "(dog ?x)", context: "CxPets" }, { token })).status;
      const first = await issue();
      await eventually(async () => ((await status(first)) === 200 ? true : undefined));
      const second = await issue();
      await eventually(async () => ((await status(second)) === 200 ? true : undefined));
      expect(await status(first)).toBe(401);
    } finally {
      await follower.stop();
      await writer.stop();
    }
  });
});

describe("a follower behind a pruned log", () => {
  it("stops (exit 3) rather than serve a state with a gap, and a restart follows from a new snapshot", async () => {
    const url = await freshDatabase();
    const writer = await spawnClusterDaemon(url, ["--feed-retention-events", "10"]);
    let follower = await spawnClusterDaemon(url);
    try {
      const base = (await health(writer)).appliedSeq;
      await applied(follower, base);
      follower.proc.kill("SIGSTOP");
      // The writer prunes every 1024 writes down to the newest 10 events: past the follower's seq.
      let n = 0;
      await Promise.all(Array.from({ length: 8 }, async () => {
        while (n < 1030) await call(writer.url, "POST", "/v1/assert", { sentence: `(p P${n++})`, context: "CxPrune" });
      }));
      const oldest = Number((await pgQuery<{ seq: string }>(url, "select min(seq) as seq from event"))[0]!.seq);
      expect(oldest).toBeGreaterThan(base + 1);
      follower.proc.kill("SIGCONT");
      expect(await follower.exited).toBe(3);
      expect(follower.stderr()).toMatch(/no longer holds seq/);
      follower = await spawnClusterDaemon(url);
      const head = (await health(writer)).appliedSeq;
      await applied(follower, head);
      const q = { sentence: "(p ?x)", context: "CxPrune" };
      expect((await call(follower.url, "POST", "/v1/match", q)).body).toEqual((await call(writer.url, "POST", "/v1/match", q)).body);
    } finally {
      await follower.stop();
      await writer.stop();
    }
  });
});

describe("failover", () => {
  it("SIGKILL the writer: the follower takes over within the lease, every acknowledged write is kept and the log has no gap; a follower that was behind catches up before it writes", async () => {
    const url = await freshDatabase();
    const a = await spawnClusterDaemon(url);
    const b = await spawnClusterDaemon(url);
    let c: Daemon | undefined;
    try {
      const acked: { handle: number; seq: number }[] = [];
      for (let i = 0; i < 20; i++) acked.push((await call(a.url, "POST", "/v1/assert", { sentence: `(n N${i})`, context: "CxFail" })).body);
      await applied(b, acked.at(-1)!.seq);
      const killedAt = Date.now();
      await a.stop("SIGKILL");
      // A client retries against the follower: redirects to the dead writer fail, then the follower answers itself.
      const first = await eventually(async () => {
        const r = await call(b.url, "POST", "/v1/assert", { sentence: "(n After)", context: "CxFail" }).catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      }, 15_000);
      const failoverMs = Date.now() - killedAt;
      console.log(`failover: writer SIGKILL to the first acknowledged write on the new writer took ${failoverMs} ms (lease 2000 ms, renew 200 ms)`);
      acked.push(first.body);
      expect(await health(b)).toMatchObject({ role: "writer", epoch: 2 });
      expect(first.body.seq).toBe(acked.at(-2)!.seq + 1);

      // C follows B but is stopped while B commits more and dies; C resumes after the lease
      // ran out and must first apply what it missed. C tries the lease once a second and is
      // stopped between two attempts, so on resume its first step is the election: it
      // catches up as it promotes.
      c = await spawnDaemon({ args: ["--store", url, "--lease-ms", "2000", "--lease-renew-ms", "1000", "--follow-poll-ms", "200"] });
      await applied(c, first.body.seq);
      await sleep(300);
      c.proc.kill("SIGSTOP");
      for (let i = 0; i < 5; i++) acked.push((await call(b.url, "POST", "/v1/assert", { sentence: `(n Missed${i})`, context: "CxFail" })).body);
      await b.stop("SIGKILL");
      await sleep(2_500); // past B's lease
      c.proc.kill("SIGCONT");
      const third = await eventually(async () => {
        const r = await call(c!.url, "POST", "/v1/assert", { sentence: "(n Third)", context: "CxFail" }).catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      }, 15_000);
      expect(third.body.seq).toBe(acked.at(-1)!.seq + 1);
      acked.push(third.body);
      expect(await health(c)).toMatchObject({ role: "writer", epoch: 3 });
      expect((await call(c.url, "POST", "/v1/match", { sentence: "(n ?x)", context: "CxFail" })).body.sentexes).toHaveLength(acked.length);

      const seqs = (await pgQuery<{ seq: string }>(url, "select seq from event order by seq")).map((r) => Number(r.seq));
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
      for (const w of acked) {
        const [row] = await pgQuery<{ seq: string }>(url, "select seq from sentex where handle = $1", [w.handle]);
        expect(Number(row!.seq)).toBe(w.seq);
      }
    } finally {
      await c?.stop();
      await b.stop();
      await a.stop();
    }
  });
});
