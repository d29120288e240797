/**
 * The property of R18 (docs/agents-responder.md), shared by rails.property.test.ts (the
 * default run) and rails.property.slow.test.ts (the long one): over random conversations with
 * hostile lines mixed in, a reply only ever carries what it may draw on.
 *
 * The rig is the real thing minus the network edges: a KB on a SQLite file through the local
 * medium, the responder booted from its audit and dedup files, ChannelKb and ResponderService,
 * restarted at random; the DM platform is a fake holding every line of every thread. Every
 * line and every fact carries a distinct token of 10 letters (`zq` + 8); a sent reply may
 * contain a token only of
 *   - the DM it answers,
 *   - an earlier line (posted before that DM) that the responder itself answered, or
 *   - a fact a trusted writer stored.
 * Hostile lines, each of which must never be echoed: a stranger's DM in the conversation,
 * a friend's DM with an escalation word, a friend's DM over a cap or inside the gap, a DM
 * whose send failed, a thread line the responder never received, a DM node forged by an
 * untrusted agent, and facts about the friend stored by an untrusted agent or with no creator.
 * Texts and facts carry NUL and lone surrogates; no sent text does.
 */
import { readFileSync, rmSync } from "node:fs";
import { join as pathJoin } from "node:path";
import fc from "fast-check";
import { expect } from "vitest";
import { DeterministicComposer } from "../../../src/agents/composer/index.js";
import type { ComposeRequest, Composer } from "../../../src/agents/composer/index.js";
import {
  type AuditRecord, type Booted, ChannelKb, type Dm, ResponderService, bootResponder, dmQuestion, parseCharter,
} from "../../../src/agents/responder/index.js";
import { type Medium, join, local } from "../../../src/channel/index.js";
import { freshKb } from "../../channel/helpers.js";
import { FakeClock, FakePlatform } from "./fakes.js";
import { NOON, tmp } from "./helpers.js";

const CONVOS = ["a", "b", "c"] as const;
const WORDS = ["jazz", "music", "evening", "record", "festival", "garden", "river", "concert", "playing", "bass"];
const tokenRe = /zq[a-z]{8}/g;
const unsendable = /[\u0000\uD800-\uDFFF]/u;

/** The worst composer a model could be: it repeats everything it was handed. */
class EchoAllComposer implements Composer {
  readonly name = "echo-all";
  async compose(r: ComposeRequest): Promise<string> {
    return [...r.recall, ...r.history.map((h) => `${h.from} said ${h.text}`), r.message].map((x) => `${x}.`).join("\n");
  }
}

type Kind = "friend" | "keyword" | "stranger" | "failsend" | "platformOnly" | "forged" | "presence";
type Cmd =
  | { t: "line"; kind: Kind; convo: number; words: string[]; dirty: boolean }
  | { t: "burst"; lines: Extract<Cmd, { t: "line" }>[] }
  | { t: "fact"; trusted: "presence" | "mallory" | "nobody"; byName: boolean; words: string[]; dirty: boolean }
  | { t: "advance"; ms: number }
  | { t: "restart"; whileDown: Extract<Cmd, { t: "line" }>[] }
  /** Two friend DMs in one conversation while down: the newer is answered first, the older at the next start. */
  | { t: "reorder"; convo: number; older: string[]; newer: string[] };

const words = fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 5 });
const lineCmd = fc.record({
  t: fc.constant("line" as const),
  kind: fc.constantFrom<Kind>("friend", "friend", "friend", "keyword", "stranger", "failsend", "platformOnly", "forged", "presence"),
  convo: fc.nat(CONVOS.length - 1),
  words,
  dirty: fc.boolean(),
});
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 10, arbitrary: lineCmd },
  { weight: 2, arbitrary: fc.array(lineCmd, { minLength: 2, maxLength: 5 }).map((lines) => ({ t: "burst" as const, lines })) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("fact" as const), trusted: fc.constantFrom("presence" as const, "mallory" as const, "nobody" as const), byName: fc.boolean(), words, dirty: fc.boolean() }) },
  { weight: 3, arbitrary: fc.constantFrom(10_000, 61_000, 3600_000).map((ms) => ({ t: "advance" as const, ms })) },
  { weight: 2, arbitrary: fc.array(lineCmd, { maxLength: 4 }).map((whileDown) => ({ t: "restart" as const, whileDown })) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("reorder" as const), convo: fc.nat(CONVOS.length - 1), older: words, newer: words }) },
);
/** Every run opens each of the three conversations with a friend's line, then goes random. */
const run = fc.tuple(fc.tuple(words, words, words), fc.array(cmd, { maxLength: 16 }), fc.boolean());

