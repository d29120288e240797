/**
 * Terms: the sentence syntax of docs/wire.md, parsed to a compact form and printed back in
 * canonical text.
 *
 * Representation (K1): an atom is a JS string holding its own canonical text, a list is an
 * array of terms. So a symbol `Foo` is `"Foo"`, the string "Foo" is `"\"Foo\""`, a variable
 * is `"?x"`, a number is its shortest text (`"0.25"`, `"-3"`). Equality of atoms is string
 * equality, a symbol never equals the string spelled the same (the quotes are part of the
 * text), and printing an atom is free.
 *
 *   parseTerm('(answers AgentBoreas "Postgres 16" (sentexHandle 42))')
 *   // -> ["answers", "AgentBoreas", "\"Postgres 16\"", ["sentexHandle", "42"]]
 */
import { hash } from "node:crypto";
import { KbError } from "./errors.js";

export type Atom = string;
export type Term = Atom | readonly Term[];
export type List = readonly Term[];

/** Named limits on what the parser accepts; each refusal is a `parse-error`. */
export interface ParseLimits {
  /** Longest sentence text accepted, in UTF-16 code units. */
  maxSentenceChars: number;
  /** Deepest list nesting accepted (`(a)` is depth 1). */
  maxNestingDepth: number;
}

export const DEFAULT_PARSE_LIMITS: ParseLimits = { maxSentenceChars: 262_144, maxNestingDepth: 64 };

