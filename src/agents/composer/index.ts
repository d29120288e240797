/**
 * The composer seam's public surface (docs/decisions.md K10): `createComposer(env)` picks the
 * Anthropic composer when `ANTHROPIC_API_KEY` is set, the deterministic one otherwise.
 */
import { AnthropicComposer, defaultAnthropicModels } from "./anthropic.js";
import { DeterministicComposer } from "./deterministic.js";
import type { Composer, TurnComposer } from "./types.js";

export type { ComposeOptions, ComposeRequest, Composer } from "./types.js";
export type { TurnAnswer, TurnComposer, TurnOffer, TurnRequest } from "./types.js";
export { AnthropicComposer, ComposeError, buildPrompt, defaultAnthropicModels, jsonAsData, responderPrompt } from "./anthropic.js";
export type { AgentPrompt, AnthropicComposerOptions } from "./anthropic.js";
export { SILENCE_ANSWER, floorPrompt, turnAnswerFrom } from "./floor-prompt.js";
export { DeterministicComposer, relevantRecall } from "./deterministic.js";
export { clampAtSentence, codePointLength, guardReply, promiseIn, sendable, splitSentences } from "./guard.js";
export type { GuardRefusal, GuardResult } from "./guard.js";

/**
 * Choose a composer from the environment:
 * - `ANTHROPIC_API_KEY` (non-empty) selects Anthropic; `KOINII_COMPOSER_MODELS` (comma-separated)
 *   and `ANTHROPIC_BASE_URL` configure it;
 * - otherwise the deterministic composer.
 *
 * @example createComposer(process.env).name // "deterministic" when no key is set
 */
export function createComposer(env: Record<string, string | undefined>): Composer & TurnComposer {
  const apiKey = env.ANTHROPIC_API_KEY?.trim();
  if (apiKey === undefined || apiKey.length === 0) return new DeterministicComposer();
  const models = env.KOINII_COMPOSER_MODELS?.split(",").map((m) => m.trim()).filter((m) => m.length > 0);
  const baseURL = env.ANTHROPIC_BASE_URL?.trim();
  return new AnthropicComposer({
    apiKey,
    models: models && models.length > 0 ? models : defaultAnthropicModels,
    baseURL: baseURL !== undefined && baseURL.length > 0 ? baseURL : undefined,
  });
}
