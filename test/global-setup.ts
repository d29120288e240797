import { spawnSync, execFileSync } from "node:child_process";

/**
 * Before any test: bring up every real server the suite needs (scripts/provision.sh: nats,
 * the mail servers, PostgreSQL, Chromium), the same way with or without CI, and hand their
 * addresses to the tests through the environment (confirmed by a `--check` run that must
 * print the same); then build dist/ once, because
 * integration tests spawn the real daemon and agent processes from it.
 */
export default function setup(): void {
  provision();
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.json"], { stdio: "inherit" });
}

function provision(): void {
  const r = spawnSync("bash", ["scripts/provision.sh"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  process.stderr.write(r.stderr ?? "");
  if (r.status !== 0) {
    // The script's last line (already printed above) names the command to run: stop here,
    // before any test, without a stack trace burying it.
    if (!r.stderr?.trim()) process.stderr.write(`scripts/provision.sh exited ${r.status ?? r.signal}\n`);
    process.exit(1);
  }
  const env = exported(r.stdout);
  Object.assign(process.env, env);
  // Confirm it: a check run (which installs and starts nothing) must find every server up
  // and print the same environment.
  const check = spawnSync("bash", ["scripts/provision.sh", "--check"], { encoding: "utf8" });
  const checked = exported(check.stdout ?? "");
  if (check.status !== 0 || JSON.stringify(checked) !== JSON.stringify(env)) {
    process.stderr.write(`${check.stderr ?? ""}scripts/provision.sh --check disagrees with the provisioning it follows (exit ${check.status ?? check.signal})\n`);
    process.exit(1);
  }
}

/** The KOINII_* lines the script prints, as an environment. */
function exported(stdout: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const l of stdout.split("\n")) {
    const m = /^(KOINII_[A-Z0-9_]+)=(.*)$/.exec(l);
    if (m) env[m[1]!] = m[2]!;
  }
  return env;
}
