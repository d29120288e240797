/**
 * The mail agent's KB shapes (kbshape.ts, mailkb.ts) over the local medium with the real
 * contexts/ (CxMailActs's arities in force): refs round-trip, a changed ref is one edit of
 * removes + adds, closures and commitments round-trip, questions parse, and a commitment is
 * kept by the owing side's later message.
 */
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { join as joinChannel, local } from "../../../src/channel/index.js";
import { openKb } from "../../../src/kb/index.js";
import { keptByMailbox } from "../../../src/agents/mail/agent.js";
import { commitmentsFromMail, groupThreads, type Commitment } from "../../../src/agents/mail/index.js";
import { decodeCommitment, decodeRef, encodeClosure, decodeClosure, encodeCommitment, encodeRef, parseQuestion, REF_PREDICATES } from "../../../src/agents/mail/kbshape.js";
import { MailKb } from "../../../src/agents/mail/mailkb.js";
import { refId } from "../../../src/agents/mail/parse.js";
import { tempDir } from "../../daemon/helpers.js";
import { CTX, msg } from "./fixtures.js";

async function agentKb(): Promise<{ mk: MailKb; events: () => number }> {
  const kb = await openKb({ path: join(tempDir(), "kb.db"), contextsDir: join(process.cwd(), "contexts"), durability: "normal" });
  onTestFinished(() => kb.close());
  let n = 0;
  kb.onEvent(() => void (n += 1));
  const h = await joinChannel(local(kb), "CxMailbox", "AgentMail", { speaks: "CxMailActs" });
  return { mk: new MailKb(h), events: () => n };
}

const hostile = msg({
  id: "h1",
  from: '"Evil \\"Quote\\" ) (not X)" <evil@example.org>',
  subject: 'Re: "quoted" ) ( ; \\ é 🦊',
  body: "I'll send you the plan by Friday. sk-SECRET body words",
  flags: ["\\Seen", "$Label1"],
  extra: { "List-Id": "<list.example.org>", Precedence: "bulk" },
});

/** A person's promise, with a hostile subject (automated mail yields no commitments, so not `hostile`). */
const promise = msg({ id: "k1", subject: 'plan ) (not "x")', body: "I'll send you the plan by Friday. sk-SECRET body words" });

describe("MailRef <-> sentences", () => {
  it("a ref round-trips exactly (synced_at comes from the account's sync fact) and holds no body", () => {
    const s = encodeRef(hostile.ref, "t:0123456789");
    expect(s).toHaveLength(REF_PREDICATES.length);
    expect(s.join("\n")).not.toContain("sk-SECRET");
    expect(s.join("\n")).not.toContain("body words");
    const facts = new Map(s.map((x, i) => [REF_PREDICATES[i]!, x]));
    expect(decodeRef(facts, hostile.ref.synced_at)).toEqual({ ref: hostile.ref, threadId: "t:0123456789" });
  });

  it("closures and commitments round-trip", () => {
    const c = { account: "zoho", thread_id: "t:0123456789", note: 'done "elsewhere" )', covers_through: null, closed_at: "2026-09-25T00:00:00.000Z" };
    expect(decodeClosure(encodeClosure(c))).toEqual({ ...c });
    const [k] = commitmentsFromMail(promise, CTX, "t:0123456789").map((x): Commitment => ({ ...x, status: "kept", confirmed_by: { operator: "nick" }, closed_by: { ref: "zoho:Sent:9" } }));
    const e = encodeCommitment(k!);
    expect(decodeCommitment(e.record, e.status)).toEqual(k);
  });

  it("questions: open loops and owed-by parse; other heads are not ours; wrong shapes are malformed", () => {
    expect(parseQuestion("(mailOpenLoops Any)")).toEqual({ kind: "open-loops", who: null });
    expect(parseQuestion('(mailOwedBy Us "Vincent@Example.org")')).toEqual({ kind: "owed-by", side: "us", who: "vincent@example.org" });
    expect(parseQuestion("(mailOwedBy Them Any)")).toEqual({ kind: "owed-by", side: "them", who: null });
    expect(parseQuestion("(usesDatabase ?x)")).toBeNull();
    for (const bad of ["(mailOwedBy Everyone)", "(mailOwedBy Me Any)", "(mailOpenLoops 3)", "(mailOpenLoops)"]) expect(parseQuestion(bad)).toBe("malformed");
  });
});

