/**
 * One error shape and a bound on everything, at the edges fastify and Node handle before a
 * route runs: every refusal is `{ok: false, type, error}` with the status its type maps to,
 * including a malformed URL or request line and headers over the limit; a body that is not
 * UTF-8 is 400 bad-encoding; a body still incomplete at --request-timeout-ms is 408
 * request-timeout; an edit over --max-edit-entries is 413 edit-too-large; an atom or a name
 * over --max-atom-bytes is 400 too-long. Nothing refused changes the head seq.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { spawnDaemon, call, rawExchange, MAIN, type Daemon } from "./helpers.js";
import { WIRE_ERROR_STATUS } from "../../src/daemon/errors.js";

let d: Daemon;
beforeAll(async () => {
  d = await spawnDaemon({ args: ["--request-timeout-ms", "400", "--max-edit-entries", "5", "--max-atom-bytes", "64"] });
});
afterAll(async () => {
  await d.stop();
});

const head = async (): Promise<number> => (await call(d.url, "GET", "/health")).body.seq as number;
/** Status and parsed JSON body of a raw answer; the body must be the wire's error shape. */
function refusal(answer: string, status: number, type: string): void {
  expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
  const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(["error", "ok", "type"]);
  expect(body).toMatchObject({ ok: false, type });
  expect(WIRE_ERROR_STATUS[type as keyof typeof WIRE_ERROR_STATUS]).toBe(status);
}
const hostLine = () => `Host: 127.0.0.1:${d.port}\r\n`;

describe("one error shape before any route runs", () => {
  it("a URL that cannot be decoded (GET /v1/sentex/%zz) is 400 bad-request in the wire's shape", async () => {
    refusal(await rawExchange(d.port, `GET /v1/sentex/%zz HTTP/1.1\r\n${hostLine()}Connection: close\r\n\r\n`), 400, "bad-request");
  });

  it("headers over 16 KiB are 431 headers-too-large in the wire's shape", async () => {
    refusal(await rawExchange(d.port, `GET /health HTTP/1.1\r\n${hostLine()}X-Pad: ${"a".repeat(17_000)}\r\n\r\n`), 431, "headers-too-large");
  });

  it("a malformed request line is 400 bad-request in the wire's shape", async () => {
    for (const line of ["GARBAGE\r\n\r\n", "GET /health HTTP/9.9\r\n\r\n", "GET  HTTP/1.1\r\n\r\n", "\u0000\u0001\r\n\r\n"]) {
      refusal(await rawExchange(d.port, line), 400, "bad-request");
    }
  });

  it("an unknown route and a wrong method are 404 not-found in the wire's shape", async () => {
    refusal(await rawExchange(d.port, `DELETE /v1/assert HTTP/1.1\r\n${hostLine()}Connection: close\r\n\r\n`), 404, "not-found");
  });
});

