/**
 * The hostile request fuzz, shared by fuzz.test.ts (a few thousand requests, default suite)
 * and fuzz.slow.test.ts (100 000): requests across every route the daemon's OpenAPI
 * document lists, with random shapes, wrong types, huge and negative numbers, limits and
 * just over, deep nesting, invalid UTF-8, non-JSON bodies, duplicate keys, hostile paths,
 * and partial bodies held open on raw sockets. Every answer must be a typed 4xx (the status
 * its type maps to) or a documented success, the daemon must not crash, and the head seq
 * must move by exactly the number of accepted writes.
 */
import { expect } from "vitest";
import fc from "fast-check";
import { Agent, fetch } from "undici";
import { spawnDaemon, rawExchange, type Daemon } from "./helpers.js";
import { WIRE_ERROR_STATUS } from "../../src/daemon/errors.js";

/** The bounds the fuzz daemon runs with: small, so "at the limit and just over" is cheap. */
export const FUZZ_LIMITS = { maxBodyBytes: 65_536, maxEditEntries: 8, maxAtomBytes: 256, requestTimeoutMs: 300 };

export function spawnFuzzDaemon(): Promise<Daemon> {
  return spawnDaemon({
    args: [
      "--max-body-bytes", String(FUZZ_LIMITS.maxBodyBytes),
      "--max-edit-entries", String(FUZZ_LIMITS.maxEditEntries),
      "--max-atom-bytes", String(FUZZ_LIMITS.maxAtomBytes),
      "--request-timeout-ms", String(FUZZ_LIMITS.requestTimeoutMs),
      "--max-wait-ms", "50",
    ],
  });
}

interface Req {
  method: string;
  path: string;
  /** The body bytes (text is UTF-8 encoded); undefined = none. */
  body?: string | Uint8Array;
  type?: string;
  headers?: Record<string, string>;
}

const L = FUZZ_LIMITS;
const cx = (bytes: number) => "Cx" + "Z".repeat(Math.max(0, bytes - 2));
const huge = fc.constantFrom(1e308, -1e308, -1, -0, 0, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 1.5, 4294967296, 1e-320);
const names = fc.oneof({ weight: 6, arbitrary: fc.constantFrom("CxFuzz", "CxFuzzTwo") }, fc.constantFrom("CxFuzz", "?ctx", "CxRegistry", "AgentFuzz", "", " ", "Cx", "cxLower", "CxFuzz\u0000"), fc.string({ maxLength: 20 }), fc.constantFrom(cx(L.maxAtomBytes), cx(L.maxAtomBytes + 1)));
const atomAt = (bytes: number) => `"${"a".repeat(bytes - 2)}"`;
const sentence = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 5000 }).map((n) => `(fz A${n})`) },
  fc.integer({ min: 0, max: 5000 }).map((n) => `(not (fz A${n}))`),
  fc.constantFrom(`(fz ${atomAt(L.maxAtomBytes)})`, `(fz ${atomAt(L.maxAtomBytes + 1)})`, "(fz ?x)", "(implies (fz ?x) (gz ?x))", "(and (fz ?x) (fz ?y))", "(unknown (fz ?x))", "(", ")", "", "(fz A) (fz B)", "(sentexHandle -1)", "(genlCx CxFuzz CxRegistry)"),
  fc.integer({ min: 60, max: 400 }).map((n) => `(p ${"(".repeat(n)}${")".repeat(n)})`),
  fc.string({ maxLength: 40 }),
);
const wrong = fc.oneof(fc.jsonValue({ maxDepth: 3 }), huge, fc.constant(null), fc.boolean(), fc.string({ maxLength: 50 }), fc.array(fc.integer(), { maxLength: 4 }));
const maybe = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: a }, { weight: 1, arbitrary: wrong });
const handle = fc.oneof(fc.integer({ min: 1, max: 3000 }), huge, fc.constant(Number.MAX_SAFE_INTEGER));
const entry = fc.record({ sentence: maybe(sentence), context: maybe(names), strength: fc.constantFrom("default", "monotonic", "strong", 1) }, { requiredKeys: ["sentence", "context"] });

