import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AuditRecord, type Booted, type Dm, type Outcome, bootResponder, utcDay, verifyAudit } from "../../../src/agents/responder/index.js";
import { FRIEND, FRIEND2, NOON, STRANGER, charter, tmp } from "./helpers.js";
import { EchoTagComposer, FakeClock, FakeKb, FakePlatform } from "./fakes.js";

const LIMITS = { max_replies_per_day: 4, max_replies_per_conversation_per_day: 2, min_gap_seconds_per_conversation: 60, max_reply_chars: 200 };
const KEYWORDS = ["deal", "money", "api key"];
const C = charter({ escalate_keywords: KEYWORDS }, LIMITS);
const ALLOWED = new Set([FRIEND, FRIEND2]);

/** Independent oracle for "the text holds an escalation word": tokenise, then look for the words and the phrase. */
function hasEscalationWord(text: string): boolean {
  const t = text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
  return t.some((w, i) => w === "deal" || w === "money" || (w === "api" && t[i + 1] === "key"));
}

const word = fc.constantFrom("hello", "ideal", "dealer", "moneyed", "apikey", "jazz", "keys", "tokens", "today", "friend");
const escWord = fc.tuple(fc.constantFrom("deal", "money", "api key", "api-key"), fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }), fc.constantFrom("", ".", "!", "?", ",")).map(
  ([w, caps, punct]) => Array.from(w).map((ch, i) => (caps[i % 8] ? ch.toUpperCase() : ch)).join("") + punct,
);
const text = fc.tuple(fc.array(word, { maxLength: 6 }), fc.option(fc.tuple(escWord, fc.nat()), { freq: 3 })).map(([ws, esc]) => {
  const out: string[] = [...ws];
  if (esc !== null) out.splice(esc[1] % (out.length + 1), 0, esc[0]);
  return out.join(" ");
});

type Cmd =
  | { kind: "dm"; sender: string; convo: string; msg: number | null; text: string; failSend: boolean }
  | { kind: "burst"; dms: Extract<Cmd, { kind: "dm" }>[] }
  | { kind: "advance"; ms: number }
  | { kind: "restart" };

const dmCmd = fc.record({
  kind: fc.constant("dm" as const),
  sender: fc.constantFrom(FRIEND, FRIEND, FRIEND2, STRANGER),
  convo: fc.constantFrom("c1", "c2", "c3"),
  msg: fc.option(fc.nat(40), { freq: 12 }),
  text,
  failSend: fc.constant(false), // set below: some ids fail to send
});
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 8, arbitrary: dmCmd.chain((d) => fc.boolean().map((f) => ({ ...d, failSend: f && d.msg !== null && d.msg % 7 === 0 }))) },
  { weight: 2, arbitrary: fc.array(dmCmd, { minLength: 2, maxLength: 6 }).map((dms) => ({ kind: "burst" as const, dms })) },
  { weight: 4, arbitrary: fc.constantFrom(0, 1_000, 30_000, 61_000, 600_000, 6 * 3600_000).map((ms) => ({ kind: "advance" as const, ms })) },
  { weight: 1, arbitrary: fc.constant({ kind: "restart" as const }) },
);

describe("Responder under random DM streams (property)", () => {
  it("never replies off the allowlist or to an escalation word, never passes a cap, never replies twice to one message, and every decision is in a chain that verifies", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 40 }), async (cmds) => {
        const dir = tmp("responder-prop-");
        const clock = new FakeClock(NOON - 2 * 3600_000);
        const kb = new FakeKb();
        const platform = new FakePlatform(clock);
        const composer = new EchoTagComposer();
        const loaded = { charter: C, sha256: "d".repeat(64), path: "(test)" };
        const boot = (): Booted => bootResponder({ dataDir: dir, loaded, kb, platform, composer, clock, ownSenderId: "bot-self" });
        let b = boot();
        const byTag = new Map<string, Dm>();
        const failing = new Set<string>();
        platform.failSend = (_c, t) => failing.has(/tag\d+/.exec(t)?.[0] ?? "");
        let handled = 0;
        let n = 0;
        const toDm = (d: Extract<Cmd, { kind: "dm" }>): Dm => {
          const tag = `tag${n++}`;
          const m: Dm = { senderId: d.sender, senderName: "x", conversationId: d.convo, messageId: d.msg === null ? null : `m${d.msg}`, text: `${d.text} ${tag}` };
          byTag.set(tag, m);
          if (d.failSend) failing.add(tag);
          return m;
        };
        for (const c of cmds) {
          if (c.kind === "dm") {
            handled++;
            await b.responder.handle(toDm(c));
          } else if (c.kind === "burst") {
            handled += c.dms.length;
            const outs: Promise<Outcome>[] = c.dms.map((d) => b.responder.handle(toDm(d)));
            await Promise.all(outs);
          } else if (c.kind === "advance") clock.advance(c.ms);
          else {
            await b.stop("SIGTERM");
            b = boot();
          }
        }
        await b.stop("SIGTERM");

        const perDay = new Map<string, number>();
        const perDayConvo = new Map<string, number>();
        const lastAt = new Map<string, number>();
        const repliedIds = new Set<string>();
        for (const s of platform.sent) {
          const d = byTag.get(/tag\d+/.exec(s.text)?.[0] ?? "");
          expect(d).toBeDefined();
          if (d === undefined) continue;
          expect(ALLOWED.has(d.senderId)).toBe(true);
          expect(hasEscalationWord(d.text)).toBe(false);
          expect(d.messageId).not.toBeNull();
          expect(repliedIds.has(d.messageId ?? "")).toBe(false);
          repliedIds.add(d.messageId ?? "");
          const day = utcDay(s.atMs);
          perDay.set(day, (perDay.get(day) ?? 0) + 1);
          perDayConvo.set(`${day}/${s.conversationId}`, (perDayConvo.get(`${day}/${s.conversationId}`) ?? 0) + 1);
          expect(perDay.get(day)).toBeLessThanOrEqual(LIMITS.max_replies_per_day);
          expect(perDayConvo.get(`${day}/${s.conversationId}`)).toBeLessThanOrEqual(LIMITS.max_replies_per_conversation_per_day);
          const last = lastAt.get(s.conversationId);
          if (last !== undefined) expect(s.atMs - last).toBeGreaterThanOrEqual(LIMITS.min_gap_seconds_per_conversation * 1000);
          lastAt.set(s.conversationId, s.atMs);
        }

        const path = join(dir, "audit.jsonl");
        expect(verifyAudit(path)).toMatchObject({ ok: true });
        const records = readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l) as AuditRecord);
        const terminal = records.filter((r) => r.action === "dropped" || r.action === "escalated" || r.action === "reply_sent");
        expect(terminal).toHaveLength(handled);
        expect(records.filter((r) => r.action === "reply_sent")).toHaveLength(platform.sent.length);
      }),
      { numRuns: 150 },
    );
  });
});
