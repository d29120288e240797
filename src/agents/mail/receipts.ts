/**
 * The receipt table (M15, M21): one SQLite file through better-sqlite3, WAL, synchronous
 * FULL, so a row that `insert` returned from is on disk before any byte goes to SMTP. The
 * key is the primary key: two processes racing past `beginSend` cannot both insert (the
 * loser gets `duplicate-key`), which closes the core's open question 5.
 *
 * Besides the core's Receipt the row keeps the rendered message (our own outgoing text, not
 * theirs) until the receipt is delivered, because a re-submission after a crash must send
 * the same bytes with the same pre-minted Message-ID.
 */
import Database from "better-sqlite3";
import type { IdempotencyKey, Receipt, ReceiptStatus } from "./idempotency.js";

export interface StoredReceipt extends Receipt {
  /** The rendered RFC 5322 message; null once delivered. */
  message: string | null;
}

interface Row {
  key: string;
  account: string;
  thread_id: string;
  message_id: string;
  to_json: string;
  asks: number;
  created_at: string;
  status: string;
  attempts: number;
  message: string | null;
}

const fromRow = (r: Row): StoredReceipt => ({
  key: r.key as IdempotencyKey,
  account: r.account,
  thread_id: r.thread_id,
  message_id: r.message_id,
  to: JSON.parse(r.to_json) as string[],
  asks: r.asks === 1,
  created_at: r.created_at,
  status: r.status as ReceiptStatus,
  attempts: r.attempts,
  message: r.message,
});

export type InsertResult = { ok: true } | { ok: false; code: "duplicate-key"; existing: StoredReceipt };

export class ReceiptStore {
  readonly #db: Database.Database;

  constructor(path: string) {
    this.#db = new Database(path);
    this.#db.pragma("journal_mode = WAL");
    this.#db.pragma("synchronous = FULL");
    this.#db.pragma("busy_timeout = 5000");
    this.#db.exec(`CREATE TABLE IF NOT EXISTS receipts (
      key TEXT PRIMARY KEY,
      account TEXT NOT NULL,
      thread_id TEXT NOT NULL,
      message_id TEXT NOT NULL UNIQUE,
      to_json TEXT NOT NULL,
      asks INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('pending','submitted','delivered','held')),
      attempts INTEGER NOT NULL,
      message TEXT
    )`);
  }

  all(account?: string): StoredReceipt[] {
    const rows = account === undefined ? this.#db.prepare("SELECT * FROM receipts ORDER BY created_at, key").all() : this.#db.prepare("SELECT * FROM receipts WHERE account = ? ORDER BY created_at, key").all(account);
    return (rows as Row[]).map(fromRow);
  }

  get(key: string): StoredReceipt | null {
    const row = this.#db.prepare("SELECT * FROM receipts WHERE key = ?").get(key) as Row | undefined;
    return row ? fromRow(row) : null;
  }

  /** Durable on return (synchronous FULL). A second row with the same key is refused. */
  insert(r: Receipt, message: string): InsertResult {
    try {
      this.#db
        .prepare("INSERT INTO receipts (key, account, thread_id, message_id, to_json, asks, created_at, status, attempts, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .run(r.key, r.account, r.thread_id, r.message_id, JSON.stringify(r.to), r.asks ? 1 : 0, r.created_at, r.status, r.attempts, message);
      return { ok: true };
    } catch (e) {
      if ((e as { code?: string }).code?.startsWith("SQLITE_CONSTRAINT")) return { ok: false, code: "duplicate-key", existing: this.get(r.key)! };
      throw e;
    }
  }

  /** Status and attempts of an existing row; the message is dropped once delivered. */
  update(r: Receipt): void {
    this.#db
      .prepare("UPDATE receipts SET status = ?, attempts = ?, message = CASE WHEN ? = 'delivered' THEN NULL ELSE message END WHERE key = ?")
      .run(r.status, r.attempts, r.status, r.key);
  }

  close(): void {
    this.#db.close();
  }
}
