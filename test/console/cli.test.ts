/** `koinii console` prints the console's URL of a running daemon, with a token placeholder in token posture. */
import { describe, it, expect, afterEach } from "vitest";
import { spawnSync } from "node:child_process";
import { spawnDaemon, call, MAIN, type Daemon } from "../daemon/helpers.js";

const daemons: Daemon[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
});

const koinii = (...args: string[]) => spawnSync(process.execPath, [MAIN, ...args], { encoding: "utf8", env: { ...process.env, KOINII_URL: undefined } as NodeJS.ProcessEnv });

describe("koinii console", () => {
  it("token posture: the URL carries #token=<TOKEN>, and that URL (token filled in) is the console", async () => {
    const d = await spawnDaemon({ env: { KOINII_ADMIN_TOKEN: "cli-admin" } });
    daemons.push(d);
    const r = koinii("console", "--url", d.url);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`${d.url}/console#token=<TOKEN>\n`);
    const page = await call(d.url, "GET", new URL(r.stdout.trim()).pathname);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<script type="module" src="/console/assets/main.js">');
  });

  it("open posture: the bare URL; no daemon: exit 1 saying so", async () => {
    const d = await spawnDaemon();
    daemons.push(d);
    const r = koinii("console", "--url", `${d.url}/`);
    expect(r.stdout).toBe(`${d.url}/console\n`);
    const port = d.port;
    await d.stop();
    const gone = koinii("console", "--url", `http://127.0.0.1:${port}`);
    expect(gone.status).toBe(1);
    expect(gone.stderr).toContain(`no daemon answers at http://127.0.0.1:${port}`);
  });
});
