import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  STATE_RULES,
  closeThread,
  commitmentsFromMail,
  groupThreads,
  sortStatuses,
  summaryLine,
  threadStatus,
  type Closure,
  type Commitment,
  type Receipt,
  type Thread,
  type ThreadStatus,
} from "../../../src/agents/mail/index.js";
import { CTX, OURS, msg, type MsgSpec } from "./fixtures.js";
import { CASES, NOW, at, closedAt, commitment, inputOf, iso, oneThread, ourQ, ourS, promisedOf, receipt, theirQ } from "./state-cases.js";


describe("thread state: one row per rule situation (first match wins)", () => {
  it.each(CASES.map((c) => [c.name, c] as const))("%s", (_name, c) => {
    const thread = oneThread(c.msgs);
    const s = threadStatus(inputOf(c, thread));
    expect([s.state, s.rule]).toEqual([c.state, c.rule]);
    if (c.reason) expect(s.reason).toMatch(c.reason);
    expect(promisedOf(s)).toEqual(c.promised ?? []);
  });

  it("every rule of the table is exercised by some row above", () => {
    const used = new Set(CASES.map((c) => c.rule));
    expect(STATE_RULES.map((r) => r.id).filter((id) => !used.has(id))).toEqual([]);
  });
});

describe("the 09-25 cases", () => {
  it("'Help if possible' sat open for three days; a close with a note makes it done and says why", () => {
    const thread = oneThread([{ id: "help", from: "Nick <nick@example.org>", subject: "Help if possible", date: "Mon, 21 Sep 2026 03:24:45 +0000", body: "Five steps to deploy. Can you do them?" }]);
    const input = { thread, ctx: CTX, now: NOW };
    expect(threadStatus(input).state).toBe("needs_reply");
    expect(() => closeThread(input, "  ", NOW)).toThrow(/note is required/);
    const closure = closeThread(input, "deployed by another session on 09-23", NOW);
    expect(closure.covers_through).toBe("2026-09-21T03:24:45Z");
    expect(threadStatus({ ...input, closures: [closure] })).toMatchObject({ state: "done", reason: "closed: deployed by another session on 09-23" });
  });

  it("'I'll send a plan' in our sent mail is owed by us, found by rules, and listed beside the answered thread", () => {
    const specs: MsgSpec[] = [
      { id: "v1", from: "Victor <victor@example.org>", date: at(9), body: "Could you outline how the migration would go?" },
      { id: "v2", role: "sent", to: "Victor <victor@example.org>", inReplyTo: "v1", date: at(10), body: "Good idea. I'll send a plan by Friday." },
    ];
    const parsed = specs.map(msg);
    const thread = groupThreads(parsed.map((p) => p.ref))[0];
    const cs = parsed.flatMap((p) => commitmentsFromMail(p, CTX, thread.id));
    expect(cs).toMatchObject([{ who_owes: "us", what: "send a plan by Friday", due: "2026-09-25", counterpart: "victor@example.org", status: "open" }]);
    expect(threadStatus({ thread, ctx: CTX, commitments: cs, now: NOW })).toMatchObject({
      state: "done",
      rule: "ours-said",
      counterpart: ["victor@example.org"],
      promised: [{ who_owes: "us", what: "send a plan by Friday", due: "2026-09-25", status: "open" }],
    });
  });
});

describe("status output", () => {
  it("sorts by state order then newest first, and counts per state", () => {
    const mk = (id: string, state: ThreadStatus["state"], age: number): ThreadStatus => ({ thread_id: id, account: "zoho", state, rule: "", reason: "", focus: null, counterpart: [], subject: "", age_days: age, promised: [] });
    const rows = sortStatuses([mk("t:1", "done", 1), mk("t:2", "needs_reply", 5), mk("t:3", "needs_reply", 0.5), mk("t:4", "ignored", 0), mk("t:5", "waiting_on_them", 2)]);
    expect(rows.map((r) => r.thread_id)).toEqual(["t:3", "t:2", "t:5", "t:1", "t:4"]);
    expect(summaryLine(rows)).toBe("5 threads: needs_reply 2 · waiting_on_them 1 · done 1 · ignored 1");
  });

  it("reports age in days to 0.1 and the counterpart", () => {
    const s = threadStatus({ thread: oneThread([theirQ]), ctx: CTX, now: NOW });
    expect(s.age_days).toBe(2.1);
    expect(s.counterpart).toEqual(["vincent@example.org"]);
  });
});

/** The reference's P0 rules written out plainly, as an oracle for the reordered table. */
function p0(specs: MsgSpec[], ours: Set<string>): string {
  const person = specs.filter((s) => !s.extra);
  if (person.length === 0) return "ignored";
  const focus = person.at(-1)!;
  const own = (focus.body ?? "").trim();
  if (focus.role === "sent") return own.includes("?") ? "waiting_on_them" : "done";
  if (focus.flags?.includes("\\Answered")) return "done";
  if (/^fyi/i.test(own)) return "done";
  if (focus.inReplyTo && ours.has(focus.inReplyTo) && !own.includes("?") && own.length <= 80) return "done";
  return "needs_reply";
}

describe("P0 parity", () => {
  it("without commitments or receipts the table gives the reference's P0 state", () => {
    const spec = fc.record({
      sent: fc.boolean(),
      auto: fc.boolean(),
      answered: fc.boolean(),
      body: fc.constantFrom("ok", "thanks!", "fyi the build is green", "FYI, what now?", "Can you?", "Done.", "x".repeat(81), "Where?"),
      replyToPrev: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(spec, { minLength: 1, maxLength: 6 }), (items) => {
        const specs: MsgSpec[] = items.map((it, i) => ({
          id: `m${i}`,
          role: it.sent ? "sent" : "inbox",
          date: at(i + 1),
          body: it.body,
          flags: it.answered && !it.sent ? ["\\Answered"] : [],
          extra: it.auto ? { "Auto-Submitted": "auto-generated" } : undefined,
          references: i > 0 ? "m0" : undefined,
          inReplyTo: i > 0 ? (it.replyToPrev ? `m${i - 1}` : "m0") : undefined,
        }));
        const ours = new Set(specs.filter((s) => s.role === "sent").map((s) => s.id));
        const thread = oneThread(specs);
        expect(threadStatus({ thread, ctx: CTX, now: NOW }).state).toBe(p0(specs, ours));
      }),
      { numRuns: 300 },
    );
  });
});