/** Every field any route takes, with right, wrong and limit values. */
const fields: Record<string, fc.Arbitrary<unknown>> = {
    sentence: maybe(sentence),
    goal: maybe(sentence),
    upheld: maybe(sentence),
    context: maybe(names),
    channel: maybe(names),
    id: fc.oneof(fc.constantFrom("AgentFuzz", "AgentFuzzTwo", "1-2", "2-1", "x-y"), wrong),
    agent: maybe(names),
    arbiter: maybe(names),
    agents: fc.array(maybe(names), { maxLength: 3 }),
    handle: maybe(handle),
    claim: maybe(handle),
    add: fc.oneof(fc.array(entry, { maxLength: 3 }), fc.constantFrom(L.maxEditEntries, L.maxEditEntries + 1).map((n) => Array.from({ length: n }, (_, i) => ({ sentence: `(fz E${i})`, context: "CxFuzz" }))), wrong),
    remove: fc.oneof(fc.array(handle, { maxLength: 3 }), wrong),
    token: fc.oneof(fc.constantFrom("sub_doesnotexist", ""), wrong),
    cursor: maybe(fc.integer({ min: -2, max: 100_000 })),
    from: maybe(fc.integer({ min: -2, max: 100_000 })),
    waitMs: maybe(fc.integer({ min: -5, max: 60 })),
    limit: maybe(fc.integer({ min: -2, max: 20_000 })),
    strength: fc.constantFrom("default", "monotonic", "x"),
    creator: maybe(names),
    displayName: fc.oneof(fc.string({ maxLength: 20 }), fc.constant("n".repeat(300))),
    trust: maybe(huge),
    staleTimeoutMs: maybe(huge),
};
/** Bodies with any mix of fields (mostly refused: the schemas are strict). */
const shaped = fc.record(fields, { requiredKeys: [] });

const deepText = fc.integer({ min: 1000, max: 20_000 }).map((n) => `{"sentence": ${"[".repeat(n)}${"]".repeat(n)}, "context": "CxFuzz"}`);
/** Deep nesting in the fields the schemas leave open (`from`, `cursor`), as raw text. */
const deepOpen = fc.tuple(fc.integer({ min: 1000, max: 100_000 }), fc.constantFrom("from", "cursor"), fc.boolean()).map(
  ([n, key, arr]) => `{"token": "sub_x", "${key}": ${arr ? "[".repeat(n) + "]".repeat(n) : '{"a":'.repeat(n) + "1" + "}".repeat(n)}}`,
);
const dupKeys = fc.tuple(sentence, wrong).map(([s, w]) => `{"sentence": ${JSON.stringify(s)}, "context": "CxFuzz", "context": ${JSON.stringify(w) ?? "null"}, "sentence": ${JSON.stringify(s)}}`);
const badUtf8 = fc.tuple(fc.constantFrom([0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82]), sentence).map(([bytes, s]) => {
  const head = new TextEncoder().encode(`{"sentence": ${JSON.stringify(s).slice(0, -1)}`);
  const tail = new TextEncoder().encode(`", "context": "CxFuzz"}`);
  return new Uint8Array([...head, ...bytes, ...tail]);
});
const overBody = fc.constantFrom(L.maxBodyBytes - 64, L.maxBodyBytes + 1).map((n) => `{"sentence": "(fz ${"x".repeat(n)})", "context": "CxFuzz"}`);
const bodyText = fc.oneof(
  { weight: 8, arbitrary: shaped.map((b) => JSON.stringify(b)) },
  { weight: 2, arbitrary: wrong.map((w) => JSON.stringify(w) ?? "null") },
  { weight: 1, arbitrary: deepText },
  { weight: 1, arbitrary: deepOpen },
  { weight: 1, arbitrary: dupKeys },
  { weight: 1, arbitrary: fc.constantFrom("", "{", "{}}", "nul", "[1,]", '{"__proto__": {"x": 1}}', '{"constructor": {"prototype": {"x": 1}}}', "\ufeff{}", "NaN", "1e999") },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 1, arbitrary: overBody },
);
const contentType = fc.oneof({ weight: 10, arbitrary: fc.constant("application/json") }, { weight: 1, arbitrary: fc.constantFrom("text/plain", "", "application/json; charset=latin1", "application/x-www-form-urlencoded", "APPLICATION/JSON") });
const hostilePath = fc.oneof(
  fc.constantFrom("/v1/sentex/%zz", "/v1/sentex/0", "/v1/sentex/-1", "/v1/sentex/99999999999999999", "/v1/sentex/1.5", "/v1/stream?token=sub_x&cursor=-1", "/v1/stream?cursor=1", "/v1/stream?token=" + "t".repeat(300), "/nowhere", "/v1/", "//v1/assert", "/v1/assert/..", "/v1/assert?x=%ff", "/health?%zz"),
  fc.string({ maxLength: 30 }).map((s) => "/v1/" + encodeURIComponent(s)),
);

