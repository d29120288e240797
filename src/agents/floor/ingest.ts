/**
 * The floor agent's ingest endpoint: where the capture pipeline (the voice gateway's
 * transcriber) hands the room to the floor. Loopback only: it binds 127.0.0.1/::1 (any other
 * address is refused), answers only peers on a loopback address whose Host names this
 * listener (a DNS-rebinding page is 421 `misdirected`) and who carry the endpoint's secret
 * (`Authorization: Bearer <secret>`, else 401 `unauthorized`: no other local process can
 * speak for a speaker), and takes only `application/json` bodies.
 *
 * | route                  | body                                                               | answer |
 * |------------------------|--------------------------------------------------------------------|--------|
 * | POST /capture-started  | {speakerId, startedAtMs}                                           | 202 {ok} |
 * | POST /utterance        | {speakerId, text, startedAtMs, endedAtMs?, displayName?, utteranceId?} | 202 {ok, utteranceId}; 200 {ok, duplicate: true} for an id seen recently |
 * | POST /work/start       | {speakerId, workId?}                                               | 202 {ok, workId} (a lookup holds the floor, ADR 0119 §7) |
 * | POST /work/end         | {workId}                                                           | 200 {ok}; 404 unknown-work |
 * | GET  /floor            | —                                                                  | 200 {ok, state, holderId, accounting} |
 *
 * Times in bodies are epoch milliseconds (the pipeline's wall clock); they are moved onto
 * the session's monotonic clock by the clock's current wall offset, once per capture (a
 * capture-started and its final map to the same instant, so the reorder sees them as one).
 * Refusals are `{ok: false, type, error}` with type `bad-request`, `not-json`,
 * `body-too-large`, `not-found`, `not-loopback`, `misdirected`, `unauthorized`, `unknown-work`,
 * `too-much-work`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { nanoid } from "nanoid";
import { z } from "zod";
import { localDoor } from "../../net/guard.js";
import { isLoopbackBind } from "../../net/loopback.js";
import { FloorError } from "./errors.js";
import { speakerId, type SpeakerId } from "./machine.js";
import type { FloorSession } from "./session.js";
import type { Clock } from "./time.js";

/** Largest request body. */
export const MAX_INGEST_BODY_BYTES = 64 * 1024;
/** Longest transcript accepted for one utterance (characters). */
export const MAX_UTTERANCE_CHARS = 8_000;
/** Utterance ids remembered for duplicate refusal. */
export const MAX_SEEN_UTTERANCE_IDS = 4_096;
/** Lookups holding the floor at once. */
export const MAX_OPEN_WORK = 16;

const epochMs = z.int().min(0).max(8_640_000_000_000_000);
const id = z.string().min(1).max(128).regex(/^[^\p{Cc}]+$/u, "no control characters");
const token = z.string().min(1).max(128).regex(/^[A-Za-z0-9._:-]+$/, "letters, digits and . _ : - only");

export const captureStartedSchema = z.strictObject({ speakerId: id, startedAtMs: epochMs });
export const utteranceSchema = z
  .strictObject({
    speakerId: id,
    text: z.string().max(MAX_UTTERANCE_CHARS),
    startedAtMs: epochMs,
    endedAtMs: epochMs.optional(),
    /** Untrusted label; labelSpeaker trims and cuts it to 100 characters. */
    displayName: z.string().max(1_000).optional(),
    utteranceId: token.optional(),
  })
  .refine((u) => u.endedAtMs === undefined || u.endedAtMs >= u.startedAtMs, { message: "endedAtMs is before startedAtMs", path: ["endedAtMs"] });
export const workStartSchema = z.strictObject({ speakerId: id, workId: token.optional() });
export const workEndSchema = z.strictObject({ workId: token });

export type UtteranceBody = z.infer<typeof utteranceSchema>;


export interface IngestOptions {
  session: FloorSession;
  clock: Clock;
  /** A loopback address (default 127.0.0.1). */
  host?: string;
  /** Every request must carry it as `Authorization: Bearer <secret>`. */
  secret: string;
  /** 0 = any free port (default). */
  port?: number;
  /** Where failures of a lookup's bookkeeping go. */
  onError?: (e: unknown) => void;
}

export interface Ingest {
  readonly url: string;
  readonly port: number;
  /** Stop accepting, end open lookups, close the socket. */
  close(): Promise<void>;
}

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Start the ingest endpoint for one session.
 *
 * @example const ingest = await startIngest({ session, clock: systemClock }); // ingest.url === "http://127.0.0.1:PORT"
 */
