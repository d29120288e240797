/**
 * What a subscription watches, and the per-event filter that honours it without re-running
 * the goal (docs/wire.md "The change feed"): each added or removed entry's sentence is matched
 * against the goal literal, and its context must be in the watch context's cone.
 *
 *   const w = compileWatch({ goal: "(dog ?x)", context: "CxPets" });
 *   filterEvent(w, view, kb.sees.bind(kb)); // the event with only (dog ...) entries, each with bindings
 */
import { terms, literalShape, isContextName, KbError, type FeedEvent, type SentexRecord, type RemovedEntry, type Literal, type EngineLimits } from "../kb/index.js";
import { FeedError } from "./errors.js";

type Term = terms.Term;

/** Heads a watch goal may not have: conjunction, disjunction, negation as failure, rules, quantifiers, evaluables. */
const NOT_WATCHABLE_HEADS = new Set(["and", "or", "unknown", "implies", "thereExists", "forAll", "ist", "evaluate", "lessThan", "greaterThan", "different"]);

export interface WatchSpec {
  goal?: string;
  context?: string;
}

export interface CompiledWatch {
  goal?: string;
  context?: string;
  literal?: Literal;
}

/** An added entry or a removed entry as a standing query delivers it: with its bindings. */
export type WireAdded = SentexRecord & { bindings?: Record<string, string> };
export type WireRemoved = RemovedEntry & { bindings?: Record<string, string> };

export interface WireEvent {
  seq: number;
  added: WireAdded[];
  removed: WireRemoved[];
  bounded?: FeedEvent["bounded"];
}

/**
 * Check a watch request and compile it. A goal without a context is `bad-request`; a goal
 * that cannot be watched honestly is `not-watchable`; a malformed context is `naming`.
 */
export function compileWatch(spec: WatchSpec, limits?: Partial<EngineLimits>): CompiledWatch {
  if (spec.goal !== undefined && spec.context === undefined) throw new FeedError("bad-request", "a watch goal needs a context: the cone it is answered in");
  if (spec.context !== undefined && !isContextName(spec.context)) {
    throw new KbError("naming", `context ${JSON.stringify(spec.context)} must be Cx followed by CapitalCamelCase`);
  }
  if (spec.goal === undefined) return spec.context === undefined ? {} : { context: spec.context };
  const term = terms.parseTerm(spec.goal, { ...terms.DEFAULT_PARSE_LIMITS, ...limits });
  const literal = watchableLiteral(term);
  return { goal: terms.printTerm(term), context: spec.context, literal };
}

function notWatchable(message: string): never {
  throw new FeedError("not-watchable", message);
}

function watchableLiteral(t: Term): Literal {
  if (!terms.isList(t) || t.length === 0 || !terms.isSymbol(t[0]!)) notWatchable(`a watch goal must be a sentence such as (dog ?x), got ${terms.printTerm(t)}`);
  const list = t as terms.List;
  const inner = list[0] === "not" && list.length === 2 && terms.isList(list[1]!) ? (list[1] as terms.List) : undefined;
  const head = inner ? inner[0] : list[0];
  if (typeof head === "string" && NOT_WATCHABLE_HEADS.has(head)) {
    notWatchable(`(${head} ...) cannot be watched honestly: a standing query matches one literal per entry; watch each literal, or poll the query`);
  }
  if (inner && (inner.length === 0 || !terms.isSymbol(inner[0]!))) notWatchable(`a watch goal must be a sentence such as (not (dog ?x)), got ${terms.printTerm(t)}`);
  return literalShape(t, "a watch goal");
}

/** One published event with its entries' literals parsed once, shared by every subscription. */
export class EventView {
  private readonly addedLits: (Literal | null | undefined)[] = [];
  private readonly removedLits: (Literal | null | undefined)[] = [];

  constructor(readonly event: FeedEvent) {}

  addedLiteral(i: number): Literal | null {
    let l = this.addedLits[i];
    if (l === undefined) l = this.addedLits[i] = literalOf(this.event.added[i]!.sentence);
    return l;
  }

  removedLiteral(i: number): Literal | null {
    let l = this.removedLits[i];
    if (l === undefined) l = this.removedLits[i] = literalOf(this.event.removed[i]!.sentence);
    return l;
  }
}

function literalOf(sentence: string): Literal | null {
  try {
    const t = terms.parseTerm(sentence, { maxSentenceChars: Number.MAX_SAFE_INTEGER, maxNestingDepth: Number.MAX_SAFE_INTEGER });
    if (!terms.isList(t) || t.length === 0) return null;
    if (t[0] === "not" && t.length === 2 && terms.isList(t[1]!)) return { neg: true, atom: t[1] as terms.List };
    return { neg: false, atom: t as terms.List };
  } catch {
    return null; // a stored sentence always parses; a failure here only means "matches no goal"
  }
}

function bindingsOf(goal: Literal, lit: Literal | null): Record<string, string> | undefined {
  if (!lit || lit.neg !== goal.neg) return undefined;
  const b = terms.matchTerm(goal.atom, lit.atom, {});
  if (!b) return undefined;
  const out: Record<string, string> = {};
  for (const k of Object.keys(b)) out[k] = terms.printTerm(b[k]!);
  return out;
}

/**
 * The part of one event a watch delivers, or null when no entry is left (an event with no
 * entry left is not delivered). `sees(viewer, seen)` answers cone membership at filter time.
 */
export function filterEvent(w: CompiledWatch, view: EventView, sees: (viewer: string, seen: string) => boolean): WireEvent | null {
  const ev = view.event;
  if (w.context === undefined) return ev;
  const ctx = w.context;
  const added: WireAdded[] = [];
  const removed: WireRemoved[] = [];
  for (let i = 0; i < ev.added.length; i++) {
    const e = ev.added[i]!;
    if (!sees(ctx, e.context)) continue;
    if (!w.literal) added.push(e);
    else {
      const bindings = bindingsOf(w.literal, view.addedLiteral(i));
      if (bindings) added.push({ ...e, bindings });
    }
  }
  for (let i = 0; i < ev.removed.length; i++) {
    const e = ev.removed[i]!;
    if (!sees(ctx, e.context)) continue;
    if (!w.literal) removed.push(e);
    else {
      const bindings = bindingsOf(w.literal, view.removedLiteral(i));
      if (bindings) removed.push({ ...e, bindings });
    }
  }
  if (added.length === 0 && removed.length === 0) return null;
  if (added.length === ev.added.length && removed.length === ev.removed.length && !w.literal) return ev;
  const out: WireEvent = { seq: ev.seq, added, removed };
  if (ev.bounded) out.bounded = ev.bounded;
  return out;
}