export interface Route {
  method: string;
  path: string;
  /** The body's keys and the required ones, from the OpenAPI document. */
  keys: string[];
  required: string[];
}

/** A body with exactly the route's keys (the required ones always), so many are accepted and writes happen. */
const fitted = (r: Route): fc.Arbitrary<string> =>
  fc.record(Object.fromEntries(r.keys.map((k) => [k, fields[k] ?? wrong])), { requiredKeys: r.required.filter((k) => r.keys.includes(k)) }).map((b) => JSON.stringify(b));

/** One request: a real route (its path parameters filled) or a hostile path, with a hostile or route-shaped body. */
export function requestArb(routes: Route[]): fc.Arbitrary<Req> {
  const real = fc.constantFrom(...routes).chain((r): fc.Arbitrary<Req> => {
    const path = fc.oneof(fc.constant(r.path.replace(":handle", "1")), handle.map((h) => r.path.replace(":handle", String(h))));
    if (r.method === "GET") return fc.record<Req>({ method: fc.constant("GET"), path: path.map((p) => (p === "/v1/stream" ? "/v1/stream?token=sub_nope" : p)) });
    const body = fc.oneof({ weight: 12, arbitrary: fitted(r) }, { weight: 6, arbitrary: bodyText }, { weight: 1, arbitrary: badUtf8 });
    return fc.record<Req>({ method: fc.constant("POST"), path, body, type: contentType });
  });
  const stray = fc.record<Req>({ method: fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"), path: hostilePath, body: fc.option(bodyText, { nil: undefined }), type: contentType });
  return fc.oneof({ weight: 9, arbitrary: real }, { weight: 1, arbitrary: stray });
}

/** A partial body held open on a raw socket: the daemon must answer 408 request-timeout and close. */
async function heldOpen(d: Daemon, path: string): Promise<void> {
  const answer = await rawExchange(d.port, `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{"sentence": "(fz`);
  expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  expect(answer).toContain('"type":"request-timeout"');
}

/** Answers that are documented successes without the `{ok: true}` JSON shape. */
const NON_JSON_OK = new Set(["GET /metrics", "GET /openapi.json"]);

export interface FuzzTally {
  requests: number;
  ok: number;
  refused: Record<string, number>;
  writes: number;
  held: number;
}

/**
 * Send `count` requests one after another (partial bodies held open alongside, a few at a
 * time), checking each answer; after every success the head is read, and must have moved
 * by 0 or 1 (one event per accepted write), by 1 exactly when the answer names a new seq.
 * Refusals never move it: the final head equals the start plus the accepted writes.
 */
export async function runFuzz(d: Daemon, count: number, seed: number): Promise<FuzzTally> {
  const dispatcher = new Agent({ connections: 4, pipelining: 1 });
  const get = async (path: string) => (await fetch(d.url + path, { dispatcher })).json() as Promise<any>;
  type Op = { requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown>; required?: string[] } }> } };
  const doc = (await get("/openapi.json")) as { paths: Record<string, Record<string, Op>> };
  const routes: Route[] = Object.entries(doc.paths).flatMap(([p, ops]) =>
    Object.entries(ops).map(([m, op]) => {
      const schema = op.requestBody?.content["application/json"]?.schema;
      return { method: m.toUpperCase(), path: p.replace(/\{(\w+)\}/g, ":$1"), keys: Object.keys(schema?.properties ?? {}), required: schema?.required ?? [] };
    }),
  );
  expect(routes.length).toBeGreaterThan(30);
  const arb = requestArb(routes);
  const tally: FuzzTally = { requests: 0, ok: 0, refused: {}, writes: 0, held: 0 };
  const start = (await get("/health")).seq as number;
  let head = start;
  const held = new Set<Promise<void>>();
  const heldFailures: unknown[] = [];
  const writeRoutes = routes.filter((r) => r.method === "POST" && !r.path.includes(":")).map((r) => r.path);
  const rng = fc.sample(fc.integer({ min: 0, max: 99 }), { seed, numRuns: 1 })[0]!;
  let batchSeed = seed * 7919 + rng;
  while (tally.requests < count) {
    const batch = fc.sample(arb, { seed: batchSeed++, numRuns: Math.min(500, count - tally.requests) });
    for (const r of batch) {
      if (tally.requests % 997 === 0 && held.size < 4) {
        const p: Promise<void> = heldOpen(d, writeRoutes[tally.requests % writeRoutes.length]!)
          .catch((e: unknown) => void heldFailures.push(e))
          .finally(() => held.delete(p));
        held.add(p);
        tally.held++;
      }
      const headers: Record<string, string> = { ...(r.type !== undefined ? { "content-type": r.type } : {}), ...r.headers };
      const res = await fetch(d.url + r.path, { method: r.method, headers, body: r.method === "GET" || r.method === "OPTIONS" ? undefined : r.body, dispatcher });
      const text = await res.text();
      tally.requests++;
      const what = `${r.method} ${r.path.slice(0, 80)} -> ${res.status} ${text.slice(0, 200)}`;
      expect(res.status, what).toBeLessThan(500);
      const routeKey = `${r.method} ${r.path.split("?")[0]}`;
      if (res.status === 200 && NON_JSON_OK.has(routeKey)) continue;
      let body: any;
      try {
        body = JSON.parse(text);
      } catch {
        expect.fail(`not JSON: ${what}`);
      }
      if (body.ok === true) {
        expect(res.status, what).toBe(200);
        tally.ok++;
        const now = (await get("/health")).seq as number;
        const moved = now - head;
        // A notify or a sweep writes one mark per dispute it lists; every other write moves the head by at most one.
        const marked = (body.notified ?? body.stale) as unknown[] | undefined;
        if (Array.isArray(marked)) expect(moved, what).toBe(marked.length);
        else expect([0, 1], what).toContain(moved);
        if (typeof body.seq === "number" && r.method === "POST" && !["/v1/poll", "/v1/watch"].includes(r.path)) expect(moved, what).toBe(body.seq > head ? 1 : 0);
        tally.writes += moved;
        head = now;
      } else {
        expect(body.ok, what).toBe(false);
        expect(Object.keys(WIRE_ERROR_STATUS), what).toContain(body.type);
        expect(res.status, what).toBe(WIRE_ERROR_STATUS[body.type as keyof typeof WIRE_ERROR_STATUS]);
        expect(typeof body.error, what).toBe("string");
        tally.refused[body.type] = (tally.refused[body.type] ?? 0) + 1;
      }
    }
    expect(d.proc.exitCode).toBe(null);
  }
  await Promise.all(held);
  expect(heldFailures).toEqual([]);
  const end = (await get("/health")).seq as number;
  expect(end - start).toBe(tally.writes);
  expect(d.proc.exitCode).toBe(null);
  await dispatcher.close();
  return tally;
}
