/**
 * The local medium's in-process watch filter, the same rule as the daemon's (wire.md "The
 * change feed"): no context = every entry; a context = every entry whose context it sees;
 * a goal + context = entries matching the goal literal, each with its bindings. Goals that
 * cannot be watched honestly (conjunction, negation as failure, rules, ...) are refused
 * `not-watchable`; a goal without a context is `bad-request`.
 */
import { terms, literalShape, type Literal, type Kb, type FeedEvent as KbFeedEvent } from "../kb/index.js";
import { ChannelError } from "./errors.js";
import type { FeedEvent, FeedAdded, FeedRemoved } from "./medium.js";

const NOT_WATCHABLE_HEADS = new Set(["and", "or", "unknown", "implies", "thereExists", "forAll", "ist", "evaluate", "lessThan", "greaterThan", "different"]);

export interface LocalWatch {
  context?: string;
  literal?: Literal;
}

export function compileLocalWatch(spec: { goal?: string; context?: string }): LocalWatch {
  if (spec.goal !== undefined && spec.context === undefined) throw new ChannelError("bad-request", "a watch goal needs a context: the cone it is answered in");
  if (spec.goal === undefined) return spec.context === undefined ? {} : { context: spec.context };
  let t: terms.Term;
  try {
    t = terms.parseTerm(spec.goal);
  } catch (e) {
    throw new ChannelError("parse-error", e instanceof Error ? e.message : String(e));
  }
  const inner = terms.isList(t) && t[0] === "not" && t.length === 2 && terms.isList(t[1]!) ? (t[1] as terms.List) : undefined;
  const head = terms.isList(t) ? (inner ? inner[0] : t[0]) : undefined;
  if (!terms.isList(t) || t.length === 0 || (typeof head === "string" && NOT_WATCHABLE_HEADS.has(head))) {
    throw new ChannelError("not-watchable", `${spec.goal} cannot be watched honestly: a standing query matches one literal per entry`);
  }
  try {
    return { context: spec.context, literal: literalShape(t, "a watch goal") };
  } catch (e) {
    throw new ChannelError("not-watchable", e instanceof Error ? e.message : String(e));
  }
}

function literalOf(sentence: string): Literal | null {
  const t = terms.parseTerm(sentence, { maxSentenceChars: Number.MAX_SAFE_INTEGER, maxNestingDepth: Number.MAX_SAFE_INTEGER });
  if (!terms.isList(t) || t.length === 0) return null;
  if (t[0] === "not" && t.length === 2 && terms.isList(t[1]!)) return { neg: true, atom: t[1] as terms.List };
  return { neg: false, atom: t as terms.List };
}

function bindingsOf(goal: Literal, sentence: string): Record<string, string> | undefined {
  const lit = literalOf(sentence);
  if (!lit || lit.neg !== goal.neg) return undefined;
  const b = terms.matchTerm(goal.atom, lit.atom, {});
  if (!b) return undefined;
  const out: Record<string, string> = {};
  for (const k of Object.keys(b)) out[k] = terms.printTerm(b[k]!);
  return out;
}

/** The part of one event a watch delivers, or null when no entry is left. */
export function filterLocal(w: LocalWatch, ev: KbFeedEvent, kb: Kb): FeedEvent | null {
  if (w.context === undefined) return { seq: ev.seq, added: ev.added, removed: ev.removed };
  const ctx = w.context;
  const added: FeedAdded[] = [];
  const removed: FeedRemoved[] = [];
  for (const e of ev.added) {
    if (!kb.sees(ctx, e.context)) continue;
    if (!w.literal) added.push(e);
    else {
      const bindings = bindingsOf(w.literal, e.sentence);
      if (bindings) added.push({ ...e, bindings });
    }
  }
  for (const e of ev.removed) {
    if (!kb.sees(ctx, e.context)) continue;
    if (!w.literal) removed.push(e);
    else {
      const bindings = bindingsOf(w.literal, e.sentence);
      if (bindings) removed.push({ ...e, bindings });
    }
  }
  return added.length || removed.length ? { seq: ev.seq, added, removed } : null;
}
