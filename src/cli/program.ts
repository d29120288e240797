/**
 * The `koinii` command: one commander program; each subsystem registers its subcommands
 * with a `registerXCommand(program)` function. To add one (`koinii responder`, `koinii mail`,
 * `koinii floor`), export a register function from your folder and append it to REGISTRARS.
 */
import { Command } from "commander";
import { registerServeCommand } from "./serve.js";
import { registerClientCommands } from "./client-commands.js";
import { registerResponderCommand } from "../agents/responder/cli.js";
import { registerFloorCommand } from "../agents/floor/cli.js";

export type Registrar = (program: Command) => void;

export const REGISTRARS: Registrar[] = [registerServeCommand, registerClientCommands, registerFloorCommand, registerResponderCommand];

export function buildProgram(registrars: readonly Registrar[] = REGISTRARS): Command {
  const program = new Command("koinii").description("a single-writer knowledge-base daemon that software agents coordinate over").showHelpAfterError();
  for (const register of registrars) register(program);
  return program;
}
