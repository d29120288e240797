/**
 * The door of a local HTTP surface (the responder's `POST /dm`, the floor's ingest
 * endpoint): a request is served only when its peer is on loopback (403 `not-loopback`),
 * its `Host` names the listener by a bound loopback name (421 `misdirected`: a page reached
 * by DNS rebinding names its own host), and it carries the surface's secret as a bearer
 * token (401 `unauthorized`: any other local process, or a page, cannot speak for a sender).
 *
 *   const door = localDoor(server, host, secret);
 *   const refused = door(req); // undefined = serve it
 */
import type { IncomingMessage, Server } from "node:http";
import { boundHostNames, hostAllowed, isLoopbackAddress } from "./loopback.js";
import { secretMatches } from "./secret.js";

export interface DoorRefusal {
  status: 401 | 403 | 421;
  type: "unauthorized" | "not-loopback" | "misdirected";
  error: string;
}

/** A checker for requests to `server` (bound to `bind`), requiring `secret`. */
export function localDoor(server: Server, bind: string, secret: string): (req: IncomingMessage) => DoorRefusal | undefined {
  let names: ReadonlySet<string> | undefined;
  return (req) => {
    if (!isLoopbackAddress(req.socket.remoteAddress)) return { status: 403, type: "not-loopback", error: "this endpoint answers loopback peers only" };
    const addr = server.address();
    names ??= addr !== null && typeof addr === "object" ? boundHostNames(addr.port, bind) : undefined;
    if (!names || !hostAllowed(req.headers.host, names)) return { status: 421, type: "misdirected", error: "the Host header must name this listener (127.0.0.1, localhost or [::1] with its port)" };
    if (!secretMatches(req.headers.authorization, secret)) return { status: 401, type: "unauthorized", error: "send the endpoint's secret as Authorization: Bearer <secret>" };
    return undefined;
  };
}
