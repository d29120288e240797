import { execFileSync } from "node:child_process";

// Integration tests spawn the real daemon and agents from dist/: build once before any suite.
export default function setup(): void {
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.json"], { stdio: "inherit" });
}
