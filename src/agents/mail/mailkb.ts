/**
 * The mail agent's store in the KB: its own context (AgentMail -> CxMail, lifted under a
 * channel by `join`, rooted in CxMailActs). Refs, closures and commitments are read back
 * from the facts the agent itself wrote there (exact matches in its own context, never
 * derived answers), and every change is an edit: a changed ref's old facts go and its new
 * ones come in the same edit.
 */
import type { AgentHandle } from "../../channel/index.js";
import { terms } from "../../kb/index.js";
import type { Handle } from "../../channel/index.js";
import type { Commitment } from "./commitments.js";
import {
  REF_PATTERNS,
  REF_PREDICATES,
  decodeClosure,
  decodeCommitment,
  decodeRef,
  encodeClosure,
  encodeCommitment,
  encodeRef,
  idOf,
  statusFact,
  subjectOf,
  syncedFact,
} from "./kbshape.js";
import { refId, type MailRef } from "./parse.js";
import type { Closure } from "./state.js";

/** Refs per edit: a ref's facts are never split across edits. */
export const refsPerEdit = 200;

export interface StoredRefs {
  refs: MailRef[];
  /** Per ref anchor: its facts (sentence -> handle). */
  facts: Map<string, Map<string, Handle>>;
  /** Per account: the sync at which its refs last changed (ISO) and the handle of that fact. */
  synced: Map<string, { at: string; handle: Handle }>;
}

export interface RefDiff {
  edits: { add: string[]; remove: Handle[] }[];
  changed: number;
  added: number;
  removed: number;
  unchanged: number;
}

export class MailKb {
  constructor(readonly h: AgentHandle) {}

  get context(): string {
    return this.h.context;
  }

  async readRefs(): Promise<StoredRefs> {
    const m = this.h.medium;
    const synced = new Map<string, { at: string; handle: Handle }>();
    for (const s of await m.match("(mailSynced ?a ?at)", this.context)) {
      const [, a, at] = terms.parseTerm(s.sentence) as terms.List;
      synced.set(terms.stringValue(a as string), { at: terms.stringValue(at as string), handle: s.handle });
    }
    const byRef = new Map<string, Map<string, string>>();
    const facts = new Map<string, Map<string, Handle>>();
    const results = await Promise.all(REF_PREDICATES.map((p) => m.match(REF_PATTERNS[p], this.context)));
    for (const [i, rows] of results.entries()) {
      for (const s of rows) {
        const anchor = idOf(subjectOf(s.sentence), "mailRef");
        if (!byRef.has(anchor)) byRef.set(anchor, new Map());
        byRef.get(anchor)!.set(REF_PREDICATES[i]!, s.sentence);
        if (!facts.has(anchor)) facts.set(anchor, new Map());
        facts.get(anchor)!.set(s.sentence, s.handle);
      }
    }
    const refs: MailRef[] = [];
    for (const [anchor, f] of byRef) {
      if (f.size !== REF_PREDICATES.length) continue; // a partial ref cannot happen through edits; skip rather than guess
      const account = anchor.slice(0, anchor.indexOf(":"));
      refs.push(decodeRef(f, synced.get(account)?.at ?? "1970-01-01T00:00:00.000Z").ref);
    }
    return { refs, facts, synced };
  }

