/** The daemon's public surface: build the server in-process, and the wire's error table. */
export { createServer, DEFAULT_DAEMON_LIMITS } from "./server.js";
export { packageRoot, packageVersion } from "./package.js";
export type { ServerOptions, KoiniiServer, DaemonLimits } from "./server.js";
export { WIRE_ERROR_STATUS, WIRE_ERROR_TYPES, WireError, toWire } from "./errors.js";
export type { WireErrorType, WireErrorBody } from "./errors.js";
export { contextFor, isAgentId, ADMIN } from "./access.js";
export type { Principal, Posture } from "./access.js";
