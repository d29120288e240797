/**
 * The responder's own HTTP surface, loopback only (ADR-0014: `GET /status` on loopback):
 *
 * | route | answer |
 * |---|---|
 * | `POST /dm` | 202 `{ok, query, message_id}` once the DM's query node is stored; 400 bad body; 413 too large; 415 not JSON (each of the three handed to `refused`, which audits it); 503 `kb_unavailable` while disconnected |
 * | `GET /status` | 200 the status document |
 * | anything else | 404 |
 * | any request from a non-loopback peer | 403 `not-loopback` |
 * | any request whose Host is not a bound loopback name (DNS rebinding) | 421 `misdirected` |
 * | any request without the secret (`Authorization: Bearer <secret>`) | 401 `unauthorized` |
 *
 * The server binds a loopback address only (`bind` is refused otherwise) and checks every
 * peer address, Host and secret as well (src/net/guard.ts), so neither a proxy or port
 * forward, nor a page in a browser, nor another local process can speak for a sender.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { localDoor } from "../../net/guard.js";
import { isLoopbackBind } from "../../net/loopback.js";
import { parseIngest } from "./dmnode.js";
import type { Dm } from "./gate.js";

/** Largest `POST /dm` body. */
export const maxIngestBodyBytes = 256 * 1024;

export { isLoopbackAddress, isLoopbackBind } from "../../net/loopback.js";

export interface HttpOptions {
  host: string;
  port: number;
  /** Every request must carry it as `Authorization: Bearer <secret>`. */
  secret: string;
  ingest: (dm: Dm) => Promise<{ query: number }>;
  /** A `POST /dm` refused as malformed (400, 413, 415), with the status and why. */
  refused?: (status: number, error: string) => void;
  status: () => Record<string, unknown>;
  log: (msg: string, extra?: Record<string, unknown>) => void;
}

export interface HttpSurface {
  readonly url: string;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), "cache-control": "no-store" });
  res.end(text);
}

/**
 * The body, or "too_large" as soon as it passes the bound. A refused body is still read and
 * dropped to its end (the server's requestTimeout bounds how long): closing with it unread
 * would reset the connection, and a client still writing would lose the 413 to EPIPE.
 */
function readBody(req: IncomingMessage): Promise<Buffer | "too_large"> {
  if (Number(req.headers["content-length"] ?? 0) > maxIngestBodyBytes) {
    req.resume();
    return Promise.resolve("too_large");
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let n = 0;
    req.on("data", (c: Buffer) => {
      if (n < 0) return; // refused: dropped
      n += c.length;
      if (n > maxIngestBodyBytes) {
        n = -1;
        chunks.length = 0;
        resolve("too_large");
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => n >= 0 && resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** Start the loopback server; resolves once it listens. */
export async function startHttp(o: HttpOptions): Promise<HttpSurface> {
  if (!isLoopbackBind(o.host)) throw new RangeError(`the responder binds loopback only, got ${o.host}`);
  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((e: unknown) => {
      o.log("http handler failed", { error: (e as Error)?.message ?? String(e) });
      if (!res.headersSent) send(res, 500, { ok: false, type: "internal", error: "internal error" });
      else res.destroy();
    });
  });
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  const door = localDoor(server, o.host, o.secret);

  /** A malformed event is reported, then answered: the audit line exists before the client sees the refusal. */
  function refuse(res: ServerResponse, status: number, type: string, error: string): void {
    o.refused?.(status, error);
    send(res, status, { ok: false, type, error });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refused = door(req);
    if (refused) {
      req.resume();
      send(res, refused.status, { ok: false, type: refused.type, error: refused.error });
      return;
    }
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && path === "/status") {
      send(res, 200, o.status());
      return;
    }
    if (req.method === "POST" && path === "/dm") {
      const ct = String(req.headers["content-type"] ?? "");
      if (!/^application\/json\b/i.test(ct)) {
        req.resume();
        refuse(res, 415, "unsupported-media-type", "POST /dm takes application/json");
        return;
      }
      const body = await readBody(req);
      if (body === "too_large") {
        refuse(res, 413, "body-too-large", `body larger than ${maxIngestBodyBytes} bytes`);
        return;
      }
      let json: unknown;
      try {
        json = JSON.parse(body.toString("utf8"));
      } catch {
        refuse(res, 400, "bad-request", "body is not JSON");
        return;
      }
      const parsed = parseIngest(json);
      if (!parsed.ok) {
        refuse(res, 400, "bad-request", parsed.error);
        return;
      }
      try {
        const r = await o.ingest(parsed.dm);
        send(res, 202, { ok: true, query: r.query, message_id: parsed.dm.messageId });
      } catch (e) {
        const code = (e as { code?: unknown }).code;
        const type = (e as { type?: unknown }).type;
        if (code === "kb_unavailable" || type === "network" || type === "timeout" || type === "aborted" || type === "no-writer") send(res, 503, { ok: false, type: "kb_unavailable", error: "not connected to the knowledge base; retry" });
        else send(res, 502, { ok: false, type: "kb_error", error: String((e as Error)?.message ?? e).slice(0, 300) });
      }
      return;
    }
    req.resume();
    send(res, 404, { ok: false, type: "not-found", error: `${req.method} ${path}` });
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const a = server.address() as AddressInfo;
  const host = a.family === "IPv6" ? `[${a.address}]` : a.address;
  return {
    url: `http://${host}:${a.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
