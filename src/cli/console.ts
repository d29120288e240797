/**
 * `koinii console [--url]`: print the browser console's URL on a running daemon. In token
 * posture the URL carries a `#token=<TOKEN>` placeholder: replace it with a token (the page
 * moves it into the tab's sessionStorage; a fragment never reaches the server or its logs).
 * Exit 1 when no daemon answers at the URL.
 */
import type { Command } from "commander";
import { DEFAULT_URL } from "./client-commands.js";

export const TOKEN_PLACEHOLDER = "<TOKEN>";

export function registerConsoleCommand(program: Command): void {
  program
    .command("console")
    .description("print the URL of the browser console of a running daemon")
    .option("--url <url>", "the daemon's base URL (env KOINII_URL)", process.env.KOINII_URL ?? DEFAULT_URL)
    .action(async (o: { url: string }) => {
      const base = o.url.replace(/\/+$/, "");
      try {
        const health = await fetch(`${base}/health`);
        if (!health.ok) throw new Error(`GET /health answered ${health.status}`);
        // Any other route answers 401 without a token when the daemon wants one.
        const probe = await fetch(`${base}/v1/agents`);
        await probe.body?.cancel();
        process.stdout.write(`${base}/console${probe.status === 401 ? `#token=${TOKEN_PLACEHOLDER}` : ""}\n`);
      } catch (e) {
        process.stderr.write(`koinii: no daemon answers at ${base} (${e instanceof Error ? e.message : String(e)})\n`);
        process.exitCode = 1;
      }
    });
}
