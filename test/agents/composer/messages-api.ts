/**
 * The Anthropic Messages API, faked at the network boundary: a local HTTP server that
 * answers `POST /v1/messages` the way the real API does, keeps every request it saw, and
 * lets a test choose each answer. The real SDK (in-process or in a spawned agent) talks to
 * it through `baseURL` / `ANTHROPIC_BASE_URL`.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface SeenRequest {
  url: string;
  headers: IncomingMessage["headers"];
  body: { model: string; max_tokens: number; system: string; messages: { role: string; content: string }[] };
}

export type Respond = (body: SeenRequest["body"], res: ServerResponse) => void;

export interface MessagesApi {
  baseURL: string;
  /** Every request, in arrival order. */
  seen: SeenRequest[];
  /** How the next requests are answered; replace it per test. */
  respond: Respond;
  close(): Promise<void>;
}

/** A successful Messages API answer carrying `text` (no content block at all when `text` is ""). */
export function message(model: string, text: string, stopReason = "end_turn") {
  return {
    id: "msg_01XFDUDYJgAACzvnptvVoYEL",
    type: "message",
    role: "assistant",
    model,
    content: text === "" ? [] : [{ type: "text", text }],
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { input_tokens: 312, output_tokens: 41 },
  };
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json", "request-id": "req_test" });
  res.end(JSON.stringify(body));
}

/** Start the fake on a free loopback port; it answers `respond(body, res)` for each request. */
export async function startMessagesApi(respond: Respond): Promise<MessagesApi> {
  const api = { seen: [] as SeenRequest[], respond } as MessagesApi;
  const server: Server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString("utf8")));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/messages") return json(res, 404, { type: "error", error: { type: "not_found_error", message: "no route" } });
      const body = JSON.parse(raw) as SeenRequest["body"];
      api.seen.push({ url: req.url, headers: req.headers, body });
      api.respond(body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  api.baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  api.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return api;
}
