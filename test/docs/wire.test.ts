/**
 * docs/wire.md is the HTTP contract in this repository: checked here against the OpenAPI
 * document a real daemon serves, so the two cannot drift. Every route the daemon documents
 * is in a route table of docs/wire.md with its method and path, every route docs/wire.md lists
 * exists, and the errors table is exactly the daemon's type -> status table.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Daemon, spawnDaemon } from "../daemon/helpers.js";

const DOC = readFileSync(new URL("../../docs/wire.md", import.meta.url), "utf8");

interface OpenApi {
  paths: Record<string, Record<string, unknown>>;
  "x-error-types": Record<string, number>;
}

/** Table rows whose first cell is `METHOD /path` (route tables). */
function documentedRoutes(md: string): string[] {
  return [...md.matchAll(/^\| `(GET|POST|PUT|PATCH|DELETE) (\/[^`\s]*)` \|/gm)].map((m) => `${m[1]} ${m[2]}`);
}

/** Rows of the errors table: `type` | status. */
function documentedErrors(md: string): Record<string, number> {
  const section = md.slice(md.indexOf("\n## Errors"), md.indexOf("\n## ", md.indexOf("\n## Errors") + 1));
  return Object.fromEntries([...section.matchAll(/^\| `([a-z-]+)` \| (\d{3}) \|/gm)].map((m) => [m[1]!, Number(m[2])]));
}

describe("docs/wire.md against the daemon's /openapi.json", () => {
  let daemon: Daemon;
  let api: OpenApi;
  beforeAll(async () => {
    daemon = await spawnDaemon();
    api = (await (await fetch(`${daemon.url}/openapi.json`)).json()) as OpenApi;
  });
  afterAll(async () => {
    await daemon?.stop();
  });

  const served = () =>
    Object.entries(api.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{([A-Za-z]+)\}/g, ":$1")}`));

  it("every route the daemon serves is documented with its method and path", () => {
    const documented = new Set(documentedRoutes(DOC));
    expect(served().length).toBeGreaterThan(30);
    expect(served().filter((r) => !documented.has(r))).toEqual([]);
  });

  it("every route docs/wire.md documents exists, and none is listed twice", () => {
    const routes = new Set(served());
    const documented = documentedRoutes(DOC);
    expect(documented.filter((r) => !routes.has(r))).toEqual([]);
    expect(documented.length).toBe(new Set(documented).size);
  });

  it("the errors table is the daemon's: every type with its one status, and nothing else", () => {
    expect(documentedErrors(DOC)).toEqual(api["x-error-types"]);
  });
});
