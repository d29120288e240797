/**
 * A small wire client over undici, used by the client verbs (and handy in tests):
 *
 *   const c = new WireClient("http://127.0.0.1:4200", process.env.KOINII_TOKEN);
 *   const { handle } = await c.call("POST", "/v1/assert", { sentence: "(dog Muffet)", context: "CxPets" });
 *
 * An `{ok: false}` answer becomes a `WireClientError` carrying the daemon's `type`.
 */
import { request } from "undici";

export class WireClientError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(message);
    this.name = "WireClientError";
  }
}

export class WireClient {
  constructor(
    readonly url: string,
    readonly token?: string,
  ) {}

  async call<T = Record<string, unknown>>(method: "GET" | "POST", path: string, body?: unknown, opts: { timeoutMs?: number } = {}): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const timeout = opts.timeoutMs ?? 60_000;
    const res = await request(new URL(path, this.url), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
    const text = await res.body.text();
    let parsed: { ok?: boolean; type?: string; error?: string };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      throw new WireClientError("bad-reply", `the daemon answered ${res.statusCode} with a body that is not JSON`, res.statusCode, text);
    }
    if (parsed.ok !== true) throw new WireClientError(parsed.type ?? "daemon-error", parsed.error ?? `status ${res.statusCode}`, res.statusCode, parsed);
    return parsed as T;
  }
}
