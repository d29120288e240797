/**
 * The responder's bus (ADR-0014): DMs arrive on `KANNAKA.events.obc.dm_message` (the
 * presence daemon's subject), escalations leave on `KANNAKA.events.obc.responder_escalation`
 * wrapped in the original's envelope `{schema_version: 1, ts, agent_id, ...}`.
 *
 * NATS delivery is live-only (core NATS, no JetStream): a DM published while the responder
 * is down is not redelivered by the bus. It is caught up from the KB only if another
 * ingress wrote its query node (docs/agents-responder.md, "Catch-up").
 */
import { connect, type NatsConnection, type Subscription } from "nats";
import type { EscalationNotice } from "./responder.js";

export const defaultDmSubject = "KANNAKA.events.obc.dm_message";
export const defaultEscalationSubject = "KANNAKA.events.obc.responder_escalation";
export const escalationAgentId = "kannaka-responder";
/** A NATS payload larger than this is ignored (and counted) rather than parsed. */
export const maxNatsPayloadBytes = 256 * 1024;

export interface NatsOptions {
  url: string;
  user?: string;
  pass?: string;
  dmSubject?: string;
  escalationSubject?: string;
  /** Called with each payload that parsed as JSON (or `undefined` for one that did not). */
  onEvent: (payload: unknown) => void;
  log: (msg: string, extra?: Record<string, unknown>) => void;
}

/** The escalation event as published: the original's fields plus the message id and the query node. */
export function escalationEvent(n: EscalationNotice, extra: { query?: number | null } = {}): Record<string, unknown> {
  return {
    schema_version: 1,
    ts: new Date(n.atMs).toISOString(),
    agent_id: escalationAgentId,
    reason: n.reason,
    from: n.senderId,
    from_name: n.senderName,
    conversation_id: n.conversationId,
    message_id: n.messageId,
    ...(extra.query === undefined ? {} : { query: extra.query }),
  };
}

export class NatsBus {
  private nc: NatsConnection | null = null;
  private sub: Subscription | null = null;
  private closed = false;
  private readonly started: Promise<void>;
  received = 0;
  ignored = 0;

  constructor(private readonly o: NatsOptions) {
    this.started = this.start();
  }

  get connected(): boolean {
    return this.nc !== null && !this.nc.isClosed();
  }

  get dmSubject(): string {
    return this.o.dmSubject ?? defaultDmSubject;
  }

  /** Resolves once the first connection is up (it retries forever until `close`). */
  ready(): Promise<void> {
    return this.started;
  }

  private async start(): Promise<void> {
    for (let attempt = 0; !this.closed; attempt++) {
      try {
        const nc = await connect({
          servers: this.o.url,
          user: this.o.user,
          pass: this.o.pass,
          name: "koinii-responder",
          reconnect: true,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 2_000,
          timeout: 5_000,
        });
        if (this.closed) {
          await nc.close();
          return;
        }
        this.nc = nc;
        this.sub = nc.subscribe(this.dmSubject, {
          callback: (err, msg) => {
            if (err !== null) {
              this.o.log("nats subscription error", { error: err.message });
              return;
            }
            this.received++;
            if (msg.data.length > maxNatsPayloadBytes) {
              this.ignored++;
              this.o.log("nats payload too large, ignored", { bytes: msg.data.length });
              return;
            }
            let payload: unknown;
            try {
              payload = JSON.parse(Buffer.from(msg.data).toString("utf8"));
            } catch {
              payload = undefined;
            }
            this.o.onEvent(payload);
          },
        });
        void (async () => {
          for await (const s of nc.status()) this.o.log(`nats ${s.type}`);
        })().catch(() => undefined);
        this.o.log("nats connected", { subject: this.dmSubject });
        return;
      } catch (e) {
        this.o.log("nats connect failed, retrying", { error: (e as Error).message, attempt });
        await new Promise((r) => setTimeout(r, Math.min(5_000, 250 * 2 ** Math.min(attempt, 5))));
      }
    }
  }

  /** Publish an escalation event; false when there is no connection to publish on. */
  publishEscalation(event: Record<string, unknown>): boolean {
    if (this.nc === null || this.nc.isClosed()) return false;
    this.nc.publish(this.o.escalationSubject ?? defaultEscalationSubject, Buffer.from(JSON.stringify(event), "utf8"));
    return true;
  }

  async close(): Promise<void> {
    this.closed = true;
    const nc = this.nc;
    this.nc = null;
    this.sub?.unsubscribe();
    if (nc !== null && !nc.isClosed()) await nc.drain().catch(() => nc.close());
  }
}