export async function startIngest(o: IngestOptions): Promise<Ingest> {
  const host = o.host ?? "127.0.0.1";
  if (!isLoopbackBind(host)) throw new FloorError("floor-session-options", `the ingest endpoint binds loopback only, got ${JSON.stringify(host)}`, { host });
  const { session, clock } = o;
  const onError = o.onError ?? (() => {});
  const seen = new Set<string>();
  /** The monotonic instant each speaker's announced capture maps to, keyed by its wall start. */
  const started = new Map<SpeakerId, { wallMs: number; monoMs: number }>();
  const work = new Map<string, () => void>();

  const toMono = (wallMs: number): number => Math.min(clock.monotonicMs(), clock.monotonicMs() - (clock.wallMs() - wallMs));

  const routes: Record<string, (body: unknown) => { status: number; body: Record<string, unknown> }> = {
    "POST /capture-started": (raw) => {
      const b = parse(captureStartedSchema, raw);
      const who = speakerId(b.speakerId);
      const monoMs = toMono(b.startedAtMs);
      started.set(who, { wallMs: b.startedAtMs, monoMs });
      if (started.size > 4_096) started.delete(started.keys().next().value!);
      session.captureStarted(who, monoMs);
      return { status: 202, body: { ok: true } };
    },
    "POST /utterance": (raw) => {
      const b = parse(utteranceSchema, raw);
      if (b.utteranceId !== undefined && seen.has(b.utteranceId)) return { status: 200, body: { ok: true, duplicate: true, utteranceId: b.utteranceId } };
      const utteranceId = b.utteranceId ?? `u-${nanoid(16)}`;
      seen.add(utteranceId);
      if (seen.size > MAX_SEEN_UTTERANCE_IDS) seen.delete(seen.values().next().value!);
      const who = speakerId(b.speakerId);
      const announced = started.get(who);
      const startedAtMs = announced?.wallMs === b.startedAtMs ? announced.monoMs : toMono(b.startedAtMs);
      if (announced?.wallMs === b.startedAtMs) started.delete(who);
      session.captureFinal({
        speakerId: who,
        startedAtMs,
        text: b.text,
        utteranceId,
        ...(b.endedAtMs !== undefined ? { endedAtMs: toMono(b.endedAtMs) } : {}),
        ...(b.displayName !== undefined ? { displayName: b.displayName } : {}),
      });
      return { status: 202, body: { ok: true, utteranceId } };
    },
    "POST /work/start": (raw) => {
      const b = parse(workStartSchema, raw);
      const workId = b.workId ?? `w-${nanoid(12)}`;
      if (work.has(workId)) return { status: 202, body: { ok: true, workId } };
      if (work.size >= MAX_OPEN_WORK) throw new Refusal(429, "too-much-work", `at most ${MAX_OPEN_WORK} lookups hold the floor at once`);
      let done!: () => void;
      const finished = new Promise<void>((r) => (done = r));
      work.set(workId, done);
      session.runFloorWork(speakerId(b.speakerId), () => finished).catch(onError);
      return { status: 202, body: { ok: true, workId } };
    },
    "POST /work/end": (raw) => {
      const b = parse(workEndSchema, raw);
      const done = work.get(b.workId);
      if (!done) throw new Refusal(404, "unknown-work", `no lookup ${JSON.stringify(b.workId)} is holding the floor`);
      work.delete(b.workId);
      done();
      return { status: 200, body: { ok: true } };
    },
    "GET /floor": () => {
      const m = session.machine;
      return { status: 200, body: { ok: true, state: m.state, holderId: m.holderId ?? null, accounting: m.accounting() } };
    },
  };

  const server: Server = createServer((req, res) => {
    void handle(req, res);
  });
  const door = localDoor(server, host, o.secret);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (status: number, body: Record<string, unknown>): void => {
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    };
    try {
      const refused = door(req);
      if (refused) throw new Refusal(refused.status, refused.type, refused.error);
      const path = (req.url ?? "/").split("?")[0];
      const route = routes[`${req.method} ${path}`];
      if (!route) throw new Refusal(404, "not-found", `no route ${req.method} ${path}`);
      let body: unknown = undefined;
      if (req.method === "POST") {
        if (!/^application\/json\b/i.test(req.headers["content-type"] ?? "")) throw new Refusal(415, "not-json", "send Content-Type: application/json");
        body = await readJson(req);
      }
      const out = route(body);
      send(out.status, out.body);
    } catch (e) {
      if (e instanceof Refusal) send(e.status, { ok: false, type: e.type, error: e.message });
      else {
        onError(e);
        send(500, { ok: false, type: "internal", error: e instanceof Error ? e.message : String(e) });
      }
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}`,
    port,
    async close() {
      for (const done of work.values()) done();
      work.clear();
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function parse<T>(schema: z.ZodType<T>, raw: unknown): T {
  const r = schema.safeParse(raw);
  if (!r.success) throw new Refusal(400, "bad-request", z.prettifyError(r.error));
  return r.data;
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_INGEST_BODY_BYTES) {
        chunks.length = 0; // drain and drop the rest; the refusal is answered at once
        reject(new Refusal(413, "body-too-large", `a body is at most ${MAX_INGEST_BODY_BYTES} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch {
        reject(new Refusal(400, "bad-request", "the body is not JSON"));
      }
    });
    req.on("error", reject);
  });
}
