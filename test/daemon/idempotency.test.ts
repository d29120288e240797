/**
 * Idempotency keys (docs/daemon.md D18) over a real daemon process: a retry with the same
 * key answers the first answer byte for byte and writes nothing; another request with the
 * key is 422; concurrent retries write once; the key survives a SIGKILL and a restart, and
 * (PostgreSQL) a failover to a promoted follower; keys are per caller and expire. Then a
 * fast-check property in-process over random programs of keyed requests and retries.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import Database from "better-sqlite3";
import fc from "fast-check";
import { spawnDaemon, spawnClusterDaemon, call, eventually, type Daemon } from "./helpers.js";
import { freshDatabase, pgQuery } from "../kb/pg.js";
import { openKb } from "../../src/kb/index.js";
import type { SqliteStore } from "../../src/kb/store.js";
import { createServer } from "../../src/daemon/index.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const keyed = (key: string, token?: string) => ({ headers: { "idempotency-key": key }, token });
const head = async (d: Daemon) => (await call(d.url, "GET", "/health")).body.seq as number;

/** The SQLite store's rows, read beside the running daemon (WAL: readers never block it). */
function sqlite(d: Daemon) {
  const db = new Database(join(d.dataDir, "koinii.db"), { readonly: true });
  try {
    return {
      events: (db.prepare("select count(*) as n from event").get() as { n: number }).n,
      keys: db.prepare("select caller, key, seq from idempotency order by created_at").all() as { caller: string; key: string; seq: number }[],
    };
  } finally {
    db.close();
  }
}

describe("Idempotency-Key on a SQLite daemon", () => {
  let d: Daemon;
  beforeAll(async () => {
    d = await spawnDaemon();
  });
  afterAll(async () => {
    await d?.stop();
  });

  for (const [path, body] of [
    ["/v1/assert", { sentence: "(dog Idem1)", context: "CxIdem" }],
    ["/v1/edit", { add: [{ sentence: "(dog Idem2)", context: "CxIdem" }, { sentence: "(cat Idem2)", context: "CxIdem" }], remove: [] }],
  ] as const) {
    it(`the same key twice on ${path}: one seq, one event, identical bodies, the second marked replayed`, async () => {
      const before = { seq: await head(d), events: sqlite(d).events };
      const first = await call(d.url, "POST", path, body, keyed(`same-${path}`));
      const again = await call(d.url, "POST", path, body, keyed(`same-${path}`));
      expect(first.status).toBe(200);
      expect(first.body.seq).toBe(before.seq + 1);
      expect(first.headers.get("idempotent-replayed")).toBeNull();
      expect(again.status).toBe(200);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.text).toBe(first.text);
      expect(await head(d)).toBe(before.seq + 1);
      expect(sqlite(d).events).toBe(before.events + 1);
      expect(sqlite(d).keys).toContainEqual({ caller: "admin", key: `same-${path}`, seq: first.body.seq });
    });
  }

  it("the same key with another body is 422 idempotency-key-reused and writes nothing", async () => {
    const first = await call(d.url, "POST", "/v1/assert", { sentence: "(dog Idem3)", context: "CxIdem" }, keyed("reused"));
    expect(first.status).toBe(200);
    const before = { seq: await head(d), events: sqlite(d).events };
    const other = await call(d.url, "POST", "/v1/assert", { sentence: "(dog Other3)", context: "CxIdem" }, keyed("reused"));
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ ok: false, type: "idempotency-key-reused" });
    const otherPath = await call(d.url, "POST", "/v1/edit", { add: [{ sentence: "(dog Idem3)", context: "CxIdem" }], remove: [] }, keyed("reused"));
    expect(otherPath.body).toMatchObject({ ok: false, type: "idempotency-key-reused" });
    expect(await head(d)).toBe(before.seq);
    expect(sqlite(d).events).toBe(before.events);
    expect((await call(d.url, "POST", "/v1/match", { sentence: "(dog Other3)", context: "CxIdem" })).body.sentexes).toEqual([]);
  });

  it("concurrent requests with one key write once; every answer is the first one", async () => {
    const before = await head(d);
    const body = { sentence: "(dog Idem4)", context: "CxIdem" };
    const answers = await Promise.all(Array.from({ length: 8 }, () => call(d.url, "POST", "/v1/assert", body, keyed("concurrent"))));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get("idempotent-replayed") === null)).toHaveLength(1);
    expect(await head(d)).toBe(before + 1);
  });

  it("a refused request stores nothing: a retry with the key is evaluated again", async () => {
    const bad = await call(d.url, "POST", "/v1/assert", { sentence: "(dog ?x)", context: "CxIdem" }, keyed("refused-first"));
    expect(bad.body).toMatchObject({ ok: false, type: "not-ground" });
    const good = await call(d.url, "POST", "/v1/assert", { sentence: "(dog Idem5)", context: "CxIdem" }, keyed("refused-first"));
    expect(good.status).toBe(200);
    expect(good.headers.get("idempotent-replayed")).toBeNull();
    expect(good.body.created).toBe(true);
  });

  it("a malformed key is 400 bad-idempotency-key, and so is a key on POST /v1/agents (its token is never stored); nothing is written", async () => {
    const before = await head(d);
    for (const key of ["x".repeat(256), "caf\u00e9"]) {
      const r = await call(d.url, "POST", "/v1/assert", { sentence: "(dog Idem6)", context: "CxIdem" }, keyed(key));
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ ok: false, type: "bad-idempotency-key" });
    }
    const longest = await call(d.url, "POST", "/v1/assert", { sentence: "(dog Idem6)", context: "CxIdem" }, keyed("k".repeat(255)));
    expect(longest.status).toBe(200);
    const agents = await call(d.url, "POST", "/v1/agents", { id: "AgentIdem" }, keyed("agent-key"));
    expect(agents.body).toMatchObject({ ok: false, type: "bad-idempotency-key" });
    expect(await head(d)).toBe(before + 1);
  });

  it("a dispute route takes a key too: the retry answers the first answer and writes nothing", async () => {
    const body = { context: "CxIdemPanel", agents: ["AgentAva", "AgentBen"] };
    const first = await call(d.url, "POST", "/v1/convene", body, keyed("convene"));
    expect(first.status).toBe(200);
    const before = await head(d);
    const again = await call(d.url, "POST", "/v1/convene", body, keyed("convene"));
    expect(again.text).toBe(first.text);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await head(d)).toBe(before);
  });
});

