/**
 * A client for the DM platform (OpenBotCity): read a conversation's recent messages and
 * send a reply. The bearer token is read from a file on every request (the presence
 * daemon is its custodian and may rotate it; this client only reads) and never appears
 * in an error or a log line.
 */
import { readFileSync } from "node:fs";
import { request } from "undici";
import { z } from "zod";

export const defaultPlatformTimeoutMs = 30_000;
/** A response body larger than this is refused rather than buffered. */
export const maxPlatformResponseBytes = 1_000_000;
/** Characters of a failing response body kept in the error, for diagnosis. */
export const maxErrorBodyChars = 200;

export interface ThreadMessage {
  readonly id: string | null;
  readonly senderId: string | null;
  readonly from: string;
  readonly text: string;
}

/** The port the responder sends through. */
export interface PlatformPort {
  /** Recent messages of a conversation, oldest first. */
  fetchThread(conversationId: string, options?: { signal?: AbortSignal }): Promise<ThreadMessage[]>;
  send(conversationId: string, text: string): Promise<void>;
}

export type PlatformErrorCode = "http_status" | "network" | "no_token" | "bad_response";

/** A platform call failed. `status` is set for `http_status`. */
export class PlatformError extends Error {
  constructor(
    readonly code: PlatformErrorCode,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "PlatformError";
  }
}

export interface PlatformClientOptions {
  /** e.g. https://api.openbotcity.com */
  baseUrl: string;
  /** A file holding the token, either bare or as a `OPENBOTCITY_JWT=...` line. */
  tokenFile: string;
  /** The variable name looked for in the token file. */
  tokenVariable?: string;
  userAgent?: string;
  timeoutMs?: number;
}

/** The token in `text`: the value of `variable=...` if such a line exists, else the whole trimmed text. */
export function parseTokenFile(text: string, variable: string): string | null {
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (m && m[1] === variable) {
      const v = m[2].trim().replace(/^(["'])(.*)\1$/, "$2");
      return v.length > 0 ? v : null;
    }
  }
  const bare = text.trim();
  return bare.length > 0 && !bare.includes("=") && !/\s/.test(bare) ? bare : null;
}

const ThreadSchema = z.object({
  messages: z
    .array(
      z.object({
        id: z.union([z.string(), z.number()]).nullish(),
        sender_id: z.string().nullish(),
        display_name: z.string().nullish(),
        sender_name: z.string().nullish(),
        message: z.string().nullish(),
        text: z.string().nullish(),
      }),
    )
    .max(10_000),
});

export class PlatformClient implements PlatformPort {
  private readonly base: string;
  constructor(private readonly options: PlatformClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, "");
  }

  private token(): string {
    let text: string;
    try {
      text = readFileSync(this.options.tokenFile, "utf8");
    } catch (e) {
      throw new PlatformError("no_token", `cannot read the token file ${this.options.tokenFile}: ${(e as NodeJS.ErrnoException).code ?? "error"}`);
    }
    const t = parseTokenFile(text, this.options.tokenVariable ?? "OPENBOTCITY_JWT");
    if (t === null) throw new PlatformError("no_token", `no token in ${this.options.tokenFile}`);
    return t;
  }

  private async call(method: "GET" | "POST", path: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    const url = `${this.base}${path}`;
    const timeout = AbortSignal.timeout(this.options.timeoutMs ?? defaultPlatformTimeoutMs);
    let res;
    try {
      res = await request(url, {
        method,
        headers: {
          authorization: `Bearer ${this.token()}`,
          "user-agent": this.options.userAgent ?? "koinii-responder/0.1",
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal === undefined ? timeout : AbortSignal.any([timeout, signal]),
      });
    } catch (e) {
      if (e instanceof PlatformError) throw e;
      throw new PlatformError("network", `${method} ${path}: ${(e as Error).message}`, undefined, { cause: e });
    }
    const len = Number(res.headers["content-length"] ?? 0);
    if (len > maxPlatformResponseBytes) {
      res.body.destroy();
      throw new PlatformError("bad_response", `${method} ${path}: response of ${len} bytes exceeds ${maxPlatformResponseBytes}`, res.statusCode);
    }
    const chunks: Buffer[] = [];
    let bytes = 0;
    try {
      for await (const chunk of res.body) {
        bytes += (chunk as Buffer).length;
        if (bytes > maxPlatformResponseBytes) {
          res.body.destroy();
          throw new PlatformError("bad_response", `${method} ${path}: response exceeds ${maxPlatformResponseBytes} bytes`, res.statusCode);
        }
        chunks.push(chunk as Buffer);
      }
    } catch (e) {
      if (e instanceof PlatformError) throw e;
      throw new PlatformError("network", `${method} ${path}: ${(e as Error).message}`, undefined, { cause: e });
    }
    const text = Buffer.concat(chunks).toString("utf8");
    if (res.statusCode < 200 || res.statusCode > 299) {
      throw new PlatformError("http_status", `${method} ${path} answered ${res.statusCode}: ${text.slice(0, maxErrorBodyChars)}`, res.statusCode);
    }
    if (text.length === 0) return null;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new PlatformError("bad_response", `${method} ${path}: the 2xx body is not JSON`, res.statusCode);
    }
  }

  /**
   * @example await client.fetchThread("c-123") // [{ id: "m1", senderId: "b1", from: "Rex", text: "hi" }]
   */
  async fetchThread(conversationId: string, options: { signal?: AbortSignal } = {}): Promise<ThreadMessage[]> {
    const json = await this.call("GET", `/dm/conversations/${encodeURIComponent(conversationId)}`, undefined, options.signal);
    const r = ThreadSchema.safeParse(json);
    if (!r.success) throw new PlatformError("bad_response", `GET thread: unexpected shape: ${r.error.issues[0]?.message ?? "?"}`);
    return r.data.messages.map((m) => ({
      id: m.id === null || m.id === undefined ? null : String(m.id),
      senderId: m.sender_id ?? null,
      from: m.display_name ?? m.sender_name ?? "?",
      text: m.message ?? m.text ?? "",
    }));
  }

  /**
   * POST `/dm/conversations/{id}/send` with `{message}`. Any non-2xx is a `PlatformError`.
   *
   * @example await client.send("c-123", "Thank you, I have read it.")
   */
  async send(conversationId: string, text: string): Promise<void> {
    await this.call("POST", `/dm/conversations/${encodeURIComponent(conversationId)}/send`, { message: text });
  }
}
