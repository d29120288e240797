import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { beginSend, idempotencyKey, markSubmitted, mintMessageId, normaliseBody, reconcile, type Receipt, type SendIntent } from "../../../src/agents/mail/index.js";

const NOW = "2026-09-25T12:00:00Z";
const intent = (body: string, over: Partial<SendIntent> = {}): SendIntent => ({ account: "zoho", thread_id: "t:0123456789", domain: "spacechild.love", to: ["Vincent@Example.org"], body, ...over });

describe("body normalisation (M13)", () => {
  it.each([
    ["CRLF and trailing blanks", "Thanks,\r\nwill do.  \r\n\r\n\r\n", "Thanks,\nwill do."],
    ["inner runs of blanks and tabs", "a \t  b", "a b"],
    ["blank-line runs", "a\n\n\n\nb", "a\n\nb"],
    ["the quoted part", "Yes.\n\nOn Wed, Vincent wrote:\n> Can you?\n> Please?", "Yes."],
    ["indented quote lines", "Yes.\n  > quoted\nok", "Yes.\nok"],
    ["NFC", "Cafe\u0301", "Caf\u00e9"],
    ["URLs kept", "see https://example.org/a?b", "see https://example.org/a?b"],
  ])("%s", (_n, body, out) => {
    expect(normaliseBody(body)).toBe(out);
  });

  it("keeps case and punctuation: different words, different key", () => {
    expect(idempotencyKey("zoho", "t:1", "ok")).not.toBe(idempotencyKey("zoho", "t:1", "OK!"));
    expect(idempotencyKey("zoho", "t:1", "ok")).not.toBe(idempotencyKey("zoho", "t:2", "ok"));
    expect(idempotencyKey("a\nb", "c", "x")).not.toBe(idempotencyKey("a", "b\nc", "x"));
  });

  it("the key is stable under whitespace and quoting changes (property)", () => {
    const word = fc.stringMatching(/^[A-Za-z0-9,.!?']{1,8}$/);
    const line = fc.array(word, { minLength: 1, maxLength: 6 });
    const blank = fc.constantFrom(" ", "  ", "\t", " \t ");
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 5 }), blank, fc.boolean(), fc.nat(3), fc.array(word, { maxLength: 4 }), (lines, sep, crlf, extraBlankLines, quoted) => {
        const plain = lines.map((l) => l.join(" ")).join("\n");
        const nl = crlf ? "\r\n" : "\n";
        // Same words and line breaks; different blanks, line endings, surrounding blank lines and a quoted tail.
        let messy = nl.repeat(extraBlankLines) + lines.map((l) => `${sep}${l.join(sep)}${sep}`).join(nl) + nl.repeat(extraBlankLines);
        if (quoted.length > 0) messy += `${nl}On Wed, someone wrote:${nl}> ${quoted.join(" ")}${nl}`;
        const a = idempotencyKey("zoho", "t:1", plain);
        const b = idempotencyKey("zoho", "t:1", messy);
        expect(b).toBe(a);
      }),
    );
  });
});

describe("receipts", () => {
  it("mints the Message-ID from the key, so every retry carries the same id", () => {
    const r1 = beginSend([], intent("Thanks!"), NOW);
    const r2 = beginSend([], intent("Thanks!  \n"), "2026-09-26T00:00:00Z");
    expect(r1.ok && r2.ok && r1.receipt.message_id === r2.receipt.message_id).toBe(true);
    expect(r1.ok && r1.receipt.message_id).toMatch(/^<k\.[0-9a-f]{32}@spacechild\.love>$/);
    expect(() => mintMessageId(idempotencyKey("a", "b", "c"), "evil>\r\nBcc: x@y")).toThrow(/not a domain/);
  });

  it("writes a pending receipt before submission and refuses a retry with the same key", () => {
    const first = beginSend([], intent("I'll look at it today?"), NOW);
    expect(first).toMatchObject({ ok: true, receipt: { status: "pending", attempts: 1, to: ["vincent@example.org"], asks: true, created_at: NOW } });
    if (!first.ok) throw new Error("unreachable");
    for (const status of ["pending", "submitted", "delivered", "held"] as const) {
      const again = beginSend([{ ...first.receipt, status }], intent("I'll look at it today?\n\n"), NOW);
      expect(again).toMatchObject({ ok: false, refusal: { code: "duplicate-key", existing: { status } } });
    }
    expect(beginSend([first.receipt], intent("Something else."), NOW).ok).toBe(true);
  });

  it("marks a pending receipt submitted and leaves a delivered one alone", () => {
    const r = beginSend([], intent("x"), NOW);
    if (!r.ok) throw new Error("unreachable");
    expect(markSubmitted(r.receipt).status).toBe("submitted");
    expect(markSubmitted({ ...r.receipt, status: "delivered" }).status).toBe("delivered");
  });
});

