/**
 * Does a line put a question to him? The floor's reading of a mention, for a composer with
 * no judgement of its own (the deterministic one): "clankie did you see that?" asks him,
 * "I think clankie knows the answer" and "what is clankie doing" do not.
 *
 * A line is split into sentences at `.`, `!`, `?` and `;`. A sentence that names him asks
 * him something when it is a question and is put to him: his name opens it (after any
 * vocatives), or it speaks to "you". A sentence is a question when it ends in `?`, or when,
 * after the leading vocatives and his name, it opens with a question word or with an
 * auxiliary followed by a subject ("did you", "is the build"; "is broken" is a report).
 * Word lists cannot hear intonation: this is a heuristic, and the model decides for itself.
 */
import { VOCATIVES, nameKeys, phoneticKey, tokenize } from "./address.js";

/** Words that open a question on their own. */
export const QUESTION_WORDS: ReadonlySet<string> = new Set(["what", "who", "whom", "whose", "where", "when", "why", "how", "which"]);
/** Auxiliaries that open a yes/no question when a subject follows them. */
export const QUESTION_AUXILIARIES: ReadonlySet<string> = new Set([
  "am", "is", "are", "was", "were", "do", "does", "did", "have", "has", "had",
  "can", "could", "will", "would", "shall", "should", "may", "might", "must",
]);
/** Words that can open the subject after an auxiliary. */
export const SUBJECT_OPENERS: ReadonlySet<string> = new Set([
  "you", "i", "we", "it", "they", "he", "she", "this", "that", "these", "those", "there",
  "the", "a", "an", "my", "your", "our", "their", "his", "her", "its",
  "anyone", "anybody", "someone", "somebody", "everyone", "anything", "something",
]);
/** Words that speak to the listener. */
export const SECOND_PERSON: ReadonlySet<string> = new Set(["you", "your", "yours", "yourself", "youre", "youve", "youll", "youd"]);

/**
 * @example asksHim("clankie did you see that", ["clankie"]) // true
 * @example asksHim("bob did clankie fix it?", ["clankie"]) // false: asked about him, of someone else
 */
export function asksHim(transcript: string, names: readonly string[]): boolean {
  const keys = nameKeys(names);
  if (keys.size === 0) return false;
  for (const sentence of transcript.match(/[^.!?;]+[.!?;]*/g) ?? []) {
    const words = tokenize(sentence).map((t) => t.word);
    if (!words.some((w) => keys.has(phoneticKey(w)))) continue;
    let i = 0;
    while (i < words.length && VOCATIVES.has(words[i])) i++;
    const opensWithName = i < words.length && keys.has(phoneticKey(words[i]));
    if (opensWithName) i++;
    const [first, second] = [words[i], words[i + 1]];
    const question =
      sentence.trim().endsWith("?") ||
      (first !== undefined && QUESTION_WORDS.has(first)) ||
      (first !== undefined && second !== undefined && QUESTION_AUXILIARIES.has(first) && SUBJECT_OPENERS.has(second));
    if (question && (opensWithName || words.some((w) => SECOND_PERSON.has(w)))) return true;
  }
  return false;
}
