/**
 * The light client: `koinii` (and `koinii/client`), resolved through package.json's exports
 * map from dist/ in a fresh process, loads no native module and none of the engine; the
 * in-process KB (`koinii/kb`) is its own entry, and the same probe sees it load both.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = new URL("../../", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "koinii-light-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every module URL a fresh node loads for `import(specifier)` (then `use`, code run with the module as `m`), and every native addon it dlopens. */
function loads(specifier: string, use = ""): { modules: string[]; native: string[]; exports: string[] } {
  const log = join(dir, `${specifier.replace(/\W/g, "_")}.log`);
  const hooks = join(dir, "hooks.mjs");
  writeFileSync(hooks, `import { appendFileSync } from "node:fs";
export async function load(url, context, next) { appendFileSync(${JSON.stringify(log)}, "module " + url + "\\n"); return next(url, context); }`);
  const probe = `
import { register } from "node:module";
import { appendFileSync } from "node:fs";
import { createRequire } from "node:module";
register(${JSON.stringify(`file://${hooks}`)});
const dlopen = process.dlopen;
process.dlopen = (m, file, ...rest) => { appendFileSync(${JSON.stringify(log)}, "native " + file + "\\n"); return dlopen.call(process, m, file, ...rest); };
const m = await import(${JSON.stringify(specifier)});
${use}
const cjs = Object.keys(createRequire(import.meta.url).cache);
appendFileSync(${JSON.stringify(log)}, cjs.map((f) => "module file://" + f + "\\n").join("") + "exports " + Object.keys(m).join(",") + "\\n");
`;
  writeFileSync(log, "");
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", probe], { cwd: ROOT, encoding: "utf8" });
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
  const lines = readFileSync(log, "utf8").trim().split("\n");
  const pick = (kind: string) => lines.filter((l) => l.startsWith(`${kind} `)).map((l) => l.slice(kind.length + 1));
  return { modules: pick("module"), native: pick("native"), exports: pick("exports")[0]!.split(",") };
}

const heavy = (modules: string[]) => modules.filter((u) => /better-sqlite3|kysely|\/src\/kb\/(engine|store|kb|index)\.js$|\/src\/feed\//.test(u));

describe("the light client entry", () => {
  it("`koinii` gives the wire client and the channel library, and loads no native module, no store and no engine", () => {
    const { modules, native, exports } = loads("koinii");
    expect(exports).toEqual(expect.arrayContaining(["wire", "join", "poseQuery", "answer", "dispute", "subscribe", "openConsumer", "terms"]));
    expect(exports).not.toContain("local");
    expect(modules.some((u) => u.endsWith("/dist/src/channel/client.js"))).toBe(true);
    expect(native).toEqual([]);
    expect(heavy(modules)).toEqual([]);
  });

  it("`koinii/client` is the same entry", () => {
    const { modules, native } = loads("koinii/client");
    expect(modules.some((u) => u.endsWith("/dist/src/channel/client.js"))).toBe(true);
    expect(native).toEqual([]);
    expect(heavy(modules)).toEqual([]);
  });

  it("`koinii/kb` is the in-process engine: the same probe sees the engine load, and better-sqlite3's addon once a KB opens", () => {
    const { modules, native, exports } = loads("koinii/kb", "(await m.openKb({ path: ':memory:' })).close();");
    expect(exports).toContain("openKb");
    expect(native.some((f) => /better_sqlite3\.node$/.test(f))).toBe(true);
    expect(heavy(modules).length).toBeGreaterThan(0);
  });
});
