/**
 * A hash-chained, append-only JSONL audit log (ADR-0014 "every autonomous word is
 * attributable"). One JSON object per line:
 *
 *   {"ts":"<ISO-8601>","action":"...","detail":{...},"prev_hash":"<hex>","hash":"<hex>"}
 *
 * with `hash = sha256hex(prev_hash + "\n" + JSON.stringify({ts, action, detail}))`, keys in
 * exactly that order, compact JSON, and `""` as the first line's `prev_hash`: byte for byte
 * the original presence chain, so one verifier reads both. Line 1 of a file is a
 * `daemon_started` record carrying the charter's sha256.
 */
import { createHash } from "node:crypto";
import { closeSync, existsSync, fsyncSync, openSync, readSync, writeSync } from "node:fs";

/** The action that must open every audit file, and opens every boot. */
export const bootAction = "daemon_started";
/** Bound on one audit line in bytes; a longer line is refused on write and flagged on verify. */
export const maxAuditLineBytes = 64 * 1024;
const readChunkBytes = 64 * 1024;

export type AuditDetail = Record<string, unknown>;

export interface AuditRecord {
  readonly ts: string;
  readonly action: string;
  readonly detail: AuditDetail;
  readonly prev_hash: string;
  readonly hash: string;
}

/** Where an audit chain breaks: the 1-based line number and why. */
export type AuditBreak =
  | "not_json"
  | "bad_shape"
  | "prev_hash_mismatch"
  | "hash_mismatch"
  | "first_line_not_boot"
  | "empty_line"
  | "line_too_long"
  | "torn_tail"
  | "head_mismatch";

export type AuditVerdict =
  | { ok: true; lines: number; head: string }
  | { ok: false; line: number; reason: AuditBreak; message: string };

/** The chain hash of one record. */
export function chainHash(prevHash: string, ts: string, action: string, detail: AuditDetail): string {
  return createHash("sha256")
    .update(prevHash + "\n" + JSON.stringify({ ts, action, detail }))
    .digest("hex");
}

const hex64 = /^[0-9a-f]{64}$/;

function shapeOf(v: unknown): AuditRecord | null {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  const r = v as Record<string, unknown>;
  const keys = Object.keys(r);
  if (keys.length !== 5 || keys.join(",") !== "ts,action,detail,prev_hash,hash") return null;
  if (typeof r.ts !== "string" || typeof r.action !== "string" || typeof r.prev_hash !== "string" || typeof r.hash !== "string") return null;
  if (typeof r.detail !== "object" || r.detail === null || Array.isArray(r.detail)) return null;
  return r as unknown as AuditRecord;
}

/** Yield each line of a file (without its "\n") and whether it was newline-terminated, reading in bounded chunks. */
function* readLines(path: string): Generator<{ text: string; terminated: boolean; tooLong: boolean }> {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(readChunkBytes);
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      let start = 0;
      for (let i = 0; i < n; i++) {
        if (buf[i] !== 0x0a) continue;
        const part = buf.subarray(start, i);
        const tooLong = pendingBytes + part.length > maxAuditLineBytes;
        const text = tooLong ? "" : Buffer.concat([...pending, part]).toString("utf8");
        pending = [];
        pendingBytes = 0;
        start = i + 1;
        yield { text, terminated: true, tooLong };
      }
      if (start < n) {
        // Keep at most one line's bound of the unterminated remainder; the rest only counts.
        const rest = Buffer.from(buf.subarray(start, n));
        if (pendingBytes <= maxAuditLineBytes) pending.push(rest);
        pendingBytes += rest.length;
      }
    }
    if (pendingBytes > 0) {
      const tooLong = pendingBytes > maxAuditLineBytes;
      yield { text: tooLong ? "" : Buffer.concat(pending).toString("utf8"), terminated: false, tooLong };
    }
  } finally {
    closeSync(fd);
  }
}

export interface VerifyOptions {
  /**
   * The hash the last line must carry, from a record kept elsewhere. A hash chain alone
   * cannot see whole lines cut off its end; an anchor can.
   */
  expectedHead?: string;
  /** Called with each record that verified, in file order (used to rebuild state at boot). */
  onRecord?: (record: AuditRecord, line: number) => void;
}

/**
 * Check a whole audit file: every line parses, has the five keys in order, links to the
 * previous line's hash and hashes to its own `hash`; line 1 is a boot record with the
 * charter's sha256; the file ends with a newline. Returns the first broken line.
 *
 * @example verifyAudit("/var/lib/koinii/responder/audit.jsonl") // { ok: true, lines: 42, head: "9f…" }
 */