const SYMBOL_RE = /^[A-Za-z_+*/<>=!&%$#@~^|.:'-][A-Za-z0-9_+*/<>=!&%$#@~^|.:'-]*$/;
const VARIABLE_RE = /^\?[A-Za-z_][A-Za-z0-9_-]*$/;
const INTEGER_RE = /^-?[0-9]+$/;
const DECIMAL_RE = /^-?(?:[0-9]+\.[0-9]+|[0-9]+(?:\.[0-9]+)?[eE][+-]?[0-9]+)$/;

export const isList = (t: Term): t is List => typeof t !== "string";
export const isAtom = (t: Term): t is Atom => typeof t === "string";
export const isVariable = (t: Term): boolean => typeof t === "string" && t.charCodeAt(0) === 63; /* ? */
export const isString = (t: Term): boolean => typeof t === "string" && t.charCodeAt(0) === 34; /* " */
export function isNumber(t: Term): boolean {
  if (typeof t !== "string") return false;
  const c = t.charCodeAt(0);
  if (c >= 48 && c <= 57) return true;
  return c === 45 && t.length > 1 && t.charCodeAt(1) >= 48 && t.charCodeAt(1) <= 57;
}
export const isSymbol = (t: Term): boolean => typeof t === "string" && !isVariable(t) && !isString(t) && !isNumber(t);

/** Canonical text of a number token, or undefined when the token is not a number. */
export function canonicalNumber(token: string): string | undefined {
  if (INTEGER_RE.test(token)) {
    const text = BigInt(token).toString();
    return text === "-0" ? "0" : text;
  }
  if (DECIMAL_RE.test(token)) {
    const n = Number(token);
    if (!Number.isFinite(n)) return undefined;
    return Object.is(n, -0) ? "0" : String(n);
  }
  return undefined;
}

/** Canonical text of a JS string value as a term atom. */
export const stringAtom = (value: string): Atom => JSON.stringify(value);
/** The JS string a string atom denotes. */
export const stringValue = (atom: Atom): string => JSON.parse(atom) as string;

function parseFail(message: string, at: number): never {
  throw new KbError("parse-error", at >= 0 ? `${message} at offset ${at}` : message);
}

/**
 * Parse one term from text. Iterative (no recursion), so a hostile nesting depth is a
 * `parse-error`, never a stack overflow; every token is checked against the syntax.
 */
export function parseTerm(text: string, limits: ParseLimits = DEFAULT_PARSE_LIMITS): Term {
  return parseTermText(text, limits).term;
}

/** A parsed term, and whether the text it came from is already its canonical text. */
export interface ParsedText {
  term: Term;
  /** True when `printTerm(term) === text`: the caller may keep the text instead of printing. */
  canonical: boolean;
}

const SPACE = 32;
const isBlank = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;
/** Characters that end an atom token: blanks, parens and the string quote. */
const isDelimiter = (c: number) => c === 32 || c === 9 || c === 10 || c === 13 || c === 40 || c === 41 || c === 34;

/** ASCII classes of SYMBOL_RE: 1 = may start a symbol (digits and `-` aside, see atomAt), 2 = may continue one. */
const SYMBOL_CLASS = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_+*/<>=!&%$#@~^|.:'") SYMBOL_CLASS[c.charCodeAt(0)] = 3;
SYMBOL_CLASS[45 /* - */] = 2;
for (let d = 48; d <= 57; d++) SYMBOL_CLASS[d] = 2;

/** The parser's scratch stacks (it is synchronous and calls out to nothing, so one pair serves every call). */
const ITEMS: Term[] = [];
const OPENS: number[] = [];
/** Scratch items kept between calls (beyond it, ITEMS is dropped at the next call). */
const SCRATCH_KEPT = 4096;

/**
 * Parse one term and tell whether the text was canonical, in one pass: no regex for the
 * common tokens (plain symbols, small integers, strings without escapes), which are the
 * text's own slices; anything else goes through the full checks of `atomOf`.
 */
export function parseTermText(text: string, limits: ParseLimits = DEFAULT_PARSE_LIMITS): ParsedText {
  if (typeof text !== "string") parseFail("a sentence must be text", -1);
  if (text.length > limits.maxSentenceChars) {
    parseFail(`sentence is ${text.length} characters, over the limit maxSentenceChars=${limits.maxSentenceChars}`, -1);
  }
  // Open lists' items sit flat in ITEMS[0, top), each list's first at OPENS[depth]; a closed
  // list is sliced out at its exact size (a list grown by push keeps a 17-slot backing
  // store). The tops are counters: setting an array's length is a runtime call.
  const items = ITEMS;
  const opens = OPENS;
  if (items.length > SCRATCH_KEPT) items.length = 0; // what a huge sentence left is not held on to
  if (opens.length > SCRATCH_KEPT) opens.length = 0;
  let top = 0;
  let depth = 0;
  let result: Term | undefined;
  let canonical = true;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (isBlank(c)) {
      // Canonical text has one plain space between two items, nowhere else.
      if (c !== SPACE || i === 0 || text.charCodeAt(i - 1) === 40 || i + 1 === n || isBlank(text.charCodeAt(i + 1)) || text.charCodeAt(i + 1) === 41) canonical = false;
      i++;
      continue;
    }
    if (result !== undefined && depth === 0) parseFail("unexpected text after the term", i);
    if (c !== 41 && depth > 0 && top > opens[depth - 1]! && text.charCodeAt(i - 1) !== SPACE) canonical = false; // items not one space apart
    let item: Term;
    if (c === 40 /* ( */) {
      if (depth >= limits.maxNestingDepth) parseFail(`nesting deeper than the limit maxNestingDepth=${limits.maxNestingDepth}`, i);
      opens[depth++] = top;
      i++;
      continue;
    } else if (c === 41 /* ) */) {
      if (depth === 0) parseFail("unbalanced ')'", i);
      const first = opens[--depth]!;
      item = items.slice(first, top);
      top = first;
      i++;
    } else if (c === 34 /* " */) {
      let j = i + 1;
      let plain = true; // no escape, no control character, no surrogate: the slice is the atom
      while (j < n) {
        const d = text.charCodeAt(j);
        if (d === 92 /* \ */) {
          plain = false;
          j += 2;
        } else if (d === 34) break;
        else {
          if (d < 32 || (d >= 0xd800 && d <= 0xdfff)) plain = false;
          j++;
        }
      }
      if (j >= n) parseFail("unterminated string", i);
      const raw = text.slice(i, j + 1);
      if (plain) item = raw;
      else {
        let value: string;
        try {
          value = JSON.parse(raw) as string;
        } catch {
          parseFail("bad string escape", i);
        }
        item = stringAtom(value);
        if (item !== raw) canonical = false;
      }
      i = j + 1;
    } else if (c === 59 /* ; */) {
      parseFail("';' is not allowed inside a sentence", i);
    } else {
      let j = i + 1;
      while (j < n && !isDelimiter(text.charCodeAt(j))) j++;
      const token = text.slice(i, j);
      item = plainAtom(text, i, j) ? token : atomOf(token, i);
      if (item !== token) canonical = false;
      i = j;
    }
    if (depth > 0) items[top++] = item;
    else if (result === undefined) result = item;
    else parseFail("more than one term", i);
  }
  if (depth > 0) parseFail("unbalanced '('", n);
  if (result === undefined) parseFail("empty sentence", -1);
  return { term: result, canonical };
}

/**
 * Whether text[i, j) is an atom that is its own canonical text and needs no further check:
 * a symbol that starts with neither a digit nor `-`, or an integer of at most 15 digits
 * with no leading zero. Anything else (variables too) is for `atomOf`.
 */
function plainAtom(text: string, i: number, j: number): boolean {
  const c = text.charCodeAt(i);
  if (c < 128 && SYMBOL_CLASS[c] === 3) {
    for (let k = i + 1; k < j; k++) {
      const d = text.charCodeAt(k);
      if (d >= 128 || SYMBOL_CLASS[d] === 0) return false;
    }
    return true;
  }
  if (c >= 49 && c <= 57 && j - i <= 15) {
    for (let k = i + 1; k < j; k++) {
      const d = text.charCodeAt(k);
      if (d < 48 || d > 57) return false;
    }
    return true;
  }
  return c === 48 && j === i + 1;
}

