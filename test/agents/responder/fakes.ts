import type { ComposeRequest, Composer } from "../../../src/agents/composer/index.js";
import { type EscalationNotice, type KbPort, PlatformError, type PlatformPort, type ThreadMessage } from "../../../src/agents/responder/index.js";

export class FakeClock {
  constructor(public ms: number) {}
  nowMs = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

export class FakeKb implements KbPort {
  facts: string[] = ["Rex likes jazz"];
  notices: EscalationNotice[] = [];
  queries: string[] = [];
  failRecall = false;
  async recall(query: string): Promise<string[]> {
    this.queries.push(query);
    if (this.failRecall) throw new Error("recall down");
    return this.facts;
  }
  async escalate(n: EscalationNotice): Promise<void> {
    this.notices.push(n);
  }
}

export class FakePlatform implements PlatformPort {
  threads = new Map<string, ThreadMessage[]>();
  sent: { conversationId: string; text: string; atMs: number }[] = [];
  failSend: (conversationId: string, text: string) => boolean = () => false;
  failThread = false;
  constructor(private readonly clock: FakeClock) {}
  async fetchThread(conversationId: string): Promise<ThreadMessage[]> {
    if (this.failThread) throw new PlatformError("network", "down");
    return this.threads.get(conversationId) ?? [];
  }
  async send(conversationId: string, text: string): Promise<void> {
    if (this.failSend(conversationId, text)) throw new PlatformError("http_status", "answered 502", 502);
    this.sent.push({ conversationId, text, atMs: this.clock.ms });
  }
}

/** Answers with the message's tag (a word like `tag17`) so a test can tell which DM a send answered. */
export class EchoTagComposer implements Composer {
  readonly name = "fake";
  requests: ComposeRequest[] = [];
  reply: (r: ComposeRequest) => string = (r) => `Thanks, I read ${/tag\d+/.exec(r.message)?.[0] ?? "it"}.`;
  async compose(r: ComposeRequest): Promise<string> {
    this.requests.push(r);
    return this.reply(r);
  }
}