export function verifyAudit(path: string, options: VerifyOptions = {}): AuditVerdict {
  let prev = "";
  let line = 0;
  const broken = (reason: AuditBreak, message: string): AuditVerdict => ({ ok: false, line, reason, message });
  for (const l of readLines(path)) {
    line++;
    if (l.tooLong) return broken("line_too_long", `longer than ${maxAuditLineBytes} bytes`);
    if (!l.terminated) return broken("torn_tail", "the last line has no newline: a write was cut short or the file was truncated");
    if (l.text.length === 0) return broken("empty_line", "empty line");
    let parsed: unknown;
    try {
      parsed = JSON.parse(l.text);
    } catch {
      return broken("not_json", "not JSON");
    }
    const r = shapeOf(parsed);
    if (r === null) return broken("bad_shape", "not a {ts, action, detail, prev_hash, hash} record in that key order");
    if (r.prev_hash !== prev) return broken("prev_hash_mismatch", `prev_hash ${r.prev_hash.slice(0, 12)}… does not match line ${line - 1}'s hash`);
    if (chainHash(r.prev_hash, r.ts, r.action, r.detail) !== r.hash) return broken("hash_mismatch", "the record does not hash to its hash field");
    if (line === 1 && (r.action !== bootAction || typeof r.detail.charter_sha256 !== "string" || !hex64.test(r.detail.charter_sha256))) {
      return broken("first_line_not_boot", `line 1 must be a ${bootAction} record carrying charter_sha256`);
    }
    options.onRecord?.(r, line);
    prev = r.hash;
  }
  if (options.expectedHead !== undefined && options.expectedHead !== prev) {
    line++;
    return broken("head_mismatch", "the chain ends before the expected head: lines were cut off its end");
  }
  return { ok: true, lines: line, head: prev };
}

/** The audit file exists but its chain is broken; the responder refuses to append to it. */
export class AuditChainError extends Error {
  readonly code = "audit_chain_broken";
  constructor(readonly path: string, readonly verdict: Extract<AuditVerdict, { ok: false }>) {
    super(`audit chain ${path} is broken at line ${verdict.line}: ${verdict.reason} (${verdict.message})`);
    this.name = "AuditChainError";
  }
}

/** The port the responder writes its decisions to. */
export interface AuditSink {
  append(action: string, detail: AuditDetail, nowMs: number): AuditRecord;
}

/**
 * An open audit file. `open` verifies the existing chain first and refuses a broken one
 * (R7): appending to a broken chain would make the break look like later history.
 * Each `append` writes one whole line and fsyncs before returning.
 */
export class AuditLog implements AuditSink {
  private constructor(
    readonly path: string,
    private fd: number,
    private head: string,
    private lineCount: number,
  ) {}

  /**
   * Open (or create) `path`, verify it, and write the boot record. `onRecord` sees every
   * existing record, oldest first, before the boot record is written.
   *
   * @example const audit = AuditLog.open(p, { charter_version: 1, charter_sha256: sha }, Date.now());
   */
  static open(path: string, boot: AuditDetail & { charter_sha256: string }, nowMs: number, onRecord?: (r: AuditRecord) => void): AuditLog {
    let head = "";
    let lines = 0;
    if (existsSync(path)) {
      const v = verifyAudit(path, { onRecord: onRecord === undefined ? undefined : (r) => onRecord(r) });
      if (!v.ok) throw new AuditChainError(path, v);
      head = v.head;
      lines = v.lines;
    }
    const fd = openSync(path, "a", 0o640);
    const log = new AuditLog(path, fd, head, lines);
    log.append(bootAction, boot, nowMs);
    return log;
  }

  /** Hash of the last line: an anchor for `verifyAudit`'s `expectedHead`. */
  get headHash(): string {
    return this.head;
  }

  get lines(): number {
    return this.lineCount;
  }

  append(action: string, detail: AuditDetail, nowMs: number): AuditRecord {
    if (this.fd < 0) throw new Error(`audit log ${this.path} is closed`);
    const ts = new Date(nowMs).toISOString();
    // Round-trip detail through JSON so what is hashed is what a verifier will re-read.
    const d = JSON.parse(JSON.stringify(detail)) as AuditDetail;
    const hash = chainHash(this.head, ts, action, d);
    const record: AuditRecord = { ts, action, detail: d, prev_hash: this.head, hash };
    const line = Buffer.from(JSON.stringify(record) + "\n", "utf8");
    if (line.length > maxAuditLineBytes) throw new RangeError(`audit line of ${line.length} bytes exceeds ${maxAuditLineBytes}`);
    let off = 0;
    while (off < line.length) off += writeSync(this.fd, line, off, line.length - off);
    fsyncSync(this.fd);
    this.head = hash;
    this.lineCount++;
    return record;
  }

  close(): void {
    if (this.fd >= 0) {
      closeSync(this.fd);
      this.fd = -1;
    }
  }
}
