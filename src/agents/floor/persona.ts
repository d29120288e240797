/**
 * The floor agent's persona config: who he is, which names he answers to, and how
 * forthcoming he is. The zod schema is the single source of the shape and its type.
 */
import { z } from "zod";
import { FloorError } from "./errors.js";

/** At most this many aliases feed the name matcher (reference §3.3: up to 16). */
export const MAX_ALIASES = 16;
/** At most this many primary names; the first is the one he introduces himself by. */
export const MAX_NAMES = 4;
/** A name or alias longer than this is refused; nobody is hailed by a paragraph. */
export const MAX_NAME_CHARS = 64;

const name = z.string().trim().min(1).max(MAX_NAME_CHARS);

export const personaSchema = z.strictObject({
  /** Stable id, also the KB agent id the recorder writes as. */
  id: z.string().trim().min(1).max(128),
  /** Names he answers to; the first is his display name. */
  names: z.array(name).min(1).max(MAX_NAMES),
  /** Owner-authored nicknames. Transcription misspellings do not belong here (address.ts). */
  aliases: z.array(name).max(MAX_ALIASES).default([]),
  /** "addressed": only turns the matcher earns; "all": every dormant line is offered. */
  replyPolicy: z.enum(["addressed", "all"]).default("all"),
  /** Sets the volition rate-cap defaults (machine.ts VOLITION_DEFAULTS). */
  chattiness: z.enum(["quiet", "balanced", "chatty"]).default("balanced"),
  /** Engagement lapses after this long without a reason to keep the floor. */
  decayWindowMs: z.number().positive().optional(),
  /** Owner overrides of the chattiness defaults. */
  volition: z
    .strictObject({
      minIntervalMs: z.number().nonnegative().optional(),
      maxPerHour: z.int().nonnegative().optional(),
    })
    .optional(),
  /** Voice and manner text handed to the composer as its system text. Trusted (owner-written). */
  voice: z.string().max(4_000).default(""),
  /** Ceiling on a composed reply, in characters. */
  maxReplyChars: z.int().positive().max(2_000).default(400),
});

export type Persona = z.infer<typeof personaSchema>;

/**
 * Parse an untrusted persona config; refuses with a `floor-persona` FloorError listing
 * every problem.
 *
 * @example parsePersona({ id: "AgentFloor", names: ["Clankie"] }).replyPolicy // "all"
 */
export function parsePersona(input: unknown): Persona {
  const parsed = personaSchema.safeParse(input);
  if (!parsed.success) {
    throw new FloorError("floor-persona", `persona config refused: ${z.prettifyError(parsed.error)}`, {
      issues: parsed.error.issues,
    });
  }
  return parsed.data;
}

/** Every name he answers to (names then aliases), trimmed, lowercased, deduplicated. */
export function characterNames(persona: Pick<Persona, "names" | "aliases">): string[] {
  const out: string[] = [];
  for (const n of [...persona.names, ...persona.aliases.slice(0, MAX_ALIASES)]) {
    const v = n.trim().toLowerCase();
    if (v !== "" && !out.includes(v)) out.push(v);
  }
  return out;
}
