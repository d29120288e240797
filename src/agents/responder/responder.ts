/**
 * The responder's decision loop for one DM at a time, over injected ports, so the daemon
 * (NATS or the KB channel, the HTTP ingest, GET /status, the CLI) stays a thin layer.
 *
 * Per DM, in order (docs/agents-responder.md, "The loop"):
 *   own echo -> drop; already processed -> drop; gate; missing message id -> escalate;
 *   fetch the thread and re-gate on the full text (R5); recall; compose; guard and clamp;
 *   audit `reply_sending` + count + mark processed; send; audit `reply_sent`, or escalate
 *   `send_failed`.
 * Every DM ends in exactly one terminal audit record (`dropped`, `escalated` or
 * `reply_sent`), written and fsynced before `handle` resolves; the record carries what the
 * knowledge base must be told (the reply text, the escalation reason) and the DM's query
 * node, so an outcome the KB never received is rebuilt from the audit at the next boot.
 *
 * What a reply may draw on (R18): the message itself, recalled facts the KB port vouches
 * for, and earlier lines of the thread that were themselves answered (their message ids
 * are in the answered set, rebuilt from `reply_sent` records at boot) and come before the
 * message. Every other thread line is never handed to the composer.
 */
import { clampAtSentence, codePointLength, guardReply } from "../composer/guard.js";
import type { Composer } from "../composer/types.js";
import type { AuditRecord, AuditSink } from "./audit.js";
import type { Charter } from "./charter.js";
import {
  type Dm,
  type DropReason,
  type GateEscalation,
  type RateState,
  emptyRateState,
  gateDecision,
  recordReply,
  rollDay,
} from "./gate.js";
import type { PlatformPort, ThreadMessage } from "./platform.js";

/** What the knowledge base offers the responder. */
export interface KbPort {
  /**
   * Facts the KB recalls for `query`, most relevant first. `dm` is the message being
   * answered (full text), so a KB can recall by sender id and conversation too.
   */
  recall(query: string, options: { topK: number; signal: AbortSignal; dm?: Dm; node?: number }): Promise<string[]>;
  /** Make an escalation visible to a human-driven session (a bus event, a KB query node, ...). */
  escalate(notice: EscalationNotice): Promise<void>;
}

export interface Clock {
  nowMs(): number;
}

/** The persisted processed-id set (`DedupStore` implements it). */
export interface ProcessedIds {
  has(id: string): boolean;
  add(id: string): void;
}

export type ResponderEscalation =
  | GateEscalation
  | "missing_message_id"
  | "full_text_unavailable"
  | "compose_failed"
  | "guard_refused"
  | "send_failed"
  /** A reply was being sent when the process died: the platform may or may not have it (rebuilt at boot). */
  | "send_unconfirmed"
  | "queue_full"
  /** An ingress could not write the DM's query node (the knowledge base was unreachable). */
  | "kb_unavailable";

export type ResponderDrop = DropReason | "own_echo" | "duplicate";

export interface EscalationNotice {
  readonly reason: ResponderEscalation;
  readonly senderId: string;
  readonly senderName: string;
  readonly conversationId: string;
  readonly messageId: string | null;
  readonly atMs: number;
}

export type Outcome =
  | { action: "replied"; messageId: string; chars: number; text: string }
  | { action: "escalated"; reason: ResponderEscalation }
  | { action: "dropped"; reason: ResponderDrop };

export interface ResponderPorts {
  kb: KbPort;
  platform: PlatformPort;
  composer: Composer;
  audit: AuditSink;
  clock: Clock;
  processed: ProcessedIds;
}

export interface ResponderOptions {
  charter: Charter;
  /** The responder's own sender id on the platform; its echoes are dropped. */
  ownSenderId?: string | null;
  /** Counters to start from (rebuilt from the audit at boot). */
  initialState?: RateState;
  /** Message ids replied to before this boot (rebuilt from the audit): thread lines the composer may see. */
  initialAnswered?: Iterable<string>;
  /** DMs waiting behind the one in progress; more are escalated `queue_full`. */
  maxQueued?: number;
  maxThreadMs?: number;
  maxRecallMs?: number;
  maxComposeMs?: number;
  recallTopK?: number;
  /**
   * An event text at least this many code points long may have been cut by the platform
   * (the original saw ~200); it is only answered once the full text was read from the thread.
   */
  truncatedEventChars?: number;
  /** Characters of the message kept in audit previews. */
  previewChars?: number;
}

export const responderDefaults = {
  maxQueued: 64,
  maxThreadMs: 10_000,
  maxRecallMs: 8_000,
  maxComposeMs: 60_000,
  recallTopK: 5,
  truncatedEventChars: 180,
  previewChars: 120,
  maxHistoryMessages: 6,
  /** Answered message ids kept in memory for the thread filter (oldest forgotten first). */
  maxAnsweredIds: 50_000,
} as const;

