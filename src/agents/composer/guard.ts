/**
 * The post-filter every composed text passes before it can leave the process (R6 in
 * docs/agents-responder.md). A composer, model-backed or not, is never trusted to keep
 * the "no promises" rule by itself: this module removes every sentence that promises
 * work, money, a deadline or a commitment, and clamps what is left at a sentence
 * boundary. It is a pattern filter, a backstop behind the gate and the prompt, not a
 * proof: what it cannot recognise it lets through, and the docs say so.
 */

/** Why a composed text was refused outright (nothing sendable was left). */
export type GuardRefusal = "empty" | "all_sentences_removed";

export type GuardResult =
  | { ok: true; text: string; removed: string[] }
  | { ok: false; reason: GuardRefusal; removed: string[] };

/** Shortest text (in code points) still worth sending after sentences were removed. */
export const minGuardedChars = 2;

const W = "[\\p{L}\\p{N}_'’]";
/** A first person about to commit to something: "I'll send", "we can build", "I am going to pay". */
const commitVerbs = [
  "send", "pay", "transfer", "give", "build", "make", "do", "deliver", "write", "create",
  "finish", "handle", "take care", "fix", "ship", "set up", "get", "have", "prepare", "draft",
  "review", "commit", "guarantee", "promise", "cover", "fund", "sponsor", "owe", "refund",
  "invoice", "sign", "work", "code", "implement", "host", "join", "meet", "call", "schedule",
  "book", "arrange", "reserve", "buy", "sell", "trade", "lend", "donate", "tip",
].join("|");
const futureFirstPerson =
  "\\b(?:i|we)(?:['’](?:ll|d|m going to|re going to|m happy to|re happy to)|\\s+(?:will|shall|am going to|are going to|can|could|would|am happy to|are happy to))";

const promisePatterns: { name: string; re: RegExp }[] = [
  {
    name: "first_person_commitment",
    re: new RegExp(`${futureFirstPerson}\\s+(?:${W}+\\s+){0,3}?(?:${commitVerbs})(?!${W})`, "iu"),
  },
  { name: "explicit_promise", re: /\b(?:i|we)\s+(?:promise|guarantee|commit|agree|accept|owe|pledge|swear)(?![\p{L}])/iu },
  { name: "explicit_promise", re: /\b(?:you have my word|it['’]?s a deal|that['’]?s a deal|deal\s*[!.]|count on (?:me|us)|leave it (?:to|with) (?:me|us))/iu },
  { name: "money", re: /[$€£¥₿]\s?\d|\d[\d,.]*\s?(?:usd|eur|gbp|dollars?|euros?|pounds?|credits?|tokens?|btc|eth|sol|usdc)\b/iu },
  {
    name: "money",
    re: /\b(?:pay|pays|paid|paying|payment|payments|invoice|invoices|refund|refunds|escrow|wallet|wallets|transfer|transfers|credits?|money|price|prices|fee|fees|discount|commission|contract|contracts|bounty|reward)\b/iu,
  },
  {
    name: "deadline",
    re: /\bby\s+(?:tomorrow|tonight|today|monday|tuesday|wednesday|thursday|friday|saturday|sunday|next week|next month|the weekend|end of (?:the )?(?:day|week|month)|eod|eow|noon|midnight)\b/iu,
  },
];

/** The name of the first promise pattern `sentence` matches, or null when it promises nothing we can see. */
export function promiseIn(sentence: string): string | null {
  const s = sentence.normalize("NFKC").replace(/\p{Cf}/gu, "");
  for (const p of promisePatterns) if (p.re.test(s)) return p.name;
  return null;
}

/** Split prose into sentences, keeping each one's closing punctuation. */
export function splitSentences(text: string): string[] {
  return text
    .split(/(?<=[.!?…])\s+|\n+/u)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Length in code points, so a clamp never splits a surrogate pair. */
export function codePointLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/**
 * Clamp `text` to at most `maxChars` code points, preferring a sentence boundary.
 *
 * Trims first; a text that fits is returned as is. Otherwise the cut goes just after the
 * last `.`, `!`, `?` or `…` that is followed by whitespace (or ends the text) and lies past
 * half of `maxChars`; failing that, at the last whitespace past half; failing that, hard
 * at `maxChars`. Never returns more than `maxChars` code points; `maxChars` 0 gives "".
 *
 * @example clampAtSentence("One. Two three four.", 10) // "One." is too short (< half), so "One. Two"
 */
export function clampAtSentence(text: string, maxChars: number): string {
  if (!Number.isInteger(maxChars) || maxChars < 0) throw new RangeError(`maxChars must be an integer >= 0, got ${maxChars}`);
  const points = Array.from(text.trim());
  if (points.length <= maxChars) return points.join("");
  const half = maxChars / 2;
  let sentenceCut = -1;
  let spaceCut = -1;
  for (let i = 0; i < maxChars; i++) {
    const c = points[i];
    const next = points[i + 1];
    const nextIsSpace = next === undefined || /\s/u.test(next);
    if (/[.!?…]/u.test(c) && nextIsSpace && i + 1 > half) sentenceCut = i + 1;
    if (/\s/u.test(c) && i > half) spaceCut = i;
  }
  if (/\s/u.test(points[maxChars]) && maxChars > half) spaceCut = maxChars;
  const cut = sentenceCut > 0 ? sentenceCut : spaceCut > 0 ? spaceCut : maxChars;
  return points.slice(0, cut).join("").trimEnd();
}

/**
 * NUL and the other C0 controls but tab and newlines, DEL, and a UTF-16 surrogate half with
 * no partner: none is text a platform can carry. Under the `u` flag a well-formed pair is one
 * code point outside the range, so only lone halves match.
 */
const unsendable = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F\uD800-\uDFFF]/gu;

/**
 * `text` without NUL, control characters (tab and newlines stay) and lone surrogates (a
 * composer or a recalled fact can carry any of them; a well-formed pair is kept).
 *
 * @example sendable("a\u0000b\uD800c") // "abc"
 */
export function sendable(text: string): string {
  return text.replace(unsendable, "");
}

/**
 * Remove every sentence that promises work, money, a deadline or a commitment, then
 * clamp to `maxChars`. Refuses (ok: false) when nothing sendable is left. NUL and lone
 * surrogates are stripped first (`sendable`), so a guarded text never carries them.
 *
 * @example guardReply("Lovely to hear from you. I'll send you 50 credits tomorrow.", 500)
 *   // { ok: true, text: "Lovely to hear from you.", removed: ["I'll send you 50 credits tomorrow."] }
 */
export function guardReply(text: string, maxChars: number): GuardResult {
  const kept: string[] = [];
  const removed: string[] = [];
  for (const sentence of splitSentences(sendable(text))) {
    if (promiseIn(sentence) === null) kept.push(sentence);
    else removed.push(sentence);
  }
  if (kept.length === 0) return { ok: false, reason: removed.length > 0 ? "all_sentences_removed" : "empty", removed };
  const clamped = clampAtSentence(kept.join(" "), maxChars);
  if (codePointLength(clamped) < minGuardedChars) return { ok: false, reason: "empty", removed };
  return { ok: true, text: clamped, removed };
}
