/**
 * The `contexts/*.kb` loader: one file per context (the file name is the context), a
 * sequence of sentences with `;` line comments. Loading is idempotent (a sentence already
 * stored changes nothing) and order-insensitive: entries refused on a round are retried
 * while a round makes progress (a declaration may sit after its first use); what is still
 * refused at the end is a real error and is thrown with its file and index.
 */
import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { KbError } from "./errors.js";
import type { Kb } from "./kb.js";

/** Split a .kb text into its top-level sentence texts (comments dropped, strings respected). */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === ";" && depth === 0) {
      while (i < text.length && text[i] !== "\n") i++;
      continue;
    }
    if (c === '"') {
      i++;
      while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
      continue;
    }
    if (c === "(") {
      if (depth === 0) start = i;
      depth++;
    } else if (c === ")") {
      depth--;
      if (depth < 0) throw new KbError("parse-error", `unbalanced ')' at offset ${i}`);
      if (depth === 0) out.push(text.slice(start, i + 1));
    } else if (depth === 0 && !/\s/.test(c)) {
      throw new KbError("parse-error", `text outside a sentence at offset ${i}: ${JSON.stringify(text.slice(i, i + 20))}`);
    }
  }
  if (depth !== 0) throw new KbError("parse-error", "unbalanced '(' at end of file");
  return out;
}

export async function loadContextFile(kb: Kb, path: string): Promise<number> {
  const context = basename(path, ".kb");
  let pending = splitSentences(readFileSync(path, "utf8")).map((sentence, index) => ({ sentence, index }));
  let stored = 0;
  while (pending.length) {
    const refused: typeof pending = [];
    let lastError: unknown;
    for (const entry of pending) {
      try {
        const r = await kb.assert(entry.sentence, context);
        if (r.created) stored++;
      } catch (e) {
        if (!(e instanceof KbError)) throw e;
        lastError = new KbError(e.type, `${path} sentence ${entry.index + 1}: ${e.message}`);
        refused.push(entry);
      }
    }
    if (refused.length === pending.length) throw lastError;
    pending = refused;
  }
  return stored;
}

/** Load every `*.kb` file of a directory, in name order (the order does not matter). */
export async function loadContextsDir(kb: Kb, dir: string): Promise<number> {
  let stored = 0;
  for (const f of readdirSync(dir).filter((f) => f.endsWith(".kb")).sort()) stored += await loadContextFile(kb, join(dir, f));
  return stored;
}
