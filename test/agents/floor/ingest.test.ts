/** The loopback ingest endpoint: shapes it accepts, what it refuses, and how it maps time. */
import { afterEach, describe, expect, it } from "vitest";
import { rawExchange } from "../../daemon/helpers.js";
import {
  FloorMachine,
  FloorSession,
  MAX_INGEST_BODY_BYTES,
  startIngest,
  type Ingest,
} from "../../../src/agents/floor/index.js";
import { MemoryRecorder, ScriptedMouth } from "./doubles.js";
import { ManualTime, WALL_EPOCH_MS as W } from "./fake-time.js";
import { INGEST_SECRET, ingestAuth, post } from "./helpers.js";
import { isLoopbackAddress } from "../../../src/net/loopback.js";

const open: Ingest[] = [];
afterEach(async () => {
  for (const i of open.splice(0)) await i.close();
});

async function rig() {
  const time = new ManualTime();
  const recorder = new MemoryRecorder();
  const session = new FloorSession({
    machine: new FloorMachine({ names: ["clankie"], replyPolicy: "addressed", chattiness: "balanced" }),
    mouth: new ScriptedMouth({ "hey clankie": "hello" }),
    recorder,
    clock: time,
    scheduler: time,
  });
  const ingest = await startIngest({ session, clock: time, secret: INGEST_SECRET });
  open.push(ingest);
  return { time, recorder, session, ingest };
}

