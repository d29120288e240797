/**
 * The `koinii` command: one commander program; each subsystem registers its subcommands
 * with a `registerXCommand(program)` function. To add one (`koinii responder`, `koinii mail`,
 * `koinii floor`), export a register function from your folder and append a lazy entry to
 * REGISTRARS: its module is loaded only when its command is asked for (or for the top-level
 * help), so `koinii serve` and the client verbs never depend on an agent's module graph.
 */
import { Command } from "commander";
import { registerServeCommand } from "./serve.js";
import { registerClientCommands } from "./client-commands.js";
import { registerConsoleCommand } from "./console.js";
import { registerChannelCommands } from "./channel-commands.js";

export type Registrar = (program: Command) => void;

/** A registrar loaded on demand: `commands` are the subcommand names it registers. */
export interface LazyRegistrar {
  commands: string[];
  load: () => Promise<Registrar>;
}

export const REGISTRARS: (Registrar | LazyRegistrar)[] = [
  registerServeCommand,
  registerClientCommands,
  registerConsoleCommand,
  registerChannelCommands,
  { commands: ["floor"], load: async () => (await import("../agents/floor/cli.js")).registerFloorCommand },
  { commands: ["responder"], load: async () => (await import("../agents/responder/cli.js")).registerResponderCommand },
  { commands: ["mail"], load: async () => (await import("../agents/mail/cli.js")).registerMailCommand },
  { commands: ["mcp"], load: async () => (await import("../mcp/cli.js")).registerMcpCommand },
];

/** Build the program for `argv` (process.argv shape): core verbs always, lazy ones when asked for. */
export async function buildProgram(argv: readonly string[] = process.argv, registrars: readonly (Registrar | LazyRegistrar)[] = REGISTRARS): Promise<Command> {
  const program = new Command("koinii").description("a single-writer knowledge-base daemon that software agents coordinate over").showHelpAfterError();
  const wanted = argv[2];
  const everything = wanted === undefined || wanted.startsWith("-") || wanted === "help";
  for (const r of registrars) {
    if (typeof r === "function") r(program);
    else if (everything || r.commands.includes(wanted!)) (await r.load())(program);
  }
  return program;
}
