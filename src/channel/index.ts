/**
 * The channel library's public surface (issue 5; docs/channel.md): media, moves,
 * reads, claims, identity, subscriptions and catch-up. Every call is async and takes the
 * agent handle first; everything above the Medium runs the same over `wire` and `local`.
 * The wire-only part is ./client.ts (no engine); `local` runs the engine in-process.
 */
export * from "./client.js";
export { local, LocalMedium } from "./local.js";
