import { createHash } from "node:crypto";
import { appendFileSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AuditChainError, AuditLog, chainHash, verifyAudit } from "../../../src/agents/responder/index.js";
import { NOON, tmp } from "./helpers.js";

const SHA = "a".repeat(64);

/** A chain of 1 boot + n records; returns the path and its lines. */
function chain(n: number): { path: string; lines: string[] } {
  const path = join(tmp(), "audit.jsonl");
  const log = AuditLog.open(path, { charter_version: 1, charter_sha256: SHA }, NOON);
  for (let i = 0; i < n; i++) log.append(i % 2 ? "escalated" : "reply_sending", { i, reason: `r${i}`, preview: "ünïcödé \"q\" \n" }, NOON + i);
  log.close();
  return { path, lines: readFileSync(path, "utf8").split("\n").slice(0, -1) };
}
const write = (path: string, lines: string[], trailingNewline = true) => writeFileSync(path, lines.join("\n") + (trailingNewline ? "\n" : ""));

describe("audit chain", () => {
  it("an intact chain verifies and reports its length and head", () => {
    const { path, lines } = chain(5);
    const v = verifyAudit(path);
    expect(v).toEqual({ ok: true, lines: 6, head: JSON.parse(lines[5]).hash });
  });

  it("is byte-compatible with the original: sha256(prev + \\n + compact {ts, action, detail}), genesis ''", () => {
    const { lines } = chain(1);
    const first = JSON.parse(lines[0]);
    expect(Object.keys(first)).toEqual(["ts", "action", "detail", "prev_hash", "hash"]);
    expect(first.prev_hash).toBe("");
    const want = createHash("sha256").update("\n" + JSON.stringify({ ts: first.ts, action: first.action, detail: first.detail })).digest("hex");
    expect(first.hash).toBe(want);
    expect(chainHash(first.prev_hash, first.ts, first.action, first.detail)).toBe(want);
    expect(JSON.parse(lines[1]).prev_hash).toBe(first.hash);
    expect(first.action).toBe("daemon_started");
    expect(first.detail.charter_sha256).toBe(SHA);
  });

  it("editing any line fails at that line", () => {
    const { path, lines } = chain(5);
    for (let i = 0; i < lines.length; i++) {
      const edited = [...lines];
      const r = JSON.parse(lines[i]);
      r.detail = { ...r.detail, tampered: true };
      edited[i] = JSON.stringify(r);
      write(path, edited);
      expect(verifyAudit(path)).toMatchObject({ ok: false, line: i + 1, reason: "hash_mismatch" });
    }
  });

  it("an edit that recomputes its own hash fails at the next line", () => {
    const { path, lines } = chain(4);
    const r = JSON.parse(lines[2]);
    r.detail = { forged: true };
    r.hash = chainHash(r.prev_hash, r.ts, r.action, r.detail);
    write(path, [...lines.slice(0, 2), JSON.stringify(r), ...lines.slice(3)]);
    expect(verifyAudit(path)).toMatchObject({ ok: false, line: 4, reason: "prev_hash_mismatch" });
  });

  it("deleting any line but the last fails at the line that took its place", () => {
    const { path, lines } = chain(5);
    for (let i = 0; i < lines.length - 1; i++) {
      write(path, lines.filter((_, j) => j !== i));
      expect(verifyAudit(path)).toMatchObject({ ok: false, line: i + 1, reason: "prev_hash_mismatch" });
    }
  });

  it("deleting the last line is caught only against a head anchor kept elsewhere", () => {
    const { path, lines } = chain(3);
    const head = JSON.parse(lines[3]).hash;
    write(path, lines.slice(0, 3));
    expect(verifyAudit(path).ok).toBe(true);
    expect(verifyAudit(path, { expectedHead: head })).toMatchObject({ ok: false, line: 4, reason: "head_mismatch" });
  });

  it("swapping two adjacent lines fails at the first of them", () => {
    const { path, lines } = chain(5);
    for (let i = 1; i < lines.length - 1; i++) {
      const swapped = [...lines];
      [swapped[i], swapped[i + 1]] = [swapped[i + 1], swapped[i]];
      write(path, swapped);
      expect(verifyAudit(path)).toMatchObject({ ok: false, line: i + 1, reason: "prev_hash_mismatch" });
    }
  });

  it("truncating mid-line fails at the cut line", () => {
    const { path, lines } = chain(3);
    const full = readFileSync(path);
    const cutAt = lines.slice(0, 2).join("\n").length + 1 + 10; // 10 bytes into line 3
    for (const at of [cutAt, full.length - 1]) {
      writeFileSync(path, full);
      truncateSync(path, at);
      expect(verifyAudit(path)).toMatchObject({ ok: false, line: at === cutAt ? 3 : 4, reason: "torn_tail" });
    }
  });

  it("line 1 must be a boot record with a charter sha256", () => {
    const path = join(tmp(), "a.jsonl");
    const hash = chainHash("", NOON.toString(), "escalated", {});
    write(path, [JSON.stringify({ ts: NOON.toString(), action: "escalated", detail: {}, prev_hash: "", hash })]);
    expect(verifyAudit(path)).toMatchObject({ ok: false, line: 1, reason: "first_line_not_boot" });
  });

  it.each([
    ["garbage", "not json", "not_json"],
    ["an empty line", "", "empty_line"],
    ["missing keys", JSON.stringify({ ts: "x", action: "y" }), "bad_shape"],
    ["keys reordered", '{"action":"y","ts":"x","detail":{},"prev_hash":"","hash":""}', "bad_shape"],
  ])("%s in the middle is named", (_n, bad, reason) => {
    const { path, lines } = chain(3);
    write(path, [...lines.slice(0, 2), bad, ...lines.slice(2)]);
    expect(verifyAudit(path)).toMatchObject({ ok: false, line: 3, reason });
  });

  it("reopening continues the chain after a new boot record", () => {
    const { path } = chain(2);
    const seen: string[] = [];
    const log = AuditLog.open(path, { charter_sha256: SHA }, NOON + 100, (r) => seen.push(r.action));
    log.append("reply_sent", { x: 1 }, NOON + 101);
    log.close();
    expect(seen).toEqual(["daemon_started", "reply_sending", "escalated"]);
    expect(verifyAudit(path)).toMatchObject({ ok: true, lines: 5 });
  });

  it("refuses to open (and append to) a broken chain", () => {
    const { path, lines } = chain(2);
    write(path, [lines[0], lines[2]]);
    const before = readFileSync(path, "utf8");
    expect(() => AuditLog.open(path, { charter_sha256: SHA }, NOON)).toThrow(AuditChainError);
    expect(readFileSync(path, "utf8")).toBe(before);
  });

  it("refuses a torn tail rather than gluing the next record onto it", () => {
    const { path } = chain(1);
    appendFileSync(path, '{"ts":"2026');
    expect(() => AuditLog.open(path, { charter_sha256: SHA }, NOON)).toThrow(/line 3: torn_tail/);
  });

  it("what is hashed is what a verifier re-reads (undefined, -0 and Dates normalise through JSON)", () => {
    const path = join(tmp(), "a.jsonl");
    const log = AuditLog.open(path, { charter_sha256: SHA }, NOON);
    log.append("x", { a: undefined, b: -0, c: new Date(NOON), d: [1, undefined] }, NOON);
    log.close();
    expect(verifyAudit(path).ok).toBe(true);
  });
});