describe("Idempotency-Key across a restart, per caller, and past its retention", () => {
  it("a key answered before a SIGKILL is answered the same after the restart, and nothing is written", async () => {
    let d = await spawnDaemon();
    try {
      const body = { add: [{ sentence: "(dog Survivor)", context: "CxIdem" }], remove: [] };
      const first = await call(d.url, "POST", "/v1/edit", body, keyed("restart"));
      expect(first.status).toBe(200);
      await d.stop("SIGKILL");
      d = await spawnDaemon({ dataDir: d.dataDir });
      const events = sqlite(d).events;
      const again = await call(d.url, "POST", "/v1/edit", body, keyed("restart"));
      expect(again.text).toBe(first.text);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(await head(d)).toBe(first.body.seq);
      expect(sqlite(d).events).toBe(events);
    } finally {
      await d.stop();
    }
  });

  it("keys are per caller: two agents with one key write twice", async () => {
    const d = await spawnDaemon({ env: { KOINII_ADMIN_TOKEN: "adm" } });
    try {
      const token = async (id: string) => (await call(d.url, "POST", "/v1/agents", { id }, { token: "adm" })).body.token as string;
      const [ava, ben] = [await token("AgentAva"), await token("AgentBen")];
      const before = await head(d);
      const a = await call(d.url, "POST", "/v1/assert", { sentence: "(likes Ava Tea)", context: "CxAva" }, keyed("shared", ava));
      const b = await call(d.url, "POST", "/v1/assert", { sentence: "(likes Ben Tea)", context: "CxBen" }, keyed("shared", ben));
      expect([a.status, b.status]).toEqual([200, 200]);
      expect([a.headers.get("idempotent-replayed"), b.headers.get("idempotent-replayed")]).toEqual([null, null]);
      expect([a.body.seq, b.body.seq]).toEqual([before + 1, before + 2]);
      const a2 = await call(d.url, "POST", "/v1/assert", { sentence: "(likes Ava Tea)", context: "CxAva" }, keyed("shared", ava));
      expect(a2.text).toBe(a.text);
      expect(sqlite(d).keys.filter((k) => k.key === "shared").map((k) => k.caller)).toEqual(["AgentAva", "AgentBen"]);
    } finally {
      await d.stop();
    }
  });

  it("a key older than --idempotency-ttl-ms is no longer honoured: the retry is a new write, and the old row is pruned", async () => {
    const d = await spawnDaemon({ args: ["--idempotency-ttl-ms", "300"] });
    try {
      const body = { sentence: "(dog Ephemeral)", context: "CxIdem" };
      const first = await call(d.url, "POST", "/v1/assert", body, keyed("short"));
      await call(d.url, "POST", "/v1/assert", { sentence: "(dog Older)", context: "CxIdem" }, keyed("older"));
      await call(d.url, "POST", "/v1/retract", { handle: first.body.handle });
      await sleep(400);
      const again = await call(d.url, "POST", "/v1/assert", body, keyed("short"));
      expect(again.status).toBe(200);
      expect(again.headers.get("idempotent-replayed")).toBeNull();
      expect(again.body.seq).toBeGreaterThan(first.body.seq);
      expect(again.body.created).toBe(true);
      // The expired "older" key went from the table in the new write's group; "short" holds its new answer.
      expect(sqlite(d).keys).toEqual([{ caller: "admin", key: "short", seq: again.body.seq }]);
      const reused = await call(d.url, "POST", "/v1/assert", { sentence: "(dog Changed)", context: "CxIdem" }, keyed("short"));
      expect(reused.body).toMatchObject({ type: "idempotency-key-reused" });
    } finally {
      await d.stop();
    }
  });
});

