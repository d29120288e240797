/**
 * Where koinii is installed: the package root (the folder holding koinii's package.json,
 * found from src/ or dist/src/) and its version. Used by the daemon, the console's static
 * files and the MCP server alike, so none of them imports another for it.
 *
 *   join(packageRoot(), "contexts") // the shipped context files
 */
import { readFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const p = join(dir, "package.json");
    if (existsSync(p) && (JSON.parse(readFileSync(p, "utf8")) as { name?: string }).name === "koinii") return dir;
    dir = dirname(dir);
  }
  throw new Error("koinii package.json not found above " + fileURLToPath(import.meta.url));
}

export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }).version;
}
