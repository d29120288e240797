/**
 * The responder's charter: a versioned JSON file whose rails, not the model, decide
 * whether the responder may speak (ADR-0014). Parsed with zod into a typed `Charter`;
 * the escalation keywords are compiled once, at load, into whole-word matchers.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { z } from "zod";

/** Defaults for limits the file leaves out. A limit that is present is used as is: 0 means 0 (R2). */
export const defaultLimits = {
  max_replies_per_day: 12,
  max_replies_per_conversation_per_day: 4,
  min_gap_seconds_per_conversation: 120,
  max_reply_chars: 1500,
} as const;

/** Upper bounds on what a charter may ask for, so a typo cannot open the floodgates. */
export const charterBounds = {
  maxRepliesPerDay: 1000,
  maxReplyChars: 10_000,
  maxKeywords: 500,
  maxAllowlist: 10_000,
  maxCharterBytes: 1_000_000,
} as const;

const keyword = z
  .string()
  .transform((k) => normaliseForMatch(k).trim())
  .refine((k) => /[\p{L}\p{N}]/u.test(k), { message: "an escalation keyword needs at least one letter or digit" });

const limit = (max: number) => z.number().int().min(0).max(max);

/** The shape of the charter file. Unknown keys are refused, so a misspelt field fails loudly. */
export const CharterFileSchema = z.strictObject({
  version: z.number().int().min(1),
  /** R1: only the literal `true` enables; a missing flag means disabled. */
  enabled: z.boolean().optional(),
  description: z.string().optional(),
  /** OBC bot_id -> display name. Names are for display and audit only. */
  allowlist: z.record(z.string().min(1), z.string()).refine((a) => Object.keys(a).length <= charterBounds.maxAllowlist, {
    message: `at most ${charterBounds.maxAllowlist} allowlist entries`,
  }),
  limits: z
    .strictObject({
      max_replies_per_day: limit(charterBounds.maxRepliesPerDay).default(defaultLimits.max_replies_per_day),
      max_replies_per_conversation_per_day: limit(charterBounds.maxRepliesPerDay).default(
        defaultLimits.max_replies_per_conversation_per_day,
      ),
      min_gap_seconds_per_conversation: limit(7 * 24 * 3600).default(defaultLimits.min_gap_seconds_per_conversation),
      max_reply_chars: limit(charterBounds.maxReplyChars).default(defaultLimits.max_reply_chars),
    })
    .default(defaultLimits),
  escalate_keywords: z.array(keyword).max(charterBounds.maxKeywords).default([]),
  voice: z.string().default(""),
});
export type CharterFile = z.infer<typeof CharterFileSchema>;

/** One compiled escalation keyword or phrase. */
export interface KeywordMatcher {
  /** The keyword as the charter spells it, lowercased and trimmed; it names the escalation reason. */
  readonly keyword: string;
  readonly pattern: RegExp;
}

/** The charter as the gate uses it. Build with `parseCharter` or `loadCharter`. */
export interface Charter {
  readonly version: number;
  readonly enabled: boolean;
  readonly description: string;
  /** A Map, not an object, so `toString` or `__proto__` can never be an allowlisted sender. */
  readonly allowlist: ReadonlyMap<string, string>;
  readonly limits: {
    readonly maxRepliesPerDay: number;
    readonly maxRepliesPerConversationPerDay: number;
    readonly minGapMsPerConversation: number;
    readonly maxReplyChars: number;
  };
  readonly keywords: readonly KeywordMatcher[];
  readonly voice: string;
}

/** A charter that failed to parse, with zod's issues in a readable line each. */
export class CharterError extends Error {
  readonly code = "charter_invalid";
  constructor(readonly issues: string[]) {
    super(`invalid responder charter:\n  ${issues.join("\n  ")}`);
    this.name = "CharterError";
  }
}

/** NFKC-fold, drop invisible format characters (zero-width joiners, soft hyphens) and lowercase. */
export function normaliseForMatch(text: string): string {
  return text.normalize("NFKC").replace(/\p{Cf}/gu, "").toLowerCase();
}

/**
 * Compile a keyword or phrase into a whole-word, case-insensitive matcher (R3).
 * Words of a phrase may be separated by any run of non-letters ("api key", "api-key",
 * "API   key"); the match may not start or end inside a word ("deal" misses "ideal" and
 * "dealer"). Plurals and other forms must be listed in the charter.
 */
export function compileKeyword(kw: string): KeywordMatcher {
  const k = normaliseForMatch(kw).trim();
  const words = k.split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 0);
  if (words.length === 0) throw new CharterError([`escalation keyword ${JSON.stringify(kw)} has no letters or digits`]);
  const escape = (w: string) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const body = words.map(escape).join("[^\\p{L}\\p{N}]+");
  return { keyword: k, pattern: new RegExp(`(?<![\\p{L}\\p{N}])${body}(?![\\p{L}\\p{N}])`, "u") };
}

/** The first charter keyword (in charter order) found in `text`, or null. */
export function findEscalationKeyword(charter: Pick<Charter, "keywords">, text: string): string | null {
  const t = normaliseForMatch(text);
  for (const m of charter.keywords) if (m.pattern.test(t)) return m.keyword;
  return null;
}

/**
 * Validate a parsed JSON value as a charter.
 *
 * @example parseCharter({ version: 1, enabled: true, allowlist: { "bot-1": "Rex" } }).limits.maxRepliesPerDay // 12
 */
export function parseCharter(value: unknown): Charter {
  const r = CharterFileSchema.safeParse(value);
  if (!r.success) throw new CharterError(r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`));
  const f = r.data;
  return {
    version: f.version,
    enabled: f.enabled === true,
    description: f.description ?? "",
    allowlist: new Map(Object.entries(f.allowlist)),
    limits: {
      maxRepliesPerDay: f.limits.max_replies_per_day,
      maxRepliesPerConversationPerDay: f.limits.max_replies_per_conversation_per_day,
      minGapMsPerConversation: f.limits.min_gap_seconds_per_conversation * 1000,
      maxReplyChars: f.limits.max_reply_chars,
    },
    keywords: f.escalate_keywords.map(compileKeyword),
    voice: f.voice,
  };
}

/** sha256 (hex) over the charter file's exact bytes: what the boot record and /status report. */
export function charterSha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export interface LoadedCharter {
  readonly charter: Charter;
  /** sha256 hex of the file bytes, for the boot audit record. */
  readonly sha256: string;
  readonly path: string;
}

/**
 * Read, hash and validate a charter file. The hash is taken over the bytes that were
 * parsed, so the boot record names exactly the rails in force.
 *
 * @example const { charter, sha256 } = loadCharter("src/agents/responder/charter.example.json");
 */
export function loadCharter(path: string): LoadedCharter {
  const bytes = readFileSync(path);
  if (bytes.length > charterBounds.maxCharterBytes) {
    throw new CharterError([`charter file is ${bytes.length} bytes; the bound is ${charterBounds.maxCharterBytes}`]);
  }
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString("utf8"));
  } catch (e) {
    throw new CharterError([`not JSON: ${(e as Error).message}`]);
  }
  return { charter: parseCharter(json), sha256: charterSha256(bytes), path };
}

/** The environment kill switch (R1): only `RESPONDER_ENABLED=1` exactly enables. */
export function envEnabled(env: Record<string, string | undefined>): boolean {
  return env.RESPONDER_ENABLED === "1";
}
