/**
 * Shared rigs for the knowledge-base tests: a KB on a fresh temp file (closed and removed
 * after the test), projections of belief that do not depend on handle values, and a
 * recorder of feed events.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { onTestFinished } from "vitest";
import { openKb, type Kb, type KbOptions, type FeedEvent, type ClashEntry } from "../../src/kb/index.js";

export const CONTEXTS_DIR = resolve(import.meta.dirname, "../../contexts");

/** A fresh temp directory, removed when the current test finishes. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "koinii-kb-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Open a KB on a temp file (the shipped contexts loaded unless `contextsDir: undefined` is
 * passed explicitly); it is closed when the test finishes.
 */
export async function freshKb(opts: Partial<KbOptions> = {}): Promise<Kb> {
  const path = opts.path ?? join(tempDir(), "kb.db");
  const kb = await openKb({ contextsDir: CONTEXTS_DIR, durability: "normal", ...opts, path });
  onTestFinished(() => kb.close());
  return kb;
}

/** An in-memory KB for property runs (hundreds of KBs per property), closed by the caller. */
export function memoryKb(opts: Partial<KbOptions> = {}): Promise<Kb> {
  return openKb({ contextsDir: CONTEXTS_DIR, ...opts, path: ":memory:" });
}

/** Every believed sentex as "context|sentence|strength", sorted: comparable across KBs. */
export function believed(kb: Kb): string[] {
  const out: string[] = [];
  for (const h of kb.engine.index.byHandle.keys()) {
    const r = kb.sentex(h)!;
    if (r.believed) out.push(`${r.context}|${r.sentence}|${r.strength}`);
  }
  return out.sort();
}

/** Every stored sentex (believed or not) as "context|sentence|believed". */
export function stored(kb: Kb): string[] {
  const out: string[] = [];
  for (const h of kb.engine.index.byHandle.keys()) {
    const r = kb.sentex(h)!;
    out.push(`${r.context}|${r.sentence}|${r.believed ? "in" : "out"}`);
  }
  return out.sort();
}

/** A clash entry with handles replaced by context and sentence. */
export function clashText(e: ClashEntry): string {
  const [a, b] = e.sides;
  return `${e.kind}: ${a.context}|${a.sentence}|${a.strength} vs ${b.context}|${b.sentence}|${b.strength}`;
}

/** Contradictions and conflicts seen from each context, handle-free and sorted. */
export function clashes(kb: Kb, contexts: readonly string[]): { contradictions: string[]; conflicts: string[] } {
  const contradictions = new Set<string>();
  const conflicts = new Set<string>();
  for (const c of contexts) {
    const r = kb.contradictions(c);
    for (const e of r.contradictions) contradictions.add(`${c} sees ${clashText(e)}`);
    for (const e of r.conflicts) conflicts.add(`${c} sees ${clashText(e)}`);
  }
  return { contradictions: [...contradictions].sort(), conflicts: [...conflicts].sort() };
}

/** The handle of the one stored sentex with this sentence in this context (believed or not). */
export function handleOf(kb: Kb, sentence: string, context: string): number | undefined {
  for (const h of kb.engine.index.byHandle.keys()) {
    const r = kb.sentex(h)!;
    if (r.context === context && r.sentence === sentence) return h;
  }
  return undefined;
}

/** Record every committed feed event. */
export function recordEvents(kb: Kb): FeedEvent[] {
  const events: FeedEvent[] = [];
  kb.onEvent((e) => events.push(e));
  return events;
}

/** The removal reasons the events gave for one sentence ("context|sentence" -> reasons). */
export function removalsOf(events: readonly FeedEvent[], sentence: string, context: string): string[] {
  return events.flatMap((e) => e.removed.filter((r) => r.sentence === sentence && r.context === context).map((r) => r.reason));
}

/** Capture a refusal's type (and problems) or fail when nothing was thrown. */
export async function refusal(fn: () => unknown): Promise<{ type: string; message: string; problems?: unknown }> {
  try {
    await fn();
  } catch (e) {
    const err = e as { type?: string; message: string; problems?: unknown };
    if (typeof err.type !== "string") throw e;
    return { type: err.type, message: err.message, problems: err.problems };
  }
  throw new Error("expected a refusal, but the call succeeded");
}