describe("ingest endpoint", () => {
  it("binds loopback only: a non-loopback address is refused before listening", async () => {
    const { session, time } = await rig();
    await expect(startIngest({ session, clock: time, host: "0.0.0.0", secret: INGEST_SECRET })).rejects.toMatchObject({ type: "floor-session-options" });
    for (const [host, ok] of [["127.0.0.1", true], ["127.8.9.10", true], ["::1", true], ["[::1]", true], ["::ffff:127.0.0.1", true], ["10.0.0.1", false], ["::", false], [undefined, false]] as const) {
      expect([host, isLoopbackAddress(host)]).toEqual([host, ok]);
    }
  });

  it("an utterance goes to the session with its times moved onto the session clock; its id comes back, a repeat is a duplicate", async () => {
    const { time, recorder, session, ingest } = await rig();
    time.advanceTo(5_000);
    const a = await post(ingest.url, "/utterance", { speakerId: "alice", displayName: " Alice ", text: "hey clankie", startedAtMs: W + 4_000, endedAtMs: W + 4_800, utteranceId: "cap-1" });
    expect(a).toEqual({ status: 202, body: { ok: true, utteranceId: "cap-1" } });
    expect(await post(ingest.url, "/utterance", { speakerId: "alice", text: "hey clankie", startedAtMs: W + 4_000, utteranceId: "cap-1" })).toEqual({
      status: 200,
      body: { ok: true, duplicate: true, utteranceId: "cap-1" },
    });
    const minted = await post(ingest.url, "/utterance", { speakerId: "bob", text: "hi", startedAtMs: W + 4_900 });
    expect(minted.body.utteranceId).toMatch(/^u-[A-Za-z0-9_-]{16}$/);
    await session.idle();
    expect(recorder.utterances().map((u) => [u.utteranceId, u.speakerId, u.displayName, u.startedAtMs, u.endedAtMs, u.appliedAtMs])).toEqual([
      ["cap-1", "alice", "Alice", 4_000, 4_800, 5_000],
      [minted.body.utteranceId, "bob", undefined, 4_900, 5_000, 5_000],
    ]);
    expect((await (await fetch(ingest.url + "/floor", { headers: ingestAuth })).json()) as unknown).toEqual({
      ok: true,
      state: "engaged",
      holderId: "alice",
      accounting: { offered: 0, taken: 0, suppressed: 0 },
    });
  });

  it("a capture-started holds a later final for the grace, and its own final releases it", async () => {
    const { time, recorder, session, ingest } = await rig();
    time.advanceTo(1_000);
    await post(ingest.url, "/capture-started", { speakerId: "alice", startedAtMs: W + 100 });
    await post(ingest.url, "/utterance", { speakerId: "bob", text: "so anyway", startedAtMs: W + 200 });
    expect(recorder.utterances()).toEqual([]);
    time.advanceTo(1_100);
    await post(ingest.url, "/utterance", { speakerId: "alice", text: "the meeting moved", startedAtMs: W + 100 });
    await session.idle();
    expect(recorder.utterances().map((u) => [u.text, u.appliedAtMs])).toEqual([
      ["the meeting moved", 1_100],
      ["so anyway", 1_100],
    ]);
  });

  it("a lookup started over ingest holds the floor until it ends; an unknown lookup is refused", async () => {
    const { time, session, ingest } = await rig();
    const { body } = await post(ingest.url, "/work/start", { speakerId: "carol" });
    expect(session.machine.holderId).toBe("carol");
    time.advanceTo(90_000); // the 15 s heartbeat keeps it past the 60 s decay
    expect(session.machine.state).toBe("engaged");
    expect(await post(ingest.url, "/work/end", { workId: body.workId })).toEqual({ status: 200, body: { ok: true } });
    expect((await post(ingest.url, "/work/end", { workId: body.workId })).body).toMatchObject({ ok: false, type: "unknown-work" });
    time.advanceTo(200_000);
    expect(session.machine.state).toBe("dormant");
  });

  it("refuses out loud: bad shapes, unknown keys, non-JSON, wrong content type, too large, unknown routes", async () => {
    const { ingest, recorder, session } = await rig();
    const cases: [string, unknown, Record<string, string>, number, string][] = [
      ["/utterance", { speakerId: "alice", text: "hi" }, {}, 400, "bad-request"],
      ["/utterance", { speakerId: "alice", text: "hi", startedAtMs: W, extra: 1 }, {}, 400, "bad-request"],
      ["/utterance", { speakerId: "alice", text: "hi", startedAtMs: W + 10, endedAtMs: W }, {}, 400, "bad-request"],
      ["/utterance", { speakerId: "", text: "hi", startedAtMs: W }, {}, 400, "bad-request"],
      ["/utterance", { speakerId: "al\u0000ice", text: "hi", startedAtMs: W }, {}, 400, "bad-request"],
      ["/utterance", { speakerId: "alice", text: "hi", startedAtMs: W, utteranceId: "a b" }, {}, 400, "bad-request"],
      ["/utterance", { speakerId: "alice", text: "x".repeat(8_001), startedAtMs: W }, {}, 400, "bad-request"],
      ["/utterance", "{not json", {}, 400, "bad-request"],
      ["/utterance", { speakerId: "alice", text: "hi", startedAtMs: W }, { "content-type": "text/plain" }, 415, "not-json"],
      ["/utterance", { text: "y".repeat(MAX_INGEST_BODY_BYTES) }, {}, 413, "body-too-large"],
      ["/nowhere", {}, {}, 404, "not-found"],
    ];
    for (const [path, body, headers, status, type] of cases) {
      const r = await post(ingest.url, path, body, headers);
      expect([path, r.status, r.body.type]).toEqual([path, status, type]);
      expect(r.body.ok).toBe(false);
    }
    await session.idle();
    expect(recorder.entries).toEqual([]);
  });

  it("takes no caller's word without the secret, and no page's under a foreign Host: 401 unauthorized, 421 misdirected, nothing heard", async () => {
    const { ingest, recorder, session } = await rig();
    const line = { speakerId: "alice", text: "hey clankie", startedAtMs: W };
    for (const headers of [{ authorization: "" }, { authorization: "Bearer wrong-secret-0123456789" }, { authorization: `Basic ${INGEST_SECRET}` }, { authorization: `Bearer ${INGEST_SECRET}x` }]) {
      const r = await post(ingest.url, "/utterance", line, headers);
      expect([headers.authorization, r.status, r.body.type]).toEqual([headers.authorization, 401, "unauthorized"]);
    }
    expect((await fetch(ingest.url + "/floor")).status).toBe(401);
    const body = JSON.stringify(line);
    for (const host of [`evil.example:${ingest.port}`, "evil.example", `127.0.0.1:${ingest.port + 1}`]) {
      const a = await rawExchange(ingest.port, `POST /utterance HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${INGEST_SECRET}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
      expect([host, /^HTTP\/1\.1 (\d+)/.exec(a)?.[1]]).toEqual([host, "421"]);
      expect(a).toContain('"type":"misdirected"');
    }
    await session.idle();
    expect(recorder.entries).toEqual([]);
  });
});
