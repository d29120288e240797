/**
 * The responder's knowledge-base port over the channel library (issue 7 items 1, 2, 4):
 *
 * - ingress: a DM becomes `(queries Agent (dm ...))` in the agent's own context (dmnode.ts);
 * - recall: facts the channel sees about the correspondent (the recall predicates, first
 *   argument = the sender id or name as a string) written by a trusted fact writer, and the
 *   thread so far: earlier DM query nodes of the same conversation that this agent answered
 *   (never one it refused or has not answered) and its answers to them (R18);
 * - a reply: `(answers Agent "reply text" (sentexHandle Q))` on the DM's query node;
 * - an escalation: `(refuse Agent (sentexHandle Q))` plus
 *   `(responderEscalation Agent (sentexHandle Q) "reason")`, in ONE edit, and the bus event;
 * - catch-up: the unanswered, unrefused DM query nodes the channel sees.
 *
 * The handle is swapped on every (re)connect; a call while disconnected throws
 * `KbUnavailableError`.
 */
import { terms } from "../../kb/index.js";
import {
  type AgentHandle, type Handle, answer, coneOf, openQueries, poseQuery, str,
} from "../../channel/index.js";
import { type Dm } from "./gate.js";
import { dmQuestion, parseDmNode, parseDmQuestion } from "./dmnode.js";
import type { EscalationNotice, KbPort } from "./responder.js";

/** The predicate of the escalation record written next to the `refuse` move. */
export const escalationPredicate = "responderEscalation";
/** Predicates read for facts about a correspondent: `(P "senderId" Fact)` or `(P "Sender Name" Fact)`. */
export const defaultRecallPredicates: readonly string[] = ["correspondentFact"];
/** Bounds on recall reads. */
export const recallBounds = { factsPerQuery: 50, historyMessages: 6, historyChars: 240, factChars: 240 } as const;

export class KbUnavailableError extends Error {
  readonly code = "kb_unavailable";
  constructor() {
    super("not connected to the knowledge base");
    this.name = "KbUnavailableError";
  }
}

/** One DM query node as catch-up sees it. */
export interface DmNode {
  readonly handle: Handle;
  readonly agent: string;
  readonly creator: string | null;
  /** Epoch ms the daemon stored the node at. */
  readonly createdAt: number;
  readonly dm: Dm;
}

export interface ChannelKbOptions {
  /** Agents whose DM query nodes are taken as DMs (the responder's own agent is always one). */
  trustedAskers: ReadonlySet<string>;
  /**
   * Agents whose facts about a correspondent a reply may draw on (the responder's own agent
   * is always one). A fact stored by anyone else, or with no creator, is never recalled.
   */
  factWriters: ReadonlySet<string>;
  recallPredicates?: readonly string[];
  /** Publishes an escalation to the bus (NATS), if one is configured. */
  publish?: (notice: EscalationNotice) => void;
}

const predicateRe = /^[a-z][A-Za-z0-9]*$/;

function render(t: string): string {
  return terms.isString(t) ? terms.stringValue(t) : t;
}

function cut(text: string, max: number): string {
  const flat = text.replace(/\s+/gu, " ").trim();
  const cps = Array.from(flat);
  return cps.length <= max ? flat : cps.slice(0, max - 1).join("") + "…";
}

export class ChannelKb implements KbPort {
  private h: AgentHandle | null = null;
  private readonly recallPredicates: readonly string[];

  constructor(private readonly o: ChannelKbOptions) {
    this.recallPredicates = o.recallPredicates ?? defaultRecallPredicates;
    for (const p of this.recallPredicates) if (!predicateRe.test(p)) throw new RangeError(`recall predicate ${JSON.stringify(p)} must start lower-case and be alphanumeric`);
  }

  setHandle(h: AgentHandle | null): void {
    this.h = h;
  }

  get connected(): boolean {
    return this.h !== null;
  }

  get handle(): AgentHandle | null {
    return this.h;
  }

  private need(): AgentHandle {
    if (this.h === null) throw new KbUnavailableError();
    return this.h;
  }

  /** Is a node asked by `agent` (stored with `creator`) a DM the responder should take? */
  trusts(agent: string, creator: string | null): boolean {
    const self = this.h?.agent;
    const trusted = agent === self || this.o.trustedAskers.has(agent);
    // Over an agent token the daemon stamps the creator: a node whose first argument is not
    // its creator was written by someone speaking for another agent.
    return trusted && (creator === null || creator === agent);
  }

  /** Write a DM's query node; returns its handle (the same DM twice gives the same handle). */
  async pose(dm: Dm): Promise<Handle> {
    return poseQuery(this.need(), dmQuestion(dm));
  }

  /** May a reply draw on a fact stored with `creator`? */
  private writesFacts(creator: string | null): boolean {
    return creator !== null && (creator === this.h?.agent || this.o.factWriters.has(creator));
  }