function atomOf(token: string, at: number): Atom {
  if (token.charCodeAt(0) === 63) {
    if (!VARIABLE_RE.test(token)) parseFail(`bad variable ${JSON.stringify(token)}`, at);
    return token;
  }
  const num = canonicalNumber(token);
  if (num !== undefined) return num;
  const c = token.charCodeAt(0);
  if ((c >= 48 && c <= 57) || (c === 45 && token.length > 1 && token.charCodeAt(1) >= 48 && token.charCodeAt(1) <= 57)) {
    parseFail(`bad number ${JSON.stringify(token)}`, at);
  }
  if (!SYMBOL_RE.test(token)) parseFail(`bad symbol ${JSON.stringify(token.slice(0, 64))}`, at);
  return token;
}

/** Canonical text: one space between items, no space inside parens, atoms canonical. */
export function printTerm(t: Term): string {
  if (typeof t === "string") return t;
  // join builds a flat string: it hashes and compares faster as a map key than a rope of +=.
  // The parens go inside the first and last parts, so the result is join's one flat string.
  if (t.length === 0) return "()";
  const parts: string[] = new Array(t.length);
  for (let i = 0; i < t.length; i++) parts[i] = printTerm(t[i]!);
  parts[0] = "(" + parts[0];
  parts[t.length - 1] += ")";
  return parts.join(" ");
}

/** Parse then print: the canonical text of any accepted sentence text. */
export function canonicalText(text: string, limits?: ParseLimits): string {
  const parsed = parseTermText(text, limits);
  return parsed.canonical ? text : printTerm(parsed.term);
}

/** True when no variable occurs in t. */
export function isGround(t: Term): boolean {
  if (typeof t === "string") return !isVariable(t);
  for (const x of t) if (!isGround(x)) return false;
  return true;
}

/** Every variable in t, in first-occurrence order. */
export function variablesOf(t: Term, into: string[] = []): string[] {
  if (typeof t === "string") {
    if (isVariable(t) && !into.includes(t)) into.push(t);
  } else for (const x of t) variablesOf(x, into);
  return into;
}

export type Bindings = Record<string, Term>;

/**
 * One-way match of a pattern (may hold variables) against a ground term, extending
 * `bindings`. Returns the extended bindings (a copy when anything was bound) or null.
 */
export function matchTerm(pattern: Term, ground: Term, bindings: Bindings): Bindings | null {
  const box = { b: bindings, copied: false };
  return matchInto(pattern, ground, box) ? box.b : null;
}

/** Match, copying the bindings at most once (on the first new binding). */
function matchInto(pattern: Term, ground: Term, box: { b: Bindings; copied: boolean }): boolean {
  if (typeof pattern === "string") {
    if (pattern.charCodeAt(0) === 63) {
      const bound = box.b[pattern];
      if (bound !== undefined) return termEquals(bound, ground);
      if (!box.copied) {
        box.b = { ...box.b };
        box.copied = true;
      }
      box.b[pattern] = ground;
      return true;
    }
    return pattern === ground;
  }
  if (typeof ground === "string" || ground.length !== pattern.length) return false;
  for (let i = 0; i < pattern.length; i++) if (!matchInto(pattern[i]!, ground[i]!, box)) return false;
  return true;
}

export function termEquals(a: Term, b: Term): boolean {
  if (typeof a === "string" || typeof b === "string") return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!termEquals(a[i]!, b[i]!)) return false;
  return true;
}

/** Replace bound variables in t. */
export function substitute(t: Term, bindings: Bindings): Term {
  if (typeof t === "string") return t.charCodeAt(0) === 63 && bindings[t] !== undefined ? bindings[t]! : t;
  return t.map((x) => substitute(x, bindings));
}

/** `sha256:` + hex over (context, truth, canonical sentence); equal on every daemon. */
export function locatorOf(context: string, truth: "true" | "false", canonicalSentence: string): string {
  return "sha256:" + hash("sha256", `${context}\n${truth}\n${canonicalSentence}`, "hex");
}

/** `(sentexHandle H)` as a term. */
export const handleTerm = (h: number): List => ["sentexHandle", String(h)];
/** The handle named by a `(sentexHandle H)` term, or undefined. */
export function handleOfTerm(t: Term): number | undefined {
  if (typeof t === "string" || t.length !== 2 || t[0] !== "sentexHandle" || typeof t[1] !== "string") return undefined;
  return INTEGER_RE.test(t[1]) ? Number(t[1]) : undefined;
}
