#!/usr/bin/env node
/** The `koinii` bin (package.json "bin": dist/src/cli/main.js). Subcommands live in program.ts. */
import { buildProgram } from "./program.js";

buildProgram(process.argv)
  .then((program) => program.parseAsync(process.argv))
  .catch((e: unknown) => {
    process.stderr.write(`koinii: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