describe("MailKb over a KB with CxMailActs", () => {
  it("writes refs (arities enforced), re-reads them equal; a flag change is ONE edit removing and adding only the changed fact", async () => {
    const { mk, events } = await agentKb();
    const refs = [msg({ id: "a1" }).ref, msg({ id: "a2", inReplyTo: "a1", role: "sent" }).ref, hostile.ref];
    const tid = new Map(groupThreads(refs).flatMap((t) => t.refs.map((r) => [refId(r), t.id] as const)));
    const at = "2026-09-25T10:00:00.000Z";
    const first = mk.diffRefs(await mk.readRefs(), refs.map((ref) => ({ ref, threadId: tid.get(refId(ref))! })), new Map([["zoho", at]]));
    expect(first).toMatchObject({ added: 3, changed: 0, removed: 0, unchanged: 0 });
    await mk.applyEdits(first.edits);
    const stored = await mk.readRefs();
    const norm = (r: (typeof refs)[number]) => ({ ...r, synced_at: at });
    expect(stored.refs.map(refId).sort()).toEqual(refs.map(refId).sort());
    for (const r of refs) expect(stored.refs.find((x) => refId(x) === refId(r))).toEqual(norm(r));

    const flagged = refs.map((r, i) => (i === 0 ? { ...r, flags: ["\\Answered"] } : r));
    const before = events();
    const diff = mk.diffRefs(stored, flagged.map((ref) => ({ ref, threadId: tid.get(refId(ref))! })), new Map());
    expect(diff).toMatchObject({ added: 0, changed: 1, removed: 0, unchanged: 2 });
    expect(diff.edits).toHaveLength(1);
    expect(diff.edits[0]!.add).toEqual([expect.stringMatching(/^\(mailFlags .*"\\\\Answered"\)\)$/)]);
    expect(diff.edits[0]!.remove).toHaveLength(1);
    await mk.applyEdits(diff.edits);
    expect(events() - before).toBe(1);
    expect((await mk.readRefs()).refs.find((x) => refId(x) === refId(refs[0]!))!.flags).toEqual(["\\Answered"]);

    // Gone from the server: all its facts go.
    const gone = mk.diffRefs(await mk.readRefs(), flagged.slice(1).map((ref) => ({ ref, threadId: tid.get(refId(ref))! })), new Map());
    expect(gone).toMatchObject({ removed: 1 });
    expect(gone.edits[0]!.remove).toHaveLength(REF_PREDICATES.length);
  });

  it("commitments: written as record + status, a transition replaces the status fact", async () => {
    const { mk } = await agentKb();
    const cs = commitmentsFromMail(promise, CTX, "t:0123456789");
    expect(cs).toHaveLength(1);
    await mk.writeCommitments(cs, [], new Map());
    const read = await mk.readCommitments();
    expect(read.commitments).toEqual(cs);
    await mk.writeCommitments([], [{ ...cs[0]!, status: "closed", closed_by: { note: "n" } }], read.statusHandles);
    const again = await mk.readCommitments();
    expect(again.commitments.map((c) => c.status)).toEqual(["closed"]);
  });
});

describe("keptByMailbox: the owing side's later message keeps a commitment", () => {
  const theirs = msg({ id: "p1", body: "I'll send you the report by Friday." });
  const ours = msg({ id: "p2", inReplyTo: "p1", role: "sent", date: "Thu, 24 Sep 2026 10:00:00 +0000", body: "Thanks!" });
  const theirsAgain = msg({ id: "p3", inReplyTo: "p2", date: "Fri, 25 Sep 2026 10:00:00 +0000", body: "Here it is." });

  it("our reply does not keep what they owe; their next message does; a proposal leaves proposed only that way", () => {
    const t1 = groupThreads([theirs.ref, ours.ref]);
    const cs = commitmentsFromMail(theirs, CTX, t1[0]!.id);
    expect(cs.map((c) => c.who_owes)).toEqual(["them"]);
    expect(keptByMailbox(cs, t1, CTX)).toEqual([]);
    const t2 = groupThreads([theirs.ref, ours.ref, theirsAgain.ref]);
    const kept = keptByMailbox(cs, t2, CTX);
    expect(kept).toMatchObject([{ status: "kept", closed_by: { ref: refId(theirsAgain.ref) } }]);
    const proposal: Commitment = { ...cs[0]!, status: "proposed", origin: "model" };
    expect(keptByMailbox([proposal], t1, CTX)).toEqual([]);
    expect(keptByMailbox([proposal], t2, CTX)).toMatchObject([{ status: "kept", confirmed_by: { ref: refId(theirsAgain.ref) } }]);
  });
});
