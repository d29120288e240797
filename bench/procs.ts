/** Child processes for benchmarks: the real daemon, baseline servers, a throwaway PostgreSQL. */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Proc {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

function waitForLine(child: ChildProcess, re: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const onData = (d: Buffer) => {
      buf += d.toString();
      const m = re.exec(buf);
      if (m) {
        child.stdout!.off("data", onData);
        resolve(m[1]!);
      }
    };
    child.stdout!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`process exited (${code}) before it listened: ${buf}`)));
  });
}

async function spawnServer(args: string[], re: RegExp, cleanup?: () => void): Promise<Proc> {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  const url = await waitForLine(child, re);
  return {
    url,
    child,
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", () => {
          cleanup?.();
          resolve();
        });
        child.kill("SIGTERM");
      }),
  };
}

/** The daemon as `koinii serve` runs it; `node` adds flags for node itself (e.g. `--cpu-prof`). */
export async function startDaemon(opts: { durability: "full" | "normal"; extra?: string[]; node?: string[] }): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), "koinii-bench-daemon-"));
  return spawnServer(
    [...(opts.node ?? []), "dist/src/cli/main.js", "serve", "--port", "0", "--data", dir, "--durability", opts.durability, ...(opts.extra ?? [])],
    /koinii listening on (http:\/\/[^\s]+)/,
    () => rmSync(dir, { recursive: true, force: true }),
  );
}

export const startBaseline = (mode: "bare" | "sqlite-full" | "sqlite-normal"): Promise<Proc> =>
  spawnServer(["dist/bench/fixtures/baseline-server.js", mode], /listening on (http:\/\/[^\s]+)/);

/**
 * A throwaway PostgreSQL cluster on a free port (initdb as the postgres user). The NOTIFY
 * baseline is required: without an installed PostgreSQL this throws, and the run fails.
 */
export function startPostgres(): { port: number; host: string; stop(): void } {
  const bin = execFileSync("sh", ["-c", "ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1"], { encoding: "utf8" }).trim();
  if (!bin) throw new Error("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin): the NOTIFY baseline is required");
  const dir = mkdtempSync(join(tmpdir(), "koinii-bench-pg-"));
  chmodSync(dir, 0o777);
  const data = join(dir, "data");
  const port = 20000 + Math.floor(Math.random() * 20000);
  const asPg = (cmd: string, args: string[]) => execFileSync("runuser", ["-u", "postgres", "--", join(bin, cmd), ...args], { stdio: "ignore" });
  asPg("initdb", ["-D", data, "-A", "trust", "-U", "postgres"]);
  asPg("pg_ctl", ["-D", data, "-w", "-l", join(dir, "log"), "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=on`, "start"]);
  return {
    port,
    host: "127.0.0.1",
    stop: () => {
      try {
        asPg("pg_ctl", ["-D", data, "-m", "fast", "stop"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