describe("bodies", () => {
  it("a body that is not valid UTF-8 is 400 bad-encoding and stores nothing (two inputs never collapse into one sentex)", async () => {
    const before = await head();
    for (const bad of [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
      const body = Buffer.concat([Buffer.from('{"sentence":"(p \\"'), Buffer.from(bad), Buffer.from('\\")","context":"CxBytes"}')]);
      const req = Buffer.concat([Buffer.from(`POST /v1/assert HTTP/1.1\r\n${hostLine()}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`), body]);
      refusal(await rawExchange(d.port, req), 400, "bad-encoding");
    }
    expect(await head()).toBe(before);
    const good = await call(d.url, "POST", "/v1/assert", { sentence: '(p "\u00e9")', context: "CxBytes" });
    expect(good.status).toBe(200);
  });

  it("a body still incomplete at --request-timeout-ms is 408 request-timeout and the connection closes; others are answered meanwhile", async () => {
    const before = await head();
    const held = rawExchange(d.port, `POST /v1/assert HTTP/1.1\r\n${hostLine()}Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{"sentence": "(p`);
    expect((await call(d.url, "GET", "/health")).status).toBe(200);
    refusal(await held, 408, "request-timeout");
    expect(await head()).toBe(before);
  });

  it("headers never finished are cut at the same bound", async () => {
    const answer = await rawExchange(d.port, `GET /health HTTP/1.1\r\n${hostLine()}X-Slow: 1\r\n`);
    refusal(answer, 408, "request-timeout");
  });
});

describe("bounds on one request", () => {
  it("an edit over --max-edit-entries is 413 edit-too-large (adds and removes counted together); at the bound it is applied", async () => {
    const before = await head();
    const add = (n: number) => Array.from({ length: n }, (_, i) => ({ sentence: `(e E${i})`, context: "CxEdit" }));
    for (const body of [{ add: add(6) }, { add: add(3), remove: [1, 2, 3] }]) {
      for (const path of ["/v1/edit", "/v1/check-edit"]) {
        const a = await call(d.url, "POST", path, body);
        expect([path, a.status, a.body.type]).toEqual([path, 413, "edit-too-large"]);
      }
    }
    expect(await head()).toBe(before);
    const ok = await call(d.url, "POST", "/v1/edit", { add: add(5) });
    expect(ok.status).toBe(200);
    expect(await head()).toBe(before + 1);
  });

  it("an atom or a context name over --max-atom-bytes is 400 too-long; at the bound it passes", async () => {
    const before = await head();
    const cx = (bytes: number) => "Cx" + "A".repeat(bytes - 2);
    const str = (bytes: number) => `"${"\u00e9".repeat((bytes - 2) / 2)}"`; // 2 bytes per é, plus the quotes
    const over = [
      ["/v1/assert", { sentence: "(p A)", context: cx(65) }],
      ["/v1/assert", { sentence: `(p ${str(66)})`, context: "CxLong" }],
      ["/v1/assert", { sentence: `(p ${"B".repeat(65)})`, context: "CxLong" }],
      ["/v1/edit", { add: [{ sentence: "(p A)", context: cx(65) }] }],
      ["/v1/query", { goal: `(p ${"?x".padEnd(65, "x")})`, context: "CxLong" }],
      ["/v1/match", { sentence: "(p ?x)", context: cx(1 << 20) }],
      ["/v1/watch", { context: cx(65) }],
    ] as const;
    for (const [path, body] of over) {
      const a = await call(d.url, "POST", path, body);
      expect([path, a.status, a.body.type]).toEqual([path, 400, "too-long"]);
    }
    expect(await head()).toBe(before);
    expect((await call(d.url, "POST", "/v1/assert", { sentence: `(p ${str(64)})`, context: cx(64) })).status).toBe(200);
  });

  it("a field the schema leaves open (from, cursor) nested 100 000 deep is a typed 400, never a 500", async () => {
    const n = 100_000;
    for (const [path, raw] of [
      ["/v1/watch", `{"from": ${"[".repeat(n)}${"]".repeat(n)}}`],
      ["/v1/watch", `{"context": "CxDeep", "from": ${'{"a":'.repeat(n)}1${"}".repeat(n)}}`],
      ["/v1/poll", `{"token": "sub_x", "cursor": ${"[".repeat(n)}${"]".repeat(n)}}`],
    ] as const) {
      const a = await call(d.url, "POST", path, undefined, { raw });
      expect([path, a.status, a.body.type]).toEqual([path, 400, path === "/v1/poll" ? "unknown-subscription" : "bad-cursor"]);
    }
  });

  it("koinii serve --help names each bound with its unit", () => {
    const r = spawnSync(process.execPath, [MAIN, "serve", "--help"], { encoding: "utf8" });
    for (const flag of ["--request-timeout-ms <ms>", "--max-edit-entries <n>", "--max-atom-bytes <n>", "--max-body-bytes <n>"]) expect(r.stdout).toContain(flag);
  });
});
