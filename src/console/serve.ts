/**
 * The browser console's static files, served by the daemon on its own origin (issue 19):
 *
 *   GET /console                   the page (index.html)
 *   GET /console/assets/<file>     the console's own ES modules and stylesheet (src/console/assets)
 *   GET /console/vendor/<file>     preact and htm, the ES module files of the installed packages
 *
 * These routes need no token (a browser navigation cannot send one) and serve nothing but
 * these files: everything the console shows it reads from the ordinary /v1 routes with the
 * bearer token the person entered, so it can do nothing that token could not do over the wire.
 * Every answer carries CONSOLE_CSP: scripts only from this origin, no inline script, no framing.
 */
import { dirname, join, basename } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply } from "fastify";
import fastifyStatic from "@fastify/static";
import { packageRoot } from "../daemon/package.js";

/** Strict policy: same-origin scripts, styles, fetches; no inline script or style, no framing, no plugins. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** The vendored modules by the name the console imports them with, each the package's own ESM file. */
function vendorFiles(): Map<string, string> {
  const file = (spec: string) => fileURLToPath(import.meta.resolve(spec));
  return new Map([
    ["preact.mjs", file("preact")],
    ["htm.mjs", file("htm")],
  ]);
}

/** Where the console's own files live: src/console/assets under the package root (from src/ and dist/ alike). */
export const consoleAssetsDir = (): string => join(packageRoot(), "src", "console", "assets");

const ASSET_NAME_RE = /^[a-z][a-z0-9-]*\.(js|css|html)$/;

function secure(reply: FastifyReply): void {
  reply.header("content-security-policy", CONSOLE_CSP);
  reply.header("x-content-type-options", "nosniff");
  reply.header("x-frame-options", "DENY");
  reply.header("referrer-policy", "no-referrer");
  reply.header("cross-origin-opener-policy", "same-origin");
  reply.header("cross-origin-resource-policy", "same-origin");
}

/** Register the console's routes on `app` (an encapsulated plugin: reply.sendFile stays inside it). */
export async function consoleRoutes(app: FastifyInstance): Promise<void> {
  const assets = consoleAssetsDir();
  const vendor = vendorFiles();
  await app.register(fastifyStatic, { root: assets, serve: false });
  const config = { access: "none" as const };
  const notFound = (reply: FastifyReply) => reply.callNotFound();

  app.get("/console", { config }, async (_req, reply) => {
    secure(reply);
    return reply.sendFile("index.html", assets);
  });
  app.get("/console/", { config }, async (_req, reply) => reply.redirect("/console", 301));
  app.get<{ Params: { file: string } }>("/console/assets/:file", { config }, async (req, reply) => {
    const name = req.params.file;
    if (!ASSET_NAME_RE.test(name)) return notFound(reply);
    secure(reply);
    return reply.sendFile(name, assets);
  });
  app.get<{ Params: { file: string } }>("/console/vendor/:file", { config }, async (req, reply) => {
    const path = vendor.get(req.params.file);
    if (!path) return notFound(reply);
    secure(reply);
    return reply.sendFile(basename(path), dirname(path));
  });
}
