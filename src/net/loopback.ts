/**
 * Loopback and Host checks, the one copy every local HTTP surface uses (the daemon in open
 * mode, the responder's `POST /dm`, the floor's ingest endpoint). A bottom layer: it imports
 * nothing of ours.
 *
 *   isLoopbackAddress(req.socket.remoteAddress)          // the peer: 127.0.0.0/8, ::1, ::ffff:127.x
 *   isLoopbackBind("localhost")                          // a bind name the CLIs accept without a token
 *   hostAllowed(req.headers.host, boundHostNames(4200))  // false for evil.example:4200 (DNS rebinding)
 */

const IPV4_LOOPBACK_RE = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/** A peer or bind address on loopback: 127.0.0.0/8, ::1 (bracketed or not), and their IPv4-mapped forms. */
export function isLoopbackAddress(addr: string | undefined): boolean {
  if (addr === undefined) return false;
  const a = addr.replace(/^\[(.*)\]$/, "$1").toLowerCase().replace(/^::ffff:/, "");
  return a === "::1" || IPV4_LOOPBACK_RE.test(a);
}

/** A bind name that stays on this machine: `localhost` or a loopback address. */
export function isLoopbackBind(host: string): boolean {
  return host.toLowerCase() === "localhost" || isLoopbackAddress(host);
}

/**
 * The Host values a loopback listener on `port` answers to: `127.0.0.1:PORT`,
 * `localhost:PORT`, `[::1]:PORT`, the bound address itself when it is another loopback
 * address (127.0.0.2, say), and each name without the port when the port is 80 (a client
 * may leave the default port out).
 */
export function boundHostNames(port: number, bind?: string): ReadonlySet<string> {
  if (!Number.isSafeInteger(port) || port < 1 || port > 65535) throw new RangeError(`a bound port is 1..65535, got ${port}`);
  const names = ["127.0.0.1", "localhost", "[::1]"];
  if (bind !== undefined && isLoopbackBind(bind)) {
    const b = bind.toLowerCase();
    names.push(b.includes(":") && !b.startsWith("[") ? `[${b}]` : b);
  }
  const out = new Set<string>();
  for (const n of names) {
    out.add(`${n}:${port}`);
    if (port === 80) out.add(n);
  }
  return out;
}

/** Whether a request's `Host` header names this listener (case-insensitive); a missing Host never does. */
export function hostAllowed(host: string | undefined, names: ReadonlySet<string>): boolean {
  return typeof host === "string" && names.has(host.trim().toLowerCase());
}

/** A `Host`-style authority (name, optional port) whose name is loopback: used to recognise a page served from loopback. */
export function isLoopbackAuthority(authority: string): boolean {
  const m = /^(\[[^\]]*\]|[^:]*)(?::\d{1,5})?$/.exec(authority.trim());
  return m !== null && isLoopbackBind(m[1]!);
}