function tokenOf(n: number): string {
  let s = "";
  for (let i = 0, v = n; i < 8; i++, v = Math.floor(v / 26)) s += String.fromCharCode(97 + (v % 26));
  return `zq${s}`;
}

let runNo = 0;
let conversations = 0;

/** Conversations exercised so far by this process (each run holds three). */
export function conversationsRun(): number {
  return conversations;
}

/** Run the property `numRuns` times; returns the number of conversations it exercised. */
export async function railsProperty(numRuns: number): Promise<number> {
  const kb = await freshKb();
  const medium: Medium = local(kb);
  const before = conversations;
  await fc.assert(
    fc.asyncProperty(run, async ([openers, cmds, deterministic]) => {
      const r = ++runNo;
      conversations += CONVOS.length;
      await oneRun(medium, r, openers, cmds, deterministic);
    }),
    { numRuns, endOnFailure: true },
  );
  return conversations - before;
}

async function oneRun(medium: Medium, r: number, openers: [string[], string[], string[]], cmds: Cmd[], deterministic: boolean): Promise<void> {
  const FRIEND = `bot-friend-${r}`;
  const STRANGER = `bot-stranger-${r}`;
  const AGENT = `AgentResponderR${r}`;
  const PRESENCE = `AgentPresenceR${r}`;
  const MALLORY = `AgentMalloryR${r}`;
  const CHANNEL = `CxDirectMessagesR${r}`;
  const convoId = (i: number) => `conv-${r}-${CONVOS[i]}`;
  const charter = parseCharter({
    version: 1,
    enabled: true,
    allowlist: { [FRIEND]: "Rex" },
    limits: { max_replies_per_day: 8, max_replies_per_conversation_per_day: 3, min_gap_seconds_per_conversation: 60, max_reply_chars: 4000 },
    escalate_keywords: ["deal", "money", "wallet"],
    voice: "",
  });
  const dir = tmp("responder-rails-");
  const clock = new FakeClock(NOON);
  const platform = new FakePlatform(clock);
  const inner: Composer = deterministic ? new DeterministicComposer() : new EchoAllComposer();
  // The send fails for a "failsend" DM: the platform is asked right after its compose.
  let composing = "";
  const composer: Composer = { name: inner.name, compose: (req, o) => ((composing = req.message), inner.compose(req, o)) };
  const presence = await join(medium, CHANNEL, PRESENCE);
  const mallory = await join(medium, CHANNEL, MALLORY);

  // What the oracle knows: each token's line, and which tokens a reply to message m may carry.
  let seq = 0;
  const lineSeq = new Map<string, number>(); // message id -> seq
  const lineToken = new Map<string, string>(); // message id -> token
  const trustedFactTokens = new Set<string>();
  const failing = new Set<string>();
  platform.failSend = () => [...failing].some((t) => composing.includes(t));

  let booted!: Booted;
  let service!: ResponderService;
  const start = async () => {
    const ckb = new ChannelKb({ trustedAskers: new Set([PRESENCE]), factWriters: new Set([PRESENCE]) });
    booted = bootResponder({ dataDir: dir, loaded: { charter, sha256: "f".repeat(64), path: "(test)" }, kb: ckb, platform, composer, clock });
    service = new ResponderService({ booted, kb: ckb, clock, log: () => undefined, catchup: { maxAgeMs: 30 * 24 * 3600_000, maxCount: 1 }, connect: () => join(medium, CHANNEL, AGENT) });
    service.start();
    // Catch-up queues its DMs in the tick it counts itself, so "idle" after it means handled.
    await until(() => service.status().catchups >= 1 && service.status().inflight === 0);
  };
  const stop = async () => {
    await service.close();
    await booted.stop("SIGTERM");
  };
  const auditPath = pathJoin(dir, "audit.jsonl");
  const records = (): AuditRecord[] => readFileSync(auditPath, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as AuditRecord);
  const terminal = new Set(["dropped", "escalated", "reply_sent"]);
  /** Until every id has its terminal record and the node its KB record. */
  const settled = async (ids: string[]) => {
    await until(() => {
      const done = new Set(records().filter((x) => terminal.has(x.action)).map((x) => x.detail.message_id));
      return ids.every((id) => done.has(id)) && service.status().inflight === 0;
    });
  };

  const dirt = (dirty: boolean) => (dirty ? " \u0000x\uD800y\uDC00" : "");
  /** Put one line into the world; returns the message id the responder must settle, if any. */
  const post = async (c: Extract<Cmd, { t: "line" }>, live: boolean): Promise<string | null> => {
    const n = seq++;
    const id = `m-${r}-${n}`;
    const token = tokenOf(r * 1000 + n);
    const text = `${c.words.join(" ")} ${token}${c.kind === "keyword" ? " about the deal" : ""}${dirt(c.dirty)}`;
    lineSeq.set(id, n);
    lineToken.set(id, token);
    const senderId = c.kind === "stranger" ? STRANGER : FRIEND;
    const dm: Dm = { conversationId: convoId(c.convo), messageId: id, senderId, senderName: c.kind === "stranger" ? "Mallory" : "Rex", text };
    const thread = platform.threads.get(dm.conversationId) ?? [];
    thread.push({ id, senderId, from: dm.senderName, text });
    platform.threads.set(dm.conversationId, thread);
    if (c.kind === "platformOnly") return null;
    if (c.kind === "forged") {
      await medium.assert(`(queries ${PRESENCE} ${dmQuestion(dm)})`, mallory.context, { creator: MALLORY });
      return null;
    }
    if (c.kind === "failsend") failing.add(token);
    if (c.kind === "presence" || !live) {
      await medium.assert(`(queries ${PRESENCE} ${dmQuestion(dm)})`, presence.context, { creator: PRESENCE });
      return id;
    }
    await service.ingest(dm, "http");
    return id;
  };

  await start();
  for (let i = 0; i < CONVOS.length; i++) await settled([(await post({ t: "line", kind: "friend", convo: i, words: openers[i]!, dirty: false }, true))!]);
  for (const c of cmds) {
    if (c.t === "line") {
      const id = await post(c, true);
      if (id !== null) await settled([id]);
    } else if (c.t === "burst") {
      const ids = (await Promise.all(c.lines.map((l) => post(l, true)))).filter((x): x is string => x !== null);
      await settled(ids);
    } else if (c.t === "fact") {
      const token = tokenOf(r * 1000 + seq++);
      const who = c.byName ? "Rex" : FRIEND;
      const sentence = `(correspondentFact ${JSON.stringify(who)} ${JSON.stringify(`${c.words.join(" ")} ${token}${dirt(c.dirty)}`)})`;
      if (c.trusted === "presence") {
        await medium.assert(sentence, presence.context, { creator: PRESENCE });
        trustedFactTokens.add(token);
      } else if (c.trusted === "mallory") await medium.assert(sentence, mallory.context, { creator: MALLORY });
      else await medium.assert(sentence, mallory.context);
    } else if (c.t === "advance") clock.advance(c.ms);
    else if (c.t === "reorder") {
      await stop();
      for (const w of [c.older, c.newer]) await post({ t: "line", kind: "presence", convo: c.convo, words: w, dirty: false }, false);
      await start();
      clock.advance(61_000);
      await stop();
      await start();
    }
    else {
      await stop();
      // DMs posted while it is down; catch-up takes the newest one, and the
      // rest at a later start: so older DMs are answered after newer ones.
      for (const l of c.whileDown) await post(l, false);
      await start();
    }
  }
  await stop();

  // The oracle: match each send to the DM it answered (sends and reply_sending records pair up in order).
  const all = records();
  rmSync(dir, { recursive: true, force: true });
  const answered = new Set(all.filter((x) => x.action === "reply_sent").map((x) => x.detail.message_id as string));
  const sendFailed = new Set(all.filter((x) => x.action === "escalated" && x.detail.reason === "send_failed").map((x) => x.detail.message_id as string));
  const delivered = all.filter((x) => x.action === "reply_sending").map((x) => x.detail.message_id as string).filter((id) => !sendFailed.has(id));
  expect(delivered).toHaveLength(platform.sent.length);
  platform.sent.forEach((s, i) => {
    const id = delivered[i]!;
    expect(s.text).not.toMatch(unsendable);
    const at = lineSeq.get(id)!;
    for (const token of s.text.match(tokenRe) ?? []) {
      const ok =
        token === lineToken.get(id) ||
        trustedFactTokens.has(token) ||
        [...answered].some((a) => lineToken.get(a) === token && lineSeq.get(a)! < at);
      if (!ok) expect.fail(`the reply to ${id} carries ${token}, which it may not draw on: ${JSON.stringify(s.text)}`);
    }
  });
}

async function until(pred: () => boolean): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (pred()) return;
    await new Promise((res) => setTimeout(res, 2));
  }
  throw new Error("never settled");
}