describe("Idempotency-Key on PostgreSQL, across a failover", () => {

  it("a keyed write on the writer, SIGKILL it, the follower is promoted: the retry there answers the first answer and writes nothing", async () => {
    const url = await freshDatabase();
    const a = await spawnClusterDaemon(url);
    const b = await spawnClusterDaemon(url);
    try {
      const body = { add: [{ sentence: "(dog Failover)", context: "CxIdem" }], remove: [] };
      // Sent to the follower: redirected (307) to the writer, which stores the key (503 no-writer
      // until the follower has read the writer's URL from the lease: retried with the key).
      const first = await eventually(async () => {
        const r = await call(b.url, "POST", "/v1/edit", body, keyed("failover"));
        return r.status === 503 ? undefined : r;
      });
      expect(first.status).toBe(200);
      expect(first.headers.get("idempotent-replayed")).toBeNull();
      const onWriter = await call(a.url, "POST", "/v1/edit", body, keyed("failover"));
      expect(onWriter.text).toBe(first.text);
      expect(onWriter.headers.get("idempotent-replayed")).toBe("true");
      expect(await pgQuery(url, "select caller, key, seq::int as seq from idempotency")).toEqual([{ caller: "admin", key: "failover", seq: first.body.seq }]);
      await a.stop("SIGKILL");
      await eventually(async () => ((await call(b.url, "GET", "/health")).body.role === "writer" ? true : undefined));
      const events = Number((await pgQuery<{ n: string }>(url, "select count(*) as n from event"))[0]!.n);
      const again = await call(b.url, "POST", "/v1/edit", body, keyed("failover"));
      expect(again.status).toBe(200);
      expect(again.text).toBe(first.text);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(await head(b)).toBe(first.body.seq);
      expect(Number((await pgQuery<{ n: string }>(url, "select count(*) as n from event"))[0]!.n)).toBe(events);
      const reused = await call(b.url, "POST", "/v1/edit", { add: [{ sentence: "(dog Other)", context: "CxIdem" }], remove: [] }, keyed("failover"));
      expect(reused.body).toMatchObject({ type: "idempotency-key-reused" });
      // A new key on the new writer is stored in its own commit, with its write.
      const fresh = await call(b.url, "POST", "/v1/assert", { sentence: "(dog New)", context: "CxIdem" }, keyed("after"));
      expect((await pgQuery(url, "select seq::int as seq from idempotency where key = 'after'"))).toEqual([{ seq: fresh.body.seq }]);
    } finally {
      await b.stop();
      await a.stop();
    }
  });
});

