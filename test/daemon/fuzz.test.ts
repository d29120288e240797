/**
 * A fast-check fuzz of requests against a real daemon: random JSON, random and hostile
 * sentences, deep nesting, huge strings, wrong types. Every answer is a typed refusal with
 * the status its type maps to (or an ok read), the daemon never crashes, and the KB does not
 * change (the head seq stays put).
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import fc from "fast-check";
import { spawnDaemon, call, type Daemon } from "./helpers.js";
import { WIRE_ERROR_STATUS } from "../../src/daemon/errors.js";

let d: Daemon;
beforeAll(async () => {
  d = await spawnDaemon({ args: ["--max-body-bytes", "300000"] });
});
afterAll(async () => {
  await d.stop();
});

const WRITES = ["/v1/assert", "/v1/edit", "/v1/retract", "/v1/agents"];
const READS = ["/v1/check-edit", "/v1/query", "/v1/match", "/v1/why", "/v1/contradictions", "/v1/poll", "/v1/unwatch"];

/** Sentences that are never admissible: broken syntax, variables in facts, bad names, over-deep or over-long. */
const hostileSentence = fc.oneof(
  fc.string().map((s) => `(${s}`),
  fc.string().map((s) => `)${s}(`),
  fc.string({ minLength: 1 }).map((s) => `(p ?x ${JSON.stringify(s)})`),
  fc.string().map((s) => `(Upper ${JSON.stringify(s)})`),
  fc.integer({ min: 20_000, max: 120_000 }).map((n) => `(p ${"(".repeat(n)}${")".repeat(n)})`),
  fc.constant(`(p "${"x".repeat(270_000)}")`),
  fc.string().map((s) => JSON.stringify(s)),
  fc.constantFrom("", "()", "(not)", "(and)", "(implies (p ?x) (q ?y))", "(p \"unterminated)", "(p \\u0000)", "(sentexHandle -1)", "(answers A B (sentexHandle 999999999))"),
);

const deep = fc.integer({ min: 50, max: 300 }).map((n) => JSON.parse("[".repeat(n) + "]".repeat(n)) as unknown);
/** Deep nesting as raw text (fast-check cannot print a very deep value when reporting). */
const deepText = fc.integer({ min: 1000, max: 50_000 }).map((n) => `{"sentence": ${"[".repeat(n)}${"]".repeat(n)}, "context": "CxFuzz"}`);
const wrong = fc.oneof(fc.jsonValue(), deep, fc.string({ maxLength: 2000 }), fc.constant(null), fc.double());

const writeBody = fc.oneof(
  fc.record({ sentence: hostileSentence, context: fc.oneof(fc.constant("CxFuzz"), fc.string(), wrong) }, { requiredKeys: [] }),
  fc.record({ add: fc.array(fc.record({ sentence: hostileSentence, context: fc.constant("CxFuzz") }), { minLength: 1, maxLength: 3 }), remove: fc.array(fc.integer({ min: 900_000_000, max: 999_999_999 })) }),
  fc.record({ handle: fc.oneof(fc.integer({ min: 900_000_000, max: 999_999_999 }), wrong) }),
  fc.record({ id: fc.string().filter((s) => !/^Agent[A-Z][A-Za-z0-9]*$/.test(s)) }),
  fc.dictionary(fc.string(), wrong),
  wrong,
);

const readBody = fc.oneof(
  fc.record({ goal: hostileSentence, context: fc.oneof(fc.constant("CxFuzz"), wrong) }),
  fc.record({ sentence: hostileSentence, context: fc.oneof(fc.constant("?ctx"), wrong) }),
  fc.record({ token: fc.oneof(fc.string(), wrong), cursor: wrong, waitMs: fc.oneof(fc.integer({ min: -5, max: 0 }), wrong), limit: wrong }, { requiredKeys: [] }),
  fc.dictionary(fc.string(), wrong),
  wrong,
);

const request = fc.oneof(
  fc.record({ path: fc.constantFrom(...WRITES), body: writeBody, raw: fc.constant(undefined), type: fc.constant("application/json") }),
  fc.record({ path: fc.constantFrom(...READS), body: readBody, raw: fc.constant(undefined), type: fc.constant("application/json") }),
  fc.record({ path: fc.constantFrom(...WRITES, ...READS), body: fc.constant(undefined), raw: fc.oneof(fc.string(), fc.constant('{"__proto__": {"x": 1}}'), fc.constant("{".repeat(10_000)), deepText), type: fc.constantFrom("application/json", "text/plain", "application/x-www-form-urlencoded", "") }),
);

describe("request fuzz", () => {
  it("random and hostile requests get only typed 4xx answers (or ok reads), never a crash, never a change to the KB", async () => {
    const before = (await call(d.url, "GET", "/health")).body.seq;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const a = await call(d.url, "POST", r.path, r.body === undefined ? undefined : r.body, { raw: r.raw, headers: { "content-type": r.type } });
        expect(a.status).toBeLessThan(500);
        expect(a.body, a.text.slice(0, 200)).toBeTypeOf("object");
        if (a.body.ok === true) {
          expect(a.status).toBe(200);
          // an ok write may only be a no-op (an empty edit): the head must not move
          if (WRITES.includes(r.path)) expect((await call(d.url, "GET", "/health")).body.seq).toBe(before);
        } else {
          expect(a.body.ok).toBe(false);
          expect(Object.keys(WIRE_ERROR_STATUS)).toContain(a.body.type);
          expect(a.status).toBe(WIRE_ERROR_STATUS[a.body.type as keyof typeof WIRE_ERROR_STATUS]);
          expect(typeof a.body.error).toBe("string");
        }
      }),
      { numRuns: 400 },
    );
    const after = await call(d.url, "GET", "/health");
    expect(after.body.seq).toBe(before);
    expect(d.proc.exitCode).toBe(null);
  });
});
