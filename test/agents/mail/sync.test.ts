import { describe, expect, it } from "vitest";
import { parseFetched, refreshFlags, replaceAccountRefs } from "../../../src/agents/mail/index.js";
import { meta, msg, rawMail } from "./fixtures.js";

describe("sync helpers", () => {
  it("parses a fetched batch into refs", () => {
    const { parsed, failures } = parseFetched([
      { raw: rawMail({ From: "a@b.org", "Message-ID": "<1@b>" }, "x"), meta: meta() },
      { raw: new TextEncoder().encode(rawMail({ From: "c@d.org", "Message-ID": "<2@d>" }, "y")), meta: meta() },
    ]);
    expect(parsed.map((p) => p.ref.message_id)).toEqual(["<1@b>", "<2@d>"]);
    expect(failures).toEqual([]);
  });

  it("a successful account's refs replace its old ones; a failed account keeps them", () => {
    const old = [msg({ id: "gone" }).ref, msg({ id: "np1", account: "np" }).ref];
    const fresh = [msg({ id: "new" }).ref];
    expect(replaceAccountRefs(old, "zoho", fresh).map((r) => r.message_id)).toEqual(["<np1@test>", "<new@test>"]);
    expect(replaceAccountRefs(old, "zoho", null)).toEqual(old);
  });

  it("refreshes only the flags of a known ref", () => {
    const r = msg({ id: "a" }).ref;
    expect(refreshFlags(r, ["\\Answered"], "2026-09-26T00:00:00Z")).toEqual({ ...r, flags: ["\\Answered"], synced_at: "2026-09-26T00:00:00Z" });
  });
});