describe("Idempotency-Key, one transaction with its write", () => {
  it("the key's row commits in the write's own group: it is in the store when the write's event is published", async () => {
    const kb = await openKb({ path: ":memory:" });
    const server = await createServer({ kb, version: "test" });
    const db = (kb.store as SqliteStore).db;
    const atPublish: unknown[] = [];
    kb.onEvent(() => atPublish.push(db.prepare("select key, seq from idempotency").all()));
    try {
      const r = await server.app.inject({ method: "POST", url: "/v1/assert", headers: { "idempotency-key": "one-tx" }, payload: { sentence: "(dog Rex)", context: "CxPets" } });
      expect(r.statusCode).toBe(200);
      expect(atPublish).toEqual([[{ key: "one-tx", seq: r.json().seq }]]);
    } finally {
      await server.close();
      await kb.close();
    }
  });

  it("writes that would commit before their seal (the call awaited more than the KB's writes) stop the KB rather than store them apart", async () => {
    const kb = await openKb({ path: ":memory:" });
    try {
      const sealed: number[] = [];
      const call = kb.atomically(async () => {
        await kb.assert("(dog Rex)", "CxPets");
        await new Promise((r) => setImmediate(r)); // the group commits here
        return 1;
      }, (v) => sealed.push(v));
      await expect(call).rejects.toMatchObject({ type: "unavailable" });
      expect(sealed).toEqual([]);
      expect(kb.failure?.reason).toMatch(/invariant: the writes of an atomic call/);
    } finally {
      await kb.close();
    }
  });
});

describe("Idempotency-Key, property", () => {
  it("over random programs of keyed requests and retries (some concurrent, some refused): writes = keys whose first successful request wrote, every retry answers that answer", async () => {
    const kb = await openKb({ path: ":memory:" });
    const server = await createServer({ kb, adminToken: "adm", version: "test" });
    try {
      const tokens: string[] = [];
      for (const id of ["AgentAva", "AgentBen"]) {
        tokens.push((await server.app.inject({ method: "POST", url: "/v1/agents", headers: { authorization: "Bearer adm" }, payload: { id } })).json().token);
      }
      const contexts = ["CxAva", "CxBen"];
      let run = 0;
      // One request: caller, key, variant (2 = refused: not ground).
      const req = fc.record({ caller: fc.nat(1), key: fc.nat(3), variant: fc.nat(2) });
      await fc.assert(
        fc.asyncProperty(fc.array(fc.array(req, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }), async (batches) => {
          run++;
          const seq0 = kb.appliedSeq;
          const firstAnswer = new Map<string, { variant: number; text: string }>();
          let writes = 0;
          for (const batch of batches) {
            // One variant per (caller, key) within a concurrent batch, so the model is determinate.
            const chosen = new Map<string, number>();
            const reqs = batch.map((r) => {
              const id = `${r.caller}/${r.key}`;
              if (!chosen.has(id)) chosen.set(id, r.variant);
              return { ...r, id, variant: chosen.get(id)! };
            });
            const answers = await Promise.all(
              reqs.map((r) =>
                server.app.inject({
                  method: "POST",
                  url: "/v1/assert",
                  headers: { authorization: `Bearer ${tokens[r.caller]}`, "idempotency-key": `r${run}-k${r.key}` },
                  payload: { sentence: r.variant === 2 ? "(p ?x)" : `(p R${run} K${r.key} V${r.variant})`, context: contexts[r.caller] },
                }),
              ),
            );
            const written = new Set<string>();
            reqs.forEach((r, i) => {
              const a = answers[i]!;
              const stored = firstAnswer.get(r.id);
              if (stored) {
                if (stored.variant === r.variant) {
                  expect(a.statusCode).toBe(200);
                  expect(a.body).toBe(stored.text);
                  expect(a.headers["idempotent-replayed"]).toBe("true");
                } else expect(a.json()).toMatchObject({ type: "idempotency-key-reused" });
              } else if (r.variant === 2) expect(a.json()).toMatchObject({ type: "not-ground" });
              else {
                expect(a.statusCode).toBe(200);
                if (a.headers["idempotent-replayed"] === undefined) written.add(r.id);
              }
            });
            // The first request of each newly written key wrote once; its concurrent retries replayed it.
            for (const r of reqs) {
              if (firstAnswer.has(r.id) || r.variant === 2) continue;
              const mine = reqs.map((x, i) => [x, answers[i]!] as const).filter(([x]) => x.id === r.id);
              expect(mine.filter(([, a]) => a.headers["idempotent-replayed"] === undefined)).toHaveLength(1);
              expect(new Set(mine.map(([, a]) => a.body)).size).toBe(1);
              firstAnswer.set(r.id, { variant: r.variant, text: mine[0]![1].body });
            }
            writes += written.size;
          }
          expect(kb.appliedSeq - seq0).toBe(writes);
          expect(writes).toBe(firstAnswer.size);
        }),
        { numRuns: 60 },
      );
    } finally {
      await server.close();
      await kb.close();
    }
  });
});