  /**
   * The edits that make the stored refs equal `next` (each with its thread id). Per ref,
   * only the facts that differ are removed and added, in the same edit. An account's
   * `mailSynced` fact moves only with a change to its refs (or when it has none yet): a sync
   * that finds the mailbox as the KB already says gives no edit at all.
   */
  diffRefs(stored: StoredRefs, next: readonly { ref: MailRef; threadId: string }[], syncedAccounts: ReadonlyMap<string, string>): RefDiff {
    const out: RefDiff = { edits: [], changed: 0, added: 0, removed: 0, unchanged: 0 };
    let cur = { add: [] as string[], remove: [] as Handle[] };
    let n = 0;
    const flush = () => {
      if (cur.add.length + cur.remove.length > 0) out.edits.push(cur);
      cur = { add: [], remove: [] };
      n = 0;
    };
    const seen = new Set<string>();
    const touched = new Set<string>();
    for (const { ref, threadId } of next) {
      const anchor = refId(ref);
      seen.add(anchor);
      const want = encodeRef(ref, threadId);
      const have = stored.facts.get(anchor) ?? new Map<string, Handle>();
      const add = want.filter((s) => !have.has(s));
      const remove = [...have].filter(([s]) => !want.includes(s)).map(([, h]) => h);
      if (add.length + remove.length === 0) {
        out.unchanged += 1;
        continue;
      }
      touched.add(ref.account);
      if (have.size === 0) out.added += 1;
      else out.changed += 1;
      cur.add.push(...add);
      cur.remove.push(...remove);
      if (++n >= refsPerEdit) flush();
    }
    for (const [anchor, have] of stored.facts) {
      if (seen.has(anchor)) continue;
      touched.add(anchor.slice(0, anchor.indexOf(":")));
      out.removed += 1;
      cur.remove.push(...have.values());
      if (++n >= refsPerEdit) flush();
    }
    for (const [account, at] of syncedAccounts) {
      const old = stored.synced.get(account);
      if (old && !touched.has(account)) continue;
      cur.add.push(syncedFact(account, at));
      if (old) cur.remove.push(old.handle);
    }
    flush();
    return out;
  }

  async applyEdits(edits: readonly { add: string[]; remove: Handle[] }[]): Promise<void> {
    for (const e of edits) {
      await this.h.medium.edit({ add: e.add.map((sentence) => ({ sentence, context: this.context, creator: this.h.agent })), remove: e.remove });
    }
  }

  async readClosures(): Promise<Closure[]> {
    const rows = await this.h.medium.match("(mailClosed ?t ?a ?note ?covers ?at)", this.context);
    return rows
      .filter((r) => r.creator === null || r.creator === this.h.agent)
      .map((r) => decodeClosure(r.sentence))
      .sort((a, b) => a.closed_at.localeCompare(b.closed_at));
  }

  async addClosure(c: Closure, commitmentChanges: readonly Commitment[] = [], current: ReadonlyMap<string, Handle> = new Map()): Promise<void> {
    const add = [encodeClosure(c), ...commitmentChanges.map((x) => statusFact(x))];
    const remove = commitmentChanges.map((x) => current.get(x.id)).filter((h): h is Handle => h !== undefined);
    await this.applyEdits([{ add, remove }]);
  }

  /** Commitments with the handle of each one's status fact. */
  async readCommitments(): Promise<{ commitments: Commitment[]; statusHandles: Map<string, Handle> }> {
    const [records, statuses] = await Promise.all([
      this.h.medium.match("(mailCommitmentOf ?c ?src ?t ?a ?who ?cp ?what ?due ?dt ?o ?d)", this.context),
      this.h.medium.match("(mailCommitmentStatus ?c ?s ?conf ?closed)", this.context),
    ]);
    const statusOf = new Map<string, { sentence: string; handle: Handle }>();
    for (const s of statuses) statusOf.set(idOf(subjectOf(s.sentence), "mailCommitment"), { sentence: s.sentence, handle: s.handle });
    const commitments: Commitment[] = [];
    const statusHandles = new Map<string, Handle>();
    for (const r of records) {
      const id = idOf(subjectOf(r.sentence), "mailCommitment");
      const st = statusOf.get(id);
      if (!st) continue;
      commitments.push(decodeCommitment(r.sentence, st.sentence));
      statusHandles.set(id, st.handle);
    }
    return { commitments: commitments.sort((a, b) => a.id.localeCompare(b.id)), statusHandles };
  }

  /** New commitments (record + status) and status changes of known ones, in one edit. */
  async writeCommitments(added: readonly Commitment[], changed: readonly Commitment[], statusHandles: ReadonlyMap<string, Handle>): Promise<void> {
    const add: string[] = [];
    for (const c of added) {
      const e = encodeCommitment(c);
      add.push(e.record, e.status);
    }
    const remove: Handle[] = [];
    for (const c of changed) {
      add.push(statusFact(c));
      const h = statusHandles.get(c.id);
      if (h !== undefined) remove.push(h);
    }
    if (add.length + remove.length > 0) await this.applyEdits([{ add, remove }]);
  }
}
