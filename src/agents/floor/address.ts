/**
 * Hearing his own name in a transcript (ADR 0119 §2-4; reference agents.md §3.2-3.3).
 *
 * Speech-to-text has never seen his name and spells it however it likes ("clanky",
 * "klankie"), so names are compared on a consonant skeleton, not literally. The tolerance
 * lives here and not in the persona's aliases, because aliases also feed text matching,
 * where nobody types "klanky".
 */

/** How a name landed in a line: a clean hail, an ambiguous hit, or talk about him. */
export type AddressKind = "addressed" | "mentioned" | "none";

/**
 * The consonant skeleton of one word: letters only, a few spelling folds, the leading
 * vowel kept, other vowels dropped, doubled letters collapsed.
 *
 * @example phoneticKey("klanky") === phoneticKey("clankie") // both "klnk"
 */
export function phoneticKey(word: string): string {
  let s = word.toLowerCase().replace(/[^a-z]/g, "");
  if (s === "") return "";
  // The folds run in this order; each sees the output of the one before.
  const folds: [RegExp, string][] = [
    [/ph/g, "f"],
    [/gh/g, ""],
    [/ck/g, "k"],
    [/ch/g, "k"],
    [/sh/g, "s"],
    [/th/g, "t"],
    [/c(?=[eiy])/g, "s"], // soft c
    [/c/g, "k"], // every other c
    [/q/g, "k"],
    [/x/g, "ks"],
    [/z/g, "s"],
    [/v/g, "f"],
    [/y/g, "i"],
  ];
  for (const [pattern, replacement] of folds) s = s.replace(pattern, replacement);
  const head = /^[aeiou]/.test(s) ? s.charAt(0) : "";
  const skeleton = head + s.replace(/[aeiou]/g, "");
  return skeleton.replace(/(.)\1+/g, "$1");
}

/** The distinct, non-empty phonetic keys of a list of names. */
export function nameKeys(names: readonly string[]): ReadonlySet<string> {
  const keys = new Set<string>();
  for (const name of names) {
    const key = phoneticKey(name);
    if (key !== "") keys.add(key);
  }
  return keys;
}

interface Token {
  word: string;
  /** The raw word ended in 's or ’s (stripped from `word`). */
  possessive: boolean;
}

/** Lowercase, split on anything but letters and apostrophes, mark and strip possessives. */
export function tokenize(transcript: string): Token[] {
  const tokens: Token[] = [];
  for (const raw of transcript.toLowerCase().split(/[^a-z'’]+/)) {
    const possessive = /['’]s$/.test(raw);
    const word = (possessive ? raw.slice(0, -2) : raw).replace(/['’]/g, "");
    if (word !== "") tokens.push({ word, possessive });
  }
  return tokens;
}

/** A word before the name that makes it a hail: "hey clankie", "so clankie". */
export const VOCATIVES: ReadonlySet<string> = new Set(["hey", "hi", "yo", "ok", "okay", "oh", "and", "so"]);
/** A word after a leading name that makes the line a report: "clankie is broken". */
export const THIRD_PERSON_AFTER_NAME: ReadonlySet<string> = new Set(["is", "was", "has", "had", "does", "did", "just"]);
/** A verb before the name that makes him its object: "ask clankie", "told clankie". */
export const ABOUT_VERBS: ReadonlySet<string> = new Set([
  "ask", "asked", "asking",
  "tell", "told", "telling",
  "show", "showed", "showing",
  "call", "called", "calling",
]);

/**
 * Classify how any of `names` landed in `transcript`. Hits are judged left to right; the
 * first clean hail wins. A hit after an ask/tell verb, or a possessive hit that is neither
 * last nor after a vocative, is about him and skipped. Every other hit that is not a hail
 * is a mention. `none` needs positive evidence (ADR 0119 §4): no hit, or only skipped hits.
 *
 * @example classifyAddress("hey clanky you there", ["clankie"]) // "addressed"
 * @example classifyAddress("clankie did you see that", ["clankie"]) // "mentioned"
 * @example classifyAddress("that is clankie's job", ["clankie"]) // "none"
 */
export function classifyAddress(transcript: string, names: readonly string[]): AddressKind {
  const keys = nameKeys(names);
  if (keys.size === 0) return "none";
  const tokens = tokenize(transcript);
  let mentioned = false;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (!keys.has(phoneticKey(token.word))) continue;
    const before = i > 0 ? tokens[i - 1].word : undefined;
    const after = i + 1 < tokens.length ? tokens[i + 1].word : undefined;
    const vocative = before !== undefined && VOCATIVES.has(before);
    const aboutObject = before !== undefined && ABOUT_VERBS.has(before);
    const first = i === 0 || (i === 1 && vocative);
    const last = i === tokens.length - 1;
    const report = after !== undefined && THIRD_PERSON_AFTER_NAME.has(after);
    if (aboutObject) continue;
    if (token.possessive && !last && !vocative) continue;
    if (vocative || (first && !report) || last) return "addressed";
    mentioned = true;
  }
  return mentioned ? "mentioned" : "none";
}

/**
 * Did his name come up at all (anything but `none`)? This is the boolean for barge-in and
 * the reorder bypass: a mention counts as addressed there.
 */
export function nameCameUp(transcript: string, names: readonly string[]): boolean {
  return classifyAddress(transcript, names) !== "none";
}

/** A line with no letter or digit (VAD noise, stray punctuation) is not speech. */
export function isSpeech(text: string): boolean {
  return /[\p{L}\p{N}]/u.test(text);
}
