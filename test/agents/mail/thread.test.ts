import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { groupThreads, threadId, type MailRef } from "../../../src/agents/mail/index.js";
import { msg, type MsgSpec } from "./fixtures.js";

const at = (h: number) => `Wed, 23 Sep 2026 ${String(h).padStart(2, "0")}:00:00 +0000`;
const refs = (specs: MsgSpec[]) => specs.map((s) => msg(s).ref);
const shape = (rs: MailRef[]) => groupThreads(rs).map((t) => ({ id: t.id, members: t.refs.map((r) => r.message_id) }));

describe("threads", () => {
  it("joins by In-Reply-To and by References, even through a message we never saw", () => {
    const ts = groupThreads(refs([
      { id: "a", date: at(1) },
      { id: "b", inReplyTo: "a", date: at(2), role: "sent" },
      { id: "c", references: "missing b", date: at(3) },
      { id: "d", references: "missing", date: at(4) },
      { id: "x", date: at(5) },
    ]));
    expect(ts.map((t) => t.refs.map((r) => r.message_id))).toEqual([["<x@test>"], ["<a@test>", "<b@test>", "<c@test>", "<d@test>"]]);
  });

  it.each([
    ["its first References id", [{ id: "a", references: "root a0", inReplyTo: "a0", date: at(1) }], "<root@test>"],
    ["its In-Reply-To", [{ id: "a", inReplyTo: "p", date: at(1) }], "<p@test>"],
    ["its Message-ID", [{ id: "a", date: at(1) }, { id: "b", inReplyTo: "a", date: at(2) }], "<a@test>"],
  ] as [string, MsgSpec[], string][])("the key is the earliest message's %s", (_n, specs, key) => {
    const [t] = groupThreads(refs(specs));
    expect(t.key).toBe(key);
    expect(t.id).toBe(threadId("zoho", key));
    expect(t.id).toMatch(/^t:[0-9a-f]{10}$/);
  });

  it("the key falls back to the server id without a Message-ID", () => {
    const r = { ...msg({ id: "a" }).ref, message_id: null };
    expect(groupThreads([r])[0].key).toBe(r.server_id);
  });

  it("keeps the same Message-ID in two accounts as two threads", () => {
    expect(groupThreads(refs([{ id: "a" }, { id: "a", account: "np" }]))).toHaveLength(2);
  });

  it("does not group by subject (M7)", () => {
    expect(groupThreads(refs([{ id: "a", subject: "Hello" }, { id: "b", subject: "Re: Hello" }]))).toHaveLength(2);
  });

  it("orders members by date (missing first), INBOX before Sent on a tie", () => {
    const noDate = { ...msg({ id: "n", inReplyTo: "a" }).ref, date: null };
    const [t] = groupThreads([...refs([{ id: "s", role: "sent", inReplyTo: "a", date: at(1) }, { id: "a", date: at(1) }]), noDate]);
    expect(t.refs.map((r) => r.message_id)).toEqual(["<n@test>", "<a@test>", "<s@test>"]);
  });

  it("orders threads newest first", () => {
    expect(groupThreads(refs([{ id: "old", date: at(1) }, { id: "new", date: at(9) }])).map((t) => t.key)).toEqual(["<new@test>", "<old@test>"]);
  });

  it("is independent of arrival order (property)", () => {
    const pool: MsgSpec[] = [
      { id: "a", date: at(1) },
      { id: "b", inReplyTo: "a", references: "a", date: at(2), role: "sent" },
      { id: "c", inReplyTo: "b", references: "a b", date: at(3) },
      { id: "d", references: "zz", date: at(2) },
      { id: "e", inReplyTo: "zz", date: at(4) },
      { id: "f", date: at(1) },
      { id: "g", inReplyTo: "f", date: at(1), role: "sent" },
      { id: "a", date: at(1), account: "np" },
      { id: "h", inReplyTo: "c", date: at(5) },
    ];
    const all = refs(pool);
    fc.assert(
      fc.property(fc.subarray(all, { minLength: 1 }).chain((sub) => fc.tuple(fc.constant(sub), fc.shuffledSubarray(sub, { minLength: sub.length, maxLength: sub.length }))), ([sub, shuffled]) => {
        expect(shape(shuffled)).toEqual(shape(sub));
      }),
    );
  });
});
