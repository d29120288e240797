/**
 * Every route of docs/wire.md against a real daemon process (open loopback posture), and every
 * request-refusal type with its status.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnDaemon, call, rawExchange, halfOpenClient, sendPastAnswer, type Daemon } from "./helpers.js";
import { KEYLESS_PATHS, WRITE_PATHS } from "../../src/channel/wire.js";

let d: Daemon;
const post = (path: string, body: unknown) => call(d.url, "POST", path, body);
const get = (path: string) => call(d.url, "GET", path);

beforeAll(async () => {
  d = await spawnDaemon({ args: ["--max-body-bytes", "4096"] });
});
afterAll(async () => {
  await d.stop();
});

function refused(a: { status: number; body: { ok: boolean; type: string; error: string } }, status: number, type: string): void {
  expect({ status: a.status, ok: a.body.ok, type: a.body.type }).toEqual({ status, ok: false, type });
  expect(typeof a.body.error).toBe("string");
}

describe("routes", () => {
  it("GET /health answers ok, the head seq and the version", async () => {
    const a = await get("/health");
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ ok: true, version: "0.1.0" });
    expect(Number.isSafeInteger(a.body.seq)).toBe(true);
  });

  it("assert stores once: a repeat answers the same handle and seq with created false", async () => {
    const a = await post("/v1/assert", { sentence: "(dog  Muffet)", context: "CxPets", creator: "AgentAtlas" });
    expect(a.body).toMatchObject({ ok: true, created: true });
    const b = await post("/v1/assert", { sentence: "(dog Muffet)", context: "CxPets" });
    expect(b.body).toEqual({ ok: true, handle: a.body.handle, seq: a.body.seq, created: false });
    const h = await get("/health");
    expect(h.body.seq).toBe(a.body.seq);
  });

  it("GET /v1/sentex/:handle answers the record in canonical text; a retracted handle is 404 unknown-handle", async () => {
    const a = await post("/v1/assert", { sentence: '(label   Muffet "Miss  M")', context: "CxPets" });
    const s = await get(`/v1/sentex/${a.body.handle}`);
    expect(s.body.sentex).toMatchObject({ handle: a.body.handle, sentence: '(label Muffet "Miss  M")', context: "CxPets", truth: "true", strength: "default", seq: a.body.seq, derived: false, believed: true });
    expect(s.body.sentex.locator).toMatch(/^sha256:[0-9a-f]{64}$/);
    const r = await post("/v1/retract", { handle: a.body.handle });
    expect(r.body).toEqual({ ok: true, seq: a.body.seq + 1, removed: [a.body.handle] });
    refused(await get(`/v1/sentex/${a.body.handle}`), 404, "unknown-handle");
    refused(await post("/v1/retract", { handle: a.body.handle }), 404, "unknown-handle");
  });

  it("edit is atomic: one problem refuses the whole batch with problems and stores nothing", async () => {
    const before = (await get("/health")).body.seq;
    const bad = await post("/v1/edit", { add: [{ sentence: "(cat Tom)", context: "CxPets" }, { sentence: "(cat ?x)", context: "CxPets" }], remove: [] });
    refused(bad, 400, "inadmissible");
    expect(bad.body.problems).toEqual([expect.objectContaining({ type: "not-ground", in: "add", index: 1 })]);
    expect((await get("/health")).body.seq).toBe(before);
    expect((await post("/v1/match", { sentence: "(cat Tom)", context: "CxPets" })).body.sentexes).toEqual([]);
    const ok = await post("/v1/edit", { add: [{ sentence: "(cat Tom)", context: "CxPets" }, { sentence: "(cat Felix)", context: "CxPets", strength: "monotonic" }] });
    expect(ok.body).toMatchObject({ ok: true, seq: before + 1, removed: [] });
    expect(ok.body.added).toHaveLength(2);
  });

  it("check-edit reports every problem with in and index, and stores nothing", async () => {
    const before = (await get("/health")).body.seq;
    const a = await post("/v1/check-edit", { add: [{ sentence: "(cat ?y)", context: "CxPets" }, { sentence: "(ok Fine)", context: "CxPets" }], remove: [999999999] });
    expect(a.status).toBe(200);
    expect(a.body.problems.map((p: { in: string; index: number }) => `${p.in} ${p.index}`).sort()).toEqual(["add 0", "remove 0"]);
    expect((await get("/health")).body.seq).toBe(before);
  });

  it("query is cone-aware and match is exact-context (?ctx = any context)", async () => {
    const edge = await post("/v1/assert", { sentence: "(genlCx CxHouse CxPets)", context: "CxHouse" });
    const q = await post("/v1/query", { goal: "(dog ?x)", context: "CxHouse" });
    expect(q.body).toEqual({ ok: true, solutions: [{ "?x": "Muffet" }], truncated: false, asOf: edge.body.seq });
    expect((await post("/v1/match", { sentence: "(dog ?x)", context: "CxHouse" })).body.sentexes).toEqual([]);
    const any = await post("/v1/match", { sentence: "(dog ?x)", context: "?ctx" });
    expect(any.body.sentexes.map((s: { context: string }) => s.context)).toEqual(["CxPets"]);
    const lim = await post("/v1/query", { goal: "(cat ?x)", context: "CxPets", limit: 1 });
    expect(lim.body.solutions).toHaveLength(1);
    expect(lim.body.truncated).toBe(true);
  });

  it("why answers premise and support; a derived sentex names its rule", async () => {
    await post("/v1/assert", { sentence: "(implies (dog ?x) (animal ?x))", context: "CxPets" });
    const m = await post("/v1/match", { sentence: "(animal Muffet)", context: "CxPets" });
    expect(m.body.sentexes[0].derived).toBe(true);
    const w = await post("/v1/why", { handle: m.body.sentexes[0].handle });
    expect(w.body).toMatchObject({ ok: true, believed: true, premise: false });
    expect(w.body.support[0].antecedents).toHaveLength(1);
    refused(await post("/v1/why", { handle: 987654321 }), 404, "unknown-handle");
  });

  it("contradictions lists default/default clashes visible from a context", async () => {
    await post("/v1/assert", { sentence: "(barks Rex)", context: "CxDogs" });
    await post("/v1/assert", { sentence: "(not (barks Rex))", context: "CxDogs" });
    const c = await post("/v1/contradictions", { context: "CxDogs" });
    expect(c.body.ok).toBe(true);
    expect(c.body.contradictions).toHaveLength(1);
    expect(c.body.conflicts).toEqual([]);
  });

  it("watch, poll, watchers and unwatch round trip", async () => {
    const w = await post("/v1/watch", {});
    expect(w.body).toMatchObject({ ok: true, maxEvents: 256, lagged: 0 });
    const a = await post("/v1/assert", { sentence: "(dog Pluto)", context: "CxPets" });
    const p = await post("/v1/poll", { token: w.body.token, cursor: w.body.cursor });
    expect(p.body).toMatchObject({ ok: true, cursor: a.body.seq, lagged: 0 });
    expect(p.body.events.map((e: { seq: number }) => e.seq)).toEqual([a.body.seq]);
    const ws = await get("/v1/watchers");
    expect(ws.body.watchers).toContainEqual(expect.objectContaining({ token: w.body.token, cursor: a.body.seq, pending: 0 }));
    expect((await post("/v1/unwatch", { token: w.body.token })).body).toEqual({ ok: true, dropped: true });
    expect((await post("/v1/unwatch", { token: w.body.token })).body).toEqual({ ok: true, dropped: false });
  });

  it("agents: register, list, and re-register rotates the token and replaces name and trust", async () => {
    const a = await post("/v1/agents", { id: "AgentAtlas", displayName: "Atlas", trust: 2 });
    expect(a.body).toMatchObject({ ok: true, agent: "AgentAtlas", context: "CxAtlas" });
    expect(typeof a.body.token).toBe("string");
    const b = await post("/v1/agents", { id: "AgentAtlas", displayName: "Atlas II", trust: 3 });
    expect(b.body.token).not.toBe(a.body.token);
    const l = await get("/v1/agents");
    expect(l.body.agents).toEqual([{ id: "AgentAtlas", context: "CxAtlas", displayName: "Atlas II", trust: 3 }]);
    refused(await post("/v1/agents", { id: "atlas" }), 400, "naming");
  });

  it("GET /openapi.json documents every route", async () => {
    const o = await get("/openapi.json");
    expect(o.body.openapi).toBe("3.1.0");
    const routes = Object.entries(o.body.paths as Record<string, object>).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    for (const r of ["GET /health", "POST /v1/assert", "POST /v1/edit", "POST /v1/check-edit", "POST /v1/retract", "POST /v1/query", "POST /v1/match", "GET /v1/sentex/{handle}", "POST /v1/why", "POST /v1/contradictions", "POST /v1/watch", "POST /v1/poll", "GET /v1/stream", "POST /v1/unwatch", "GET /v1/watchers", "POST /v1/agents", "GET /v1/agents", "GET /openapi.json"]) {
      expect(routes).toContain(r);
    }
    expect(o.body.paths["/v1/assert"].post.requestBody.content["application/json"].schema.required).toEqual(["sentence", "context"]);
  });

  it("the routes OpenAPI marks x-writer-only are exactly the ones the channel library sends to the writer", async () => {
    const o = await get("/openapi.json");
    const marked = Object.entries(o.body.paths as Record<string, Record<string, { "x-writer-only"?: boolean }>>)
      .filter(([, ops]) => ops.post?.["x-writer-only"])
      .map(([p]) => p);
    expect(marked).toContain("/v1/assert");
    expect(marked).not.toContain("/v1/query");
    expect(new Set(marked)).toEqual(WRITE_PATHS);
    // ...and those that take an Idempotency-Key are the ones it sends one on.
    const keyed = marked.filter((p) => (o.body.paths[p].post.parameters ?? []).some((x: { name: string }) => x.name === "Idempotency-Key"));
    expect(new Set(keyed)).toEqual(new Set([...WRITE_PATHS].filter((p) => !KEYLESS_PATHS.has(p))));
    expect(keyed).not.toContain("/v1/agents");
  });

  it("GET /metrics exposes writes, events, subscriptions, parked polls and request latency", async () => {
    await get("/health"); // at least one request observed, whichever tests ran before
    const m = await get("/metrics");
    expect(m.status).toBe(200);
    for (const name of ["koinii_writes_total", "koinii_feed_events_total", "koinii_feed_subscriptions", "koinii_feed_parked_polls", "koinii_feed_lagged_events_total", "koinii_http_request_duration_seconds_bucket"]) {
      expect(m.text).toContain(name);
    }
    // Latency is counted per method, route and status: two more refused queries add two.
    const count = async () => {
      const line = (await get("/metrics")).text.split("\n").find((l: string) => l.startsWith('koinii_http_request_duration_seconds_count{method="POST",route="/v1/query",status="400"}'));
      return line ? Number(line.split(" ").pop()) : 0;
    };
    const before = await count();
    for (let i = 0; i < 2; i++) await post("/v1/query", { goal: "(dog ?x", context: "CxPets" });
    expect(await count()).toBe(before + 2);
  });
});

describe("the store's own counts in /metrics", () => {
  it("each awaited assert at durability full is one group commit and one WAL fsync, and the fsyncs' time is summed", async () => {
    const read = async () => {
      const text = (await get("/metrics")).text as string;
      const value = (name: string) => Number(text.split("\n").find((l) => l.startsWith(`${name} `))?.split(" ")[1] ?? NaN);
      return { commits: value("koinii_store_commits_total"), fsyncs: value("koinii_wal_fsyncs_total"), inline: value("koinii_wal_fsyncs_inline_total"), seconds: value("koinii_wal_fsync_seconds_total") };
    };
    const before = await read();
    for (let i = 0; i < 3; i++) expect((await post("/v1/assert", { sentence: `(dog Counted${i})`, context: "CxPets" })).status).toBe(200);
    const after = await read();
    expect(after.commits - before.commits).toBe(3);
    expect(after.fsyncs - before.fsyncs).toBe(3);
    expect(after.seconds).toBeGreaterThan(before.seconds);
    // Which of them ran inline depends on this disk's fsync time (under 1 ms: all three); they are among them.
    expect(after.inline - before.inline).toBeGreaterThanOrEqual(0);
    expect(after.inline - before.inline).toBeLessThanOrEqual(3);
  });
});

describe("refusals: every request-refusal type with its status", () => {
  const cases: [string, string, unknown, number, string][] = [
    ["parse-error", "/v1/assert", { sentence: "(dog Muffet", context: "CxPets" }, 400, "parse-error"],
    ["not-ground", "/v1/assert", { sentence: "(dog ?x)", context: "CxPets" }, 400, "not-ground"],
    ["naming (context)", "/v1/assert", { sentence: "(dog Muffet)", context: "pets" }, 400, "naming"],
    ["naming (predicate)", "/v1/assert", { sentence: "(Dog Muffet)", context: "CxPets" }, 400, "naming"],
    ["arity", "/v1/assert", { sentence: "(genl Dog)", context: "CxPets" }, 400, "arity"],
    ["not-range-restricted", "/v1/assert", { sentence: "(implies (p ?x) (q ?y))", context: "CxPets" }, 400, "not-range-restricted"],
    ["shape", "/v1/assert", { sentence: "Muffet", context: "CxPets" }, 400, "shape"],
    ["bad-request (schema)", "/v1/assert", { sentence: 42, context: "CxPets" }, 400, "bad-request"],
    ["bad-request (unknown key)", "/v1/assert", { sentence: "(dog Rex)", context: "CxPets", strenth: "monotonic" }, 400, "bad-request"],
    ["not-watchable (and)", "/v1/watch", { goal: "(and (dog ?x) (cat ?x))", context: "CxPets" }, 400, "not-watchable"],
    ["not-watchable (unknown)", "/v1/watch", { goal: "(unknown (dog ?x))", context: "CxPets" }, 400, "not-watchable"],
    ["not-watchable (or)", "/v1/watch", { goal: "(or (dog ?x) (cat ?x))", context: "CxPets" }, 400, "not-watchable"],
    ["not-watchable (not a sentence)", "/v1/watch", { goal: "Muffet", context: "CxPets" }, 400, "not-watchable"],
    ["bad-request (goal without context)", "/v1/watch", { goal: "(dog ?x)" }, 400, "bad-request"],
    ["unknown-subscription", "/v1/poll", { token: "sub_never", cursor: 0 }, 400, "unknown-subscription"],
    ["unknown-handle", "/v1/retract", { handle: 99999999 }, 404, "unknown-handle"],
  ];
  for (const [name, path, body, status, type] of cases) {
    it(`${name} is ${status} ${type}`, async () => refused(await post(path, body), status, type));
  }

  it("functional is 400 functional", async () => {
    await post("/v1/assert", { sentence: "(trustLevel AgentZed 1)", context: "CxRegistry" });
    refused(await post("/v1/assert", { sentence: "(trustLevel AgentZed 2)", context: "CxRegistry" }), 400, "functional");
  });

  it("dangling-target is 400 dangling-target", async () => {
    await post("/v1/assert", { sentence: "(genlCx CxTalk CxSpeechActs)", context: "CxTalk" });
    refused(await post("/v1/assert", { sentence: "(answers AgentBoreas Yes (sentexHandle 99999999))", context: "CxTalk" }), 400, "dangling-target");
  });

  it("bad-cursor for a non-number, a negative, a fraction, a cursor ahead of the head and one below the start", async () => {
    const w = await post("/v1/watch", {});
    const head = (await get("/health")).body.seq;
    for (const cursor of ["7", -1, 1.5, null, head + 1, head - 1]) refused(await post("/v1/poll", { token: w.body.token, cursor }), 400, "bad-cursor");
    refused(await post("/v1/watch", { from: -3 }), 400, "bad-cursor");
    refused(await post("/v1/watch", { from: head + 10 }), 400, "bad-cursor");
  });

  it("an unknown route is 404 not-found, JSON", async () => {
    refused(await get("/v1/nope"), 404, "not-found");
    refused(await post("/v1/nope", {}), 404, "not-found");
  });

  it("a body that is not JSON is 415 not-json; malformed JSON is 400 bad-request", async () => {
    refused(await call(d.url, "POST", "/v1/assert", undefined, { raw: "(dog Muffet)", headers: { "content-type": "text/plain" } }), 415, "not-json");
    refused(await call(d.url, "POST", "/v1/assert", undefined, { headers: {} }), 415, "not-json");
    refused(await call(d.url, "POST", "/v1/assert", undefined, { raw: "{nope" }), 400, "bad-request");
  });

  it("a foreign Origin is 403 cross-origin; the daemon's own loopback origin passes", async () => {
    refused(await call(d.url, "POST", "/v1/query", { goal: "(dog ?x)", context: "CxPets" }, { headers: { origin: "http://evil.example" } }), 403, "cross-origin");
    refused(await call(d.url, "GET", "/health", undefined, { headers: { origin: "null" } }), 403, "cross-origin");
    const own = await call(d.url, "POST", "/v1/query", { goal: "(dog ?x)", context: "CxPets" }, { headers: { origin: d.url } });
    expect(own.status).toBe(200);
  });

  it("a body over the limit is 413 body-too-large, answered from Content-Length before the body is read", async () => {
    // Only the headers are sent: the answer must come without the daemon waiting for the body.
    const answer = await rawExchange(d.port, `POST /v1/assert HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(answer).toContain('"type":"body-too-large"');
    const big = await call(d.url, "POST", "/v1/assert", { sentence: `(note "${"x".repeat(5000)}")`, context: "CxPets" });
    refused(big, 413, "body-too-large");
  });

  it("a client still sending an over-limit body gets its 413 and an orderly close, never a reset", async () => {
    // The answer comes from the headers; the body keeps arriving after it. A daemon that closed
    // at once would leave that body unread and the kernel would reset the connection: the
    // client's next write fails (EPIPE) and a client that had not read the 413 yet loses it.
    const total = 200_000;
    const { answer, errors, sent } = await sendPastAnswer(d.port, `POST /v1/assert HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`, total, 10_000, 5);
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(answer).toContain('"type":"body-too-large"');
    expect(errors).toEqual([]);
    expect(sent).toBe(total);
  });

  it("a request pipelined behind an over-limit body on its closing connection is never served: no write the client cannot hear of", async () => {
    const c = halfOpenClient(d.port);
    const big = "x".repeat(10_000);
    const next = JSON.stringify({ sentence: "(dog PipelinedBehindRefusal)", context: "CxPets" });
    const head = (len: number) => `POST /v1/assert HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\nContent-Length: ${len}\r\n\r\n`;
    c.sock.end(head(big.length) + big + head(Buffer.byteLength(next)) + next);
    await c.closed; // the daemon reads both, then our end: the connection closes
    expect(c.answer.match(/HTTP\/1\.1 \d+/g)).toEqual(["HTTP/1.1 413"]);
    const q = await call(d.url, "POST", "/v1/query", { goal: "(dog PipelinedBehindRefusal)", context: "CxPets" });
    expect(q.body.solutions).toEqual([]);
  });

  it("a daemon that stops cuts a lingering connection at once: its graceful close does not wait on it", async () => {
    const own = await spawnDaemon({ args: ["--max-body-bytes", "4096", "--shutdown-grace-ms", "5000"] });
    const c = halfOpenClient(own.port);
    c.sock.write(`POST /v1/assert HTTP/1.1\r\nHost: 127.0.0.1:${own.port}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`);
    await c.answered; // lingering now: the daemon would drop the body if it came
    await own.stop();
    c.sock.destroy();
    expect(c.answer).toMatch(/^HTTP\/1\.1 413/);
    // Had the close waited on the connection, its grace would have run out and said so.
    expect(own.stderr()).toContain('"msg":"stopped"');
    expect(own.stderr()).not.toContain("ran out of time");
  });

  it("a chunked body over the limit is 413 body-too-large too", async () => {
    const chunk = "x".repeat(5000);
    const answer = await rawExchange(
      d.port,
      `POST /v1/assert HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(answer).toContain('"type":"body-too-large"');
  });
});