/** Where a DM came from, carried into its audit records. */
export interface DmRef {
  /** The DM's query node in the knowledge base. */
  readonly query?: number;
}

export interface ResponderStatus {
  seen: number;
  replied: number;
  escalated: number;
  dropped: number;
  queued: number;
  lastEscalation: { atMs: number; reason: ResponderEscalation; from: string } | null;
  today: { day: string; replies: number; perConversation: Record<string, number> };
}

/** Run `f` with an abort signal that fires after `ms`; rejects on timeout even if `f` ignores the signal. */
async function withTimeout<T>(ms: number, f: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      ac.abort();
      reject(new Error(`timed out after ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([f(ac.signal), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export class Responder {
  private state: RateState;
  private tail: Promise<unknown> = Promise.resolve();
  private queued = 0;
  private readonly stats: Omit<ResponderStatus, "today" | "queued"> = { seen: 0, replied: 0, escalated: 0, dropped: 0, lastEscalation: null };
  private readonly answered = new Set<string>();
  private readonly o: Required<Omit<ResponderOptions, "initialState" | "initialAnswered" | "ownSenderId">> & { ownSenderId: string | null };

  constructor(
    private readonly ports: ResponderPorts,
    options: ResponderOptions,
  ) {
    this.o = {
      charter: options.charter,
      ownSenderId: options.ownSenderId ?? null,
      maxQueued: options.maxQueued ?? responderDefaults.maxQueued,
      maxThreadMs: options.maxThreadMs ?? responderDefaults.maxThreadMs,
      maxRecallMs: options.maxRecallMs ?? responderDefaults.maxRecallMs,
      maxComposeMs: options.maxComposeMs ?? responderDefaults.maxComposeMs,
      recallTopK: options.recallTopK ?? responderDefaults.recallTopK,
      truncatedEventChars: options.truncatedEventChars ?? responderDefaults.truncatedEventChars,
      previewChars: options.previewChars ?? responderDefaults.previewChars,
    };
    this.state = options.initialState ?? emptyRateState(ports.clock.nowMs());
    for (const id of options.initialAnswered ?? []) this.markAnswered(id);
  }

  private markAnswered(id: string): void {
    this.answered.delete(id);
    this.answered.add(id);
    for (const old of this.answered) {
      if (this.answered.size <= responderDefaults.maxAnsweredIds) break;
      this.answered.delete(old);
    }
  }

  /**
   * Queue one DM (or null for an event that was not one) and resolve with what was done.
   * DMs are processed strictly one at a time, in arrival order (R4).
   *
   * @example const outcome = await responder.handle(extractDm(natsPayload));
   */
  handle(dm: Dm | null, ref: DmRef = {}): Promise<Outcome> {
    if (this.queued > this.o.maxQueued && dm !== null) {
      // Said out loud, never absorbed: the DM is flagged for a human instead of waiting.
      return Promise.resolve(this.escalate(dm, ref, "queue_full", this.ports.clock.nowMs()));
    }
    this.queued++;
    const run = this.tail.then(() => this.process(dm, ref));
    this.tail = run.then(
      () => undefined,
      () => undefined,
    );
    return run.finally(() => {
      this.queued--;
    });
  }

  /** Resolves once every queued DM is done. */
  async drain(): Promise<void> {
    while (this.queued > 0) await this.tail;
  }

  /** A snapshot for GET /status. */
  status(): ResponderStatus {
    const s = rollDay(this.state, this.ports.clock.nowMs());
    return {
      ...this.stats,
      queued: this.queued,
      today: { day: s.day, replies: s.repliesToday, perConversation: Object.fromEntries(s.perConversationToday) },
    };
  }

  /** The current counters (for tests and /status). */
  rateState(): RateState {
    return this.state;
  }

  private audit(action: string, detail: Record<string, unknown>, nowMs: number): AuditRecord {
    return this.ports.audit.append(action, detail, nowMs);
  }

  private preview(text: string): string {
    return clampAtSentence(text.replace(/\s+/gu, " "), this.o.previewChars);
  }

  private drop(dm: Dm | null, ref: DmRef, reason: ResponderDrop, nowMs: number): Outcome {
    this.stats.dropped++;
    this.audit(
      "dropped",
      dm === null ? { reason, ...ref } : { reason, from: dm.senderId, convo: dm.conversationId, message_id: dm.messageId, ...ref },
      nowMs,
    );
    // Our own echo is finished with for good (audited above first): a redelivery or a
    // catch-up drops it as a duplicate instead of taking a slot again.
    if (reason === "own_echo" && dm?.messageId != null) this.ports.processed.add(dm.messageId);
    return { action: "dropped", reason };
  }

  private escalate(dm: Dm, ref: DmRef, reason: ResponderEscalation, nowMs: number, extra: Record<string, unknown> = {}): Outcome {
    this.stats.escalated++;
    this.stats.lastEscalation = { atMs: nowMs, reason, from: dm.senderId };
    this.audit(
      "escalated",
      {
        reason,
        from: dm.senderId,
        from_name: dm.senderName,
        convo: dm.conversationId,
        message_id: dm.messageId,
        preview: this.preview(dm.text),
        ...ref,
        ...extra,
      },
      nowMs,
    );
    if (dm.messageId !== null) this.ports.processed.add(dm.messageId);
    const notice: EscalationNotice = {
      reason,
      senderId: dm.senderId,
      senderName: dm.senderName,
      conversationId: dm.conversationId,
      messageId: dm.messageId,
      atMs: nowMs,
    };
    // The audit record above is the durable flag; the notice makes it visible sooner.
    void this.ports.kb.escalate(notice).catch((e: unknown) => {
      try {
        this.audit("escalation_notify_failed", { reason, message_id: dm.messageId, error: String((e as Error)?.message ?? e) }, this.ports.clock.nowMs());
      } catch {
        // The audit itself failed (closed at shutdown); nothing further can record it.
      }
    });
    return { action: "escalated", reason };
  }

  private async process(dm: Dm | null, ref: DmRef): Promise<Outcome> {
    const { clock } = this.ports;
    const charter = this.o.charter;
    let now = clock.nowMs();
    this.stats.seen++;
    this.state = rollDay(this.state, now);

    if (dm !== null && this.o.ownSenderId !== null && dm.senderId === this.o.ownSenderId) return this.drop(dm, ref, "own_echo", now);
    if (dm !== null && dm.messageId !== null && this.ports.processed.has(dm.messageId)) return this.drop(dm, ref, "duplicate", now);

    const verdict = gateDecision(charter, dm, this.state, now);
    if (verdict.action === "drop") return this.drop(dm, ref, verdict.reason, now);
    if (dm === null) return this.drop(dm, ref, "not_a_dm", now); // unreachable: the gate drops null first
    if (verdict.action === "escalate") return this.escalate(dm, ref, verdict.reason, now);
    if (dm.messageId === null) return this.escalate(dm, ref, "missing_message_id", now);
    const messageId = dm.messageId;

    // R5: the event text may be cut short; answer (and gate) only the full text.
    let thread: ThreadMessage[] | null = null;
    try {
      thread = await withTimeout(this.o.maxThreadMs, (signal) => this.ports.platform.fetchThread(dm.conversationId, { signal }));
    } catch {
      thread = null;
    }
    const live = thread?.find((m) => m.id === messageId && (m.senderId === null || m.senderId === dm.senderId));
    let full = dm;
    if (live !== undefined && codePointLength(live.text) > codePointLength(dm.text)) full = { ...dm, text: live.text };
    else if (live === undefined && codePointLength(dm.text) >= this.o.truncatedEventChars) {
      return this.escalate(dm, ref, "full_text_unavailable", clock.nowMs());
    }
    now = clock.nowMs();
    const regate = gateDecision(charter, full, this.state, now);
    if (regate.action === "drop") return this.drop(full, ref, regate.reason, now);
    if (regate.action === "escalate") return this.escalate(full, ref, regate.reason, now);

    let recall: string[] = [];
    try {
      recall = await withTimeout(this.o.maxRecallMs, (signal) =>
        this.ports.kb.recall(`${full.senderName}: ${full.text.slice(0, 300)}`, { topK: this.o.recallTopK, signal, dm: full, node: ref.query }),
      );
      recall = recall.slice(0, this.o.recallTopK);
    } catch {
      recall = [];
    }

    const history = answerableHistory(thread ?? [], messageId, this.answered)
      .slice(-responderDefaults.maxHistoryMessages)
      .map((m) => ({ from: m.from, text: m.text }));
    const maxChars = charter.limits.maxReplyChars;
    let composed: string;
    try {
      composed = await withTimeout(this.o.maxComposeMs, (signal) =>
        this.ports.composer.compose(
          { purpose: "dm-reply", system: charter.voice, recall, history, message: full.text, maxChars, correspondent: full.senderName },
          { signal },
        ),
      );
    } catch (e) {
      return this.escalate(full, ref, "compose_failed", clock.nowMs(), { composer: this.ports.composer.name, error: String((e as Error)?.message ?? e).slice(0, 200) });
    }
    const guarded = guardReply(composed, maxChars);
    if (!guarded.ok) {
      return this.escalate(full, ref, "guard_refused", clock.nowMs(), { composer: this.ports.composer.name, guard: guarded.reason, removed: guarded.removed.length });
    }
    const reply = guarded.text;

    // The slot is taken before the send (R4, R8): the audit record counts it at the next
    // boot, the processed mark stops a redelivery, so a crash after this line can lose a
    // reply but never send one twice or past a cap.
    now = clock.nowMs();
    this.audit(
      "reply_sending",
      {
        convo: full.conversationId,
        to: full.senderId,
        message_id: messageId,
        chars: codePointLength(reply),
        composer: this.ports.composer.name,
        recall_facts: recall.length,
        guard_removed: guarded.removed.length,
        preview: this.preview(reply),
        ...ref,
      },
      now,
    );
    this.state = recordReply(this.state, full.conversationId, now);
    this.ports.processed.add(messageId);

    try {
      await this.ports.platform.send(full.conversationId, reply);
    } catch (e) {
      const err = e as { code?: unknown; status?: unknown; message?: unknown };
      return this.escalate(full, ref, "send_failed", clock.nowMs(), {
        error_code: typeof err.code === "string" ? err.code : "error",
        status: typeof err.status === "number" ? err.status : null,
      });
    }
    this.stats.replied++;
    this.markAnswered(messageId);
    this.audit("reply_sent", { convo: full.conversationId, to: full.senderId, message_id: messageId, text: reply, ...ref }, clock.nowMs());
    return { action: "replied", messageId, chars: codePointLength(reply), text: reply };
  }
}

/**
 * The thread lines a reply may draw on (R18): those before the message being answered whose
 * own message id was answered. A line that was escalated, dropped, never handled, or sent by
 * anyone off the conversation's answered path (a stranger in a group thread, our own outgoing
 * lines, which the KB holds as our answers) is left out, and so is everything after the message.
 */
export function answerableHistory(thread: readonly ThreadMessage[], messageId: string, answered: ReadonlySet<string>): ThreadMessage[] {
  const at = thread.findIndex((m) => m.id === messageId);
  const before = at < 0 ? thread : thread.slice(0, at);
  return before.filter((m) => m.id !== null && m.id !== messageId && answered.has(m.id));
}

/** An outcome the knowledge base has not acknowledged (no `kb_recorded` after it in the audit). */
export interface UnrecordedOutcome {
  readonly query: number;
  readonly messageId: string | null;
  readonly outcome: Outcome;
}

/**
 * Rebuild state from audit records (oldest first):
 * - every `reply_sending` counts as a reply at its timestamp;
 * - every message id named by a `reply_sending` or `escalated` record, or by an `own_echo`
 *   drop, is processed;
 * - every `reply_sent` message id is answered (its line may feed later replies);
 * - every outcome carrying a query node with no `kb_recorded` after it is unrecorded: the
 *   service writes it to the KB at the next connect. A `reply_sending` with neither a
 *   `reply_sent` nor an `escalated` after it (the process died mid-send) is unrecorded as
 *   `send_unconfirmed`.
 */
export class AuditReplay {
  private state: RateState;
  readonly processedIds: string[] = [];
  readonly answeredIds: string[] = [];
  private readonly open = new Map<number, UnrecordedOutcome>();

  constructor(nowMs: number) {
    this.state = emptyRateState(nowMs);
  }

  readonly onRecord = (r: AuditRecord): void => {
    const d = r.detail;
    const id = typeof d.message_id === "string" ? d.message_id : null;
    const query = Number.isSafeInteger(d.query) ? (d.query as number) : null;
    if (id !== null && (r.action === "reply_sending" || r.action === "escalated" || (r.action === "dropped" && d.reason === "own_echo"))) this.processedIds.push(id);
    if (r.action === "reply_sending" && typeof d.convo === "string") {
      const at = Date.parse(r.ts);
      if (Number.isFinite(at)) this.state = recordReply(this.state, d.convo, at);
    }
    if (r.action === "reply_sent" && id !== null) this.answeredIds.push(id);
    if (query === null) return;
    if (r.action === "reply_sending") this.open.set(query, { query, messageId: id, outcome: { action: "escalated", reason: "send_unconfirmed" } });
    else if (r.action === "reply_sent" && id !== null && typeof d.text === "string") this.open.set(query, { query, messageId: id, outcome: { action: "replied", messageId: id, chars: codePointLength(d.text), text: d.text } });
    else if (r.action === "escalated" && typeof d.reason === "string") this.open.set(query, { query, messageId: id, outcome: { action: "escalated", reason: d.reason as ResponderEscalation } });
    else if (r.action === "kb_recorded") this.open.delete(query);
  };

  /** Outcomes with a query node the KB never acknowledged, oldest first. */
  unrecorded(): UnrecordedOutcome[] {
    return [...this.open.values()];
  }

  stateAt(nowMs: number): RateState {
    return rollDay(this.state, nowMs);
  }
}
