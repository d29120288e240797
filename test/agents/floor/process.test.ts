/**
 * End to end through real processes: a daemon with an admin token, the floor agent as
 * `koinii floor` with its own agent token, the deterministic composer (or the Anthropic one
 * against a local Messages API) as the mouth, and the room read back from the daemon.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerAgent, wire, type Medium } from "../../../src/channel/index.js";
import { readRoom } from "../../../src/agents/floor/index.js";
import { ADMIN_TOKEN, MAIN, eventually, spawnDaemon, type Daemon } from "../../channel/helpers.js";
import { json, message, startMessagesApi, type MessagesApi } from "../composer/messages-api.js";
import { INGEST_SECRET, kbDecisions, kbOutcomes, post } from "./helpers.js";
import { statSync, readFileSync } from "node:fs";

const ROOM = "CxRoomLobby";
let daemon: Daemon;
let admin: Medium;
let dir: string;

beforeAll(async () => {
  daemon = await spawnDaemon({ adminToken: ADMIN_TOKEN });
  admin = wire({ url: daemon.url, token: ADMIN_TOKEN });
  dir = mkdtempSync(join(tmpdir(), "koinii-floor-"));
});
afterAll(async () => {
  await admin?.close();
  await daemon?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The child's environment: no model (the deterministic composer) unless `extra` names one. */
function floorEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "KOINII_COMPOSER_MODELS", "KOINII_TOKEN", "KOINII_URL"]) delete env[k];
  return { ...env, ...extra };
}

function startFloor(args: string[], extraEnv: NodeJS.ProcessEnv = {}): { proc: ChildProcess; url: Promise<string>; stderr: () => string; exited: Promise<number | string> } {
  const proc = spawn(process.execPath, [MAIN, "floor", ...args], { env: floorEnv(extraEnv), stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | string>((r) => proc.once("exit", (code, signal) => r(code ?? signal ?? -1)));
  const url = new Promise<string>((res, rej) => {
    let out = "";
    proc.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /koinii floor listening on (http:\/\/\S+)\n/.exec(out);
      if (m) res(m[1]!);
    });
    void exited.then((code) => rej(new Error(`koinii floor exited (${code}) before listening: ${err}`)));
  });
  return { proc, url, stderr: () => err, exited };
}

