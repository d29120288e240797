/**
 * The daemons a wire medium may speak to (docs/channel.md "Several daemons"): the list of
 * base URLs it was given, validated; one keep-alive undici Pool per origin; the node that
 * answered last (reads go there first) and the node known to write (writes go there first).
 *
 *   const nodes = new DaemonNodes(daemonOrigins(["http://a:4200", "http://b:4200"]));
 *   for (const origin of nodes.writeOrder()) ...
 */
import { Pool } from "undici";
import { ChannelError } from "./errors.js";

/**
 * The origins of `urls`, in order, without repeats. Each must be an http(s) base URL with
 * no path beyond "/", no query, fragment or credentials; at least one. Anything else is
 * refused `bad-connection` (nothing is opened).
 */
export function daemonOrigins(urls: unknown): string[] {
  if (!Array.isArray(urls) || urls.length === 0) throw new ChannelError("bad-connection", "give at least one daemon URL (urls: [\"http://host:port\", ...])");
  const origins: string[] = [];
  for (const raw of urls) {
    if (typeof raw !== "string") throw new ChannelError("bad-connection", `a daemon URL must be a string, not ${JSON.stringify(raw)}`);
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw new ChannelError("bad-connection", `${JSON.stringify(raw)} is not a URL`);
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new ChannelError("bad-connection", `${raw}: a daemon URL is http: or https:, not ${u.protocol}`);
    if ((u.pathname !== "/" && u.pathname !== "") || u.search || u.hash || u.username || u.password) {
      throw new ChannelError("bad-connection", `${raw}: a daemon URL is an origin (scheme, host, port): no path, query, fragment or credentials`);
    }
    if (!origins.includes(u.origin)) origins.push(u.origin);
  }
  return origins;
}

/** `KOINII_URL`-style text: base URLs separated by commas (spaces around them ignored). */
export const splitDaemonUrls = (text: string): string[] => text.split(",").map((s) => s.trim()).filter((s) => s !== "");

export class DaemonNodes {
  /** The origins given, in order. */
  readonly listed: readonly string[];
  /** Origins a daemon named as the writer (in a not-writer answer) that were not listed. */
  private readonly named: string[] = [];
  private readonly pools = new Map<string, Pool>();
  private last: string;
  private writer: string | undefined;

  constructor(origins: readonly string[]) {
    if (origins.length === 0) throw new Error("DaemonNodes needs at least one origin (daemonOrigins checks this)");
    this.listed = origins;
    this.last = origins[0]!;
  }

  /** The origin answered last: where a read goes first. */
  get current(): string {
    return this.last;
  }

  /** The origin that last accepted a write, if it has not been lost since. */
  get knownWriter(): string | undefined {
    return this.writer;
  }

  pool(origin: string): Pool {
    let p = this.pools.get(origin);
    if (!p) {
      // No connection cap: a parked long poll never queues a write behind it.
      p = new Pool(origin, { keepAliveTimeout: 30_000, connections: null });
      this.pools.set(origin, p);
    }
    return p;
  }

  /** Every origin once: the one answered last first, then the list in order, then the named ones. */
  readOrder(): string[] {
    return unique([this.last, ...this.listed, ...this.named]);
  }

  /** Every origin once: the known writer first, then as `readOrder`. */
  writeOrder(): string[] {
    return unique([...(this.writer ? [this.writer] : []), ...this.readOrder()]);
  }

  answered(origin: string): void {
    this.last = origin;
  }

  /** `origin` accepted a write: it is the writer (and answered last). */
  wrote(origin: string): void {
    this.writer = origin;
    this.last = origin;
  }

  /** `origin` did not answer (or stopped): it is no longer taken for the writer. */
  lost(origin: string): void {
    if (this.writer === origin) this.writer = undefined;
  }

  /**
   * Where a 307 `not-writer` answer sends us: the origin of its `Location`, accepted only
   * when it is listed or is the writer the answer itself names (its `writer` field), so a
   * redirect never carries the token to a host nobody named. Undefined when refused.
   */
  redirect(location: string | undefined, namedWriter: unknown): string | undefined {
    if (!location) return undefined;
    let origin: string;
    try {
      const u = new URL(location);
      if (u.protocol !== "http:" && u.protocol !== "https:") return undefined;
      origin = u.origin;
    } catch {
      return undefined;
    }
    const named = typeof namedWriter === "string" ? safeOrigin(namedWriter) : undefined;
    if (!this.listed.includes(origin) && origin !== named) return undefined;
    if (!this.listed.includes(origin) && !this.named.includes(origin)) this.named.push(origin);
    this.writer = origin;
    return origin;
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}

const unique = (xs: string[]): string[] => [...new Set(xs)];

function safeOrigin(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