  /**
   * What a reply may draw on from the KB (R18): facts about the sender from trusted writers,
   * then the thread as the KB holds it (earlier DM nodes of this conversation that this agent
   * answered, and its answers), newest first, none after `node` (the DM being answered).
   */
  async recall(_query: string, options: { topK: number; signal: AbortSignal; dm?: Dm; node?: number }): Promise<string[]> {
    const h = this.need();
    const dm = options.dm;
    if (dm === undefined || options.topK < 1) return [];
    const who = [dm.senderId, ...(dm.senderName !== "?" && dm.senderName.trim().length > 0 ? [dm.senderName] : [])];
    const factReads = this.recallPredicates.flatMap((p) => who.map((w) => h.medium.match(`(${p} ${str(w)} ?fact)`, "?ctx")));
    const [cone, nodes, mine, refused, ...factAnswers] = await Promise.all([
      coneOf(h.medium, h.channel),
      h.medium.match(`(queries ?agent (dm ${str(dm.conversationId)} ?message ?sender ?name ?text))`, "?ctx"),
      h.medium.match(`(answers ${h.agent} ?content ?target)`, h.context),
      h.medium.match(`(refuse ${h.agent} ?target)`, h.context),
      ...factReads,
    ]);
    const facts: string[] = [];
    const seen = new Set<string>();
    for (const records of factAnswers) {
      const vouched = records.filter((r) => cone.has(r.context) && !r.derived && this.writesFacts(r.creator));
      for (const r of vouched.slice(0, recallBounds.factsPerQuery)) {
        const f = (terms.parseTerm(r.sentence) as terms.List)[2];
        if (f === undefined) continue;
        const text = cut(render(terms.printTerm(f)), recallBounds.factChars);
        if (text.length === 0 || seen.has(text)) continue;
        seen.add(text);
        facts.push(text);
      }
    }
    const targetOf = (sentence: string, at: number): number | undefined => terms.handleOfTerm((terms.parseTerm(sentence) as terms.List)[at]!);
    const refusedNodes = new Set(refused.map((r) => targetOf(r.sentence, 2)));
    const replies = new Map<number, string>();
    for (const a of mine) {
      const target = targetOf(a.sentence, 3);
      if (target !== undefined) replies.set(target, render(terms.printTerm((terms.parseTerm(a.sentence) as terms.List)[2]!)));
    }
    const dms = nodes
      .filter((n) => cone.has(n.context) && !n.derived)
      .map((n) => ({ n, parsed: parseDmNode(n.sentence) }))
      .filter((x) => x.parsed !== null && this.trusts(x.parsed.agent, x.n.creator));
    // "Before the message": before its own node, or before the first node of the same message id.
    const own = dms.filter((x) => x.n.handle === options.node || (dm.messageId !== null && x.parsed!.dm.messageId === dm.messageId)).map((x) => x.n.handle);
    const bound = own.length > 0 ? Math.min(...own) : Number.POSITIVE_INFINITY;
    const history: string[] = [];
    const earlier = dms
      .filter((x) => x.n.handle < bound && replies.has(x.n.handle) && !refusedNodes.has(x.n.handle))
      .sort((a, b) => a.n.handle - b.n.handle)
      .slice(-recallBounds.historyMessages);
    for (const { n, parsed } of earlier.reverse()) {
      history.push(`Earlier in this conversation I replied: ${cut(replies.get(n.handle)!, recallBounds.historyChars)}`);
      history.push(`Earlier in this conversation ${parsed!.dm.senderName} wrote: ${cut(parsed!.dm.text, recallBounds.historyChars)}`);
    }
    // Facts first (what the KB knows about the person), then the thread, newest first; at
    // least two history lines when there are any, so a long fact list cannot crowd them out.
    const keepHistory = Math.min(history.length, Math.max(2, options.topK - facts.length));
    const out = [...facts.slice(0, Math.max(0, options.topK - keepHistory)), ...history.slice(0, keepHistory)];
    return out.slice(0, options.topK);
  }

  /** The bus part of an escalation (the KB records are written by `recordEscalation`, which knows the node). */
  async escalate(notice: EscalationNotice): Promise<void> {
    this.o.publish?.(notice);
  }

  /** `(answers Agent "text" (sentexHandle Q))`. */
  async recordReply(q: Handle, text: string): Promise<Handle> {
    return answer(this.need(), str(text), q);
  }

  /** `(refuse Agent (sentexHandle Q))` and the escalation record, in one edit (both or neither). */
  async recordEscalation(q: Handle, reason: string): Promise<Handle[]> {
    const h = this.need();
    const target = `(sentexHandle ${q})`;
    const r = await h.medium.edit({
      add: [
        { sentence: `(refuse ${h.agent} ${target})`, context: h.context, creator: h.agent },
        { sentence: `(${escalationPredicate} ${h.agent} ${target} ${str(reason)})`, context: h.context, creator: h.agent },
      ],
    });
    return r.added;
  }

  /** DM query nodes the channel sees with no answer and no refusal by this agent, oldest first. */
  async openDms(): Promise<DmNode[]> {
    const h = this.need();
    const [open, refused] = await Promise.all([
      openQueries(h, { unanswered: true }),
      h.medium.match(`(refuse ${h.agent} ?target)`, h.context),
    ]);
    const refusedTargets = new Set<number>();
    for (const r of refused) {
      const t = terms.parseTerm(r.sentence) as terms.List;
      const target = terms.handleOfTerm(t[2]!);
      if (target !== undefined) refusedTargets.add(target);
    }
    const out: DmNode[] = [];
    for (const q of open) {
      if (refusedTargets.has(q.handle)) continue;
      const dm = parseDmQuestion(q.question);
      if (dm === null || !this.trusts(q.agent, q.sentex.creator)) continue;
      out.push({ handle: q.handle, agent: q.agent, creator: q.sentex.creator, createdAt: q.sentex.createdAt, dm });
    }
    return out;
  }
}