describe("reconciliation against Sent (M14)", () => {
  const mk = (n: number, status: Receipt["status"], created_at = "2026-09-25T10:00:00Z", key = `k${n}`): Receipt => ({
    key: key as Receipt["key"],
    account: "zoho",
    thread_id: "t:1",
    message_id: `<m${n}@x>`,
    to: ["v@x.org"],
    asks: false,
    created_at,
    status,
    attempts: 1,
  });
  const opts = { now: NOW, minPendingAgeMs: 10 * 60_000, sentIsAuthoritative: true };

  it.each([
    ["pending, in Sent", mk(1, "pending"), true, opts, "delivered"],
    ["submitted, in Sent", mk(1, "submitted"), true, opts, "delivered"],
    ["delivered, in Sent", mk(1, "delivered"), true, opts, "unchanged"],
    ["pending, not in Sent, old: crashed before SMTP", mk(1, "pending"), false, opts, "resubmit"],
    ["pending, not in Sent, young: maybe in flight in another process", mk(1, "pending", "2026-09-25T11:55:00Z"), false, opts, "unchanged"],
    ["pending, not in Sent, server files no Sent copy", mk(1, "pending"), false, { ...opts, sentIsAuthoritative: false }, "hold"],
    ["submitted, not in Sent: SMTP accepted it, never again", mk(1, "submitted"), false, opts, "unchanged"],
    ["delivered, purged from Sent: never again", mk(1, "delivered"), false, opts, "unchanged"],
    ["held stays held", mk(1, "held"), false, opts, "unchanged"],
  ] as const)("%s -> %s", (_n, r, inSent, o, bucket) => {
    const out = reconcile([r], new Set(inSent ? [r.message_id] : []), o);
    const where = (["delivered", "resubmit", "unchanged"] as const).find((b) => out[b].length === 1) ?? (out.hold.length === 1 ? "hold" : "none");
    expect(where).toBe(bucket);
  });

  it("holds two receipts that share a key instead of sending both", () => {
    const out = reconcile([mk(1, "pending", undefined, "same"), mk(2, "pending", undefined, "same")], new Set(), opts);
    expect(out.resubmit).toEqual([]);
    expect(out.hold.map((h) => h.why)).toEqual(["two receipts share this key", "two receipts share this key"]);
  });

  it("a re-submission keeps its Message-ID and counts the attempt", () => {
    const out = reconcile([mk(1, "pending")], new Set(), opts);
    expect(out.resubmit).toMatchObject([{ message_id: "<m1@x>", attempts: 2 }]);
  });

  it("never yields a duplicate (property)", () => {
    const receiptArb = fc.record({
      n: fc.integer({ min: 0, max: 6 }),
      key: fc.integer({ min: 0, max: 4 }),
      status: fc.constantFrom<Receipt["status"]>("pending", "submitted", "delivered", "held"),
      ageMin: fc.integer({ min: 0, max: 60 }),
    });
    fc.assert(
      fc.property(fc.array(receiptArb, { maxLength: 12 }), fc.subarray([0, 1, 2, 3, 4, 5, 6]), fc.boolean(), (rs, sent, authoritative) => {
        const receipts = rs.map((r) => mk(r.n, r.status, new Date(Date.parse(NOW) - r.ageMin * 60_000).toISOString(), `k${r.key}`));
        const sentIds = new Set(sent.map((n) => `<m${n}@x>`));
        const out = reconcile(receipts, sentIds, { ...opts, sentIsAuthoritative: authoritative });
        // Every receipt lands in exactly one bucket.
        expect(out.delivered.length + out.resubmit.length + out.hold.length + out.unchanged.length).toBe(receipts.length);
        for (const r of out.resubmit) {
          // Never re-send what Sent already holds, what SMTP accepted, or a key with any other receipt.
          expect(sentIds.has(r.message_id)).toBe(false);
          expect(receipts.filter((x) => x.key === r.key)).toHaveLength(1);
        }
        expect(new Set(out.resubmit.map((r) => r.key)).size).toBe(out.resubmit.length);
        if (!authoritative) expect(out.resubmit).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });
});