describe("koinii floor (a real process against a real daemon)", () => {
  it("--help lists every option", () => {
    const r = spawnSync(process.execPath, [MAIN, "floor", "--help"], { env: floorEnv(), encoding: "utf8" });
    expect(r.status).toBe(0);
    for (const opt of ["--url", "--token", "--room", "--persona", "--ingest-port", "--ingest-host", "--ingest-secret", "--ingest-secret-file"]) expect(r.stdout).toContain(opt);
  });

  it("refuses a persona that does not parse, and a non-loopback ingest address, with exit 1", () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ id: "AgentClankie", names: [] }));
    const r = spawnSync(process.execPath, [MAIN, "floor", "--url", daemon.url, "--room", ROOM, "--persona", bad], { env: floorEnv(), encoding: "utf8" });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("persona config refused");
    const r2 = spawnSync(process.execPath, [MAIN, "floor", "--room", ROOM, "--persona", bad, "--ingest-host", "0.0.0.0"], { env: floorEnv(), encoding: "utf8" });
    expect(r2.status).toBe(1);
    expect(r2.stderr).toContain("loopback");
  });

  it("hears the room on its ingest endpoint, records lines, decisions and replies in the daemon under its own token, and stops on SIGTERM", async () => {
    const { token } = await registerAgent(admin, "AgentClankie", { displayName: "Clankie" });
    const persona = join(dir, "persona.json");
    writeFileSync(persona, JSON.stringify({ id: "AgentClankie", names: ["Clankie"], replyPolicy: "addressed", voice: "Brief." }));
    const floor = startFloor(["--url", daemon.url, "--token", token!, "--room", ROOM, "--persona", persona, "--ingest-port", "0", "--ingest-secret", INGEST_SECRET]);
    const url = await floor.url;
    expect((await post(url, "/utterance", { speakerId: "mallory", text: "hey clankie", startedAtMs: Date.now() }, { authorization: "" })).status).toBe(401);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const now = Date.now();
    const lines: [string, string, string][] = [
      ["alice", "Alice", "hey clankie are you there"],
      ["bob", "Bob", "that is clankie's job"],
      ["carol", "Carol", "ask clankie about it"],
    ];
    for (const [i, [who, name, text]] of lines.entries()) {
      const r = await post(url, "/utterance", { speakerId: who, displayName: name, text, startedAtMs: now - 1_000 + i, endedAtMs: now + i });
      expect(r.status).toBe(202);
    }
    const room = await eventually(
      () => readRoom(admin, ROOM),
      (h) => h.utterances.length === 3 && h.utterances.every((u) => u.decisions.length === 1) && h.utterances[0].replies.length === 1,
      1_500,
    );
    expect(kbDecisions(room)).toEqual([
      ["hey clankie are you there", "wake(addressed)", "alice"],
      ["that is clankie's job", "listen", "alice"],
      ["ask clankie about it", "listen", "alice"],
    ]);
    // Written by the floor agent, in its own context, stamped by the daemon from its token.
    const u0 = await admin.sentex(room.utterances[0].handle);
    expect([u0.context, u0.creator]).toEqual(["CxClankie", "AgentClankie"]);
    expect(room.utterances[0].replies[0]).toMatchObject({ agent: "AgentClankie", text: expect.stringContaining("I heard you") });
    expect(room.changes.map((c) => [c.state, c.holderId, c.cause])).toEqual([["engaged", "alice", "utterance"]]);

    // Retracting the hail takes its decision and the reply with it.
    const { removed } = await admin.retract(room.utterances[0].handle);
    expect(removed).toHaveLength(3);
    const after = await readRoom(admin, ROOM);
    expect(after.utterances.map((u) => u.text)).toEqual(["that is clankie's job", "ask clankie about it"]);

    floor.proc.kill("SIGTERM");
    expect(await floor.exited).toBe(0);
    expect(floor.stderr()).toContain('"msg":"stopped"');
  });

  /** Register `agent`, start `koinii floor` for `room` with an addressed-only persona named Clankie. */
  async function floorFor(agent: string, room: string, extraEnv: NodeJS.ProcessEnv = {}) {
    const { token } = await registerAgent(admin, agent, { displayName: "Clankie" });
    const persona = join(dir, `${agent}.json`);
    writeFileSync(persona, JSON.stringify({ id: agent, names: ["Clankie"], replyPolicy: "addressed", voice: "Brief." }));
    const floor = startFloor(["--url", daemon.url, "--token", token!, "--room", room, "--persona", persona, "--ingest-port", "0", "--ingest-secret", INGEST_SECRET], extraEnv);
    return { floor, url: await floor.url };
  }

  /** Post the lines one at a time, each only after the previous one's turn (if any) is settled in the KB. */
  async function say(url: string, room: string, lines: [string, string][], turns: boolean[]) {
    const now = Date.now();
    for (const [i, [who, text]] of lines.entries()) {
      const r = await post(url, "/utterance", { speakerId: who, text, startedAtMs: now - 1_000 + i, endedAtMs: now + i });
      expect(r.status).toBe(202);
      const settled = turns.slice(0, i + 1).filter(Boolean).length;
      await eventually(
        () => readRoom(admin, room),
        (h) => h.utterances.length === i + 1 && h.utterances.reduce((n, u) => n + u.replies.length + u.silences.length, 0) === settled,
        1_500,
      );
    }
    return readRoom(admin, room);
  }

  it("without a model he speaks when addressed, keeps a bare mention and a nameless holder line silent (chosen), and a bare mention does not move the holder", async () => {
    const room = "CxRoomHall";
    const { floor, url } = await floorFor("AgentHush", room);
    const h = await say(
      url,
      room,
      [
        ["alice", "hey clankie are you there"],
        ["bob", "I think clankie knows the answer"],
        ["carol", "clankie did you see that?"],
        ["carol", "and the build is green"],
      ],
      [true, true, true, true],
    );
    expect(kbDecisions(h)).toEqual([
      ["hey clankie are you there", "wake(addressed)", "alice"],
      ["I think clankie knows the answer", "offer(mentioned)", "alice"],
      ["clankie did you see that?", "offer(mentioned)", "alice"],
      ["and the build is green", "offer(holder)", "carol"],
    ]);
    const outcomes = kbOutcomes(h);
    expect(outcomes).toHaveLength(4);
    expect(outcomes[0]).toContain("I heard you");
    expect(outcomes[1]).toBe("(chosen)");
    expect(outcomes[2]).toContain("I heard you");
    expect(outcomes[3]).toBe("(chosen)");
    // The hail engaged on Alice; the bare mention left her holding; the mention that asked him moved it to Carol.
    expect(h.changes.map((c) => [c.state, c.holderId, c.cause])).toEqual([
      ["engaged", "alice", "utterance"],
      ["engaged", "carol", "settle"],
    ]);
    floor.proc.kill("SIGTERM");
    expect(await floor.exited).toBe(0);
  });

  describe("with a model (the Anthropic Messages API faked on loopback)", () => {
    let api: MessagesApi;
    beforeAll(async () => {
      api = await startMessagesApi(() => undefined);
    });
    afterAll(() => api?.close());

    it("sends the floor's own prompt, and records an empty answer and a [silence] answer as chosen silence, not a failure", async () => {
      const room = "CxRoomAttic";
      // The line being answered (the data block's "message"), not the history before it.
      const said = (body: MessagesApi["seen"][number]["body"]): string => {
        const user = body.messages[0].content;
        return (JSON.parse(user.slice(user.indexOf("{"), user.lastIndexOf("}") + 1)) as { message: string }).message;
      };
      api.respond = (body, res) => {
        if (said(body).includes("did you see that")) return json(res, 200, message(body.model, ""));
        if (said(body).includes("go ahead")) return json(res, 200, message(body.model, "[silence]"));
        return json(res, 200, message(body.model, "Here, Alice."));
      };
      const { floor, url } = await floorFor("AgentMute", room, { ANTHROPIC_API_KEY: "sk-test", ANTHROPIC_BASE_URL: api.baseURL });
      const h = await say(
        url,
        room,
        [
          ["alice", "hey clankie are you there"],
          ["bob", "clankie did you see that"],
          ["carol", "alright clankie go ahead"],
        ],
        [true, true, true],
      );
      expect(kbOutcomes(h)).toEqual(["Here, Alice.", "(chosen)", "(chosen)"]);
      expect(h.changes.map((c) => [c.state, c.holderId])).toEqual([["engaged", "alice"]]);

      expect(api.seen).toHaveLength(3);
      for (const { body } of api.seen) {
        expect(body.system).toContain("Nothing forces you to speak");
        expect(body.system).toContain("[silence]");
        expect(body.system).not.toContain("direct message");
        expect(body.system).not.toContain("Reply briefly and warmly");
        expect(body.messages[0].content).not.toContain("Write the reply");
      }
      floor.proc.kill("SIGTERM");
      expect(await floor.exited).toBe(0);
      expect(floor.stderr()).not.toContain("floor error");
    });
  });
  it("without --ingest-secret, generates one into --ingest-secret-file (mode 0600) and requires it", async () => {
    const { token } = await registerAgent(admin, "AgentSecretive", { displayName: "Secretive" });
    const persona = join(dir, "secretive.json");
    writeFileSync(persona, JSON.stringify({ id: "AgentSecretive", names: ["Secretive"], replyPolicy: "addressed", voice: "Brief." }));
    const file = join(dir, "nested", "floor.secret");
    const floor = startFloor(["--url", daemon.url, "--token", token!, "--room", "CxRoomSecret", "--persona", persona, "--ingest-port", "0", "--ingest-secret-file", file]);
    const url = await floor.url;
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const secret = readFileSync(file, "utf8").trim();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const line = { speakerId: "alice", text: "hello", startedAtMs: Date.now() };
    expect((await post(url, "/utterance", line, { authorization: `Bearer ${INGEST_SECRET}` })).status).toBe(401);
    expect((await post(url, "/utterance", line, { authorization: `Bearer ${secret}` })).status).toBe(202);
    floor.proc.kill("SIGTERM");
    expect(await floor.exited).toBe(0);
  });
});
