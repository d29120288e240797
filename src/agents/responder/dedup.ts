/**
 * The persisted set of message ids the responder has finished with: replied to or
 * escalated (R8). Append-only: each id is one JSON string per line, fsynced before `add`
 * returns; when the file holds more than twice `maxIds` lines it is rewritten with the
 * newest `maxIds` (write a temp file, fsync, rename, fsync the directory), so a crash at
 * any point leaves either the old file or the new one.
 */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";

/** Default number of ids remembered (the original kept 500 replied ids; this keeps escalations too). */
export const defaultMaxIds = 50_000;

export class DedupStore {
  private readonly ids = new Set<string>();
  private fd: number;
  private linesInFile = 0;

  private constructor(
    readonly path: string,
    readonly maxIds: number,
  ) {
    this.fd = -1;
  }

  /**
   * Open (or create) the store at `path`. A torn last line (a crash mid-append) is
   * ignored: the write it belonged to never returned, so nothing was sent after it.
   *
   * @example const seen = DedupStore.open("/var/lib/koinii/responder/processed.jsonl");
   */
  static open(path: string, maxIds: number = defaultMaxIds): DedupStore {
    if (!Number.isInteger(maxIds) || maxIds < 1) throw new RangeError(`maxIds must be a positive integer, got ${maxIds}`);
    const store = new DedupStore(path, maxIds);
    let tornTail = false;
    if (existsSync(path)) {
      const text = readFileSync(path, "utf8");
      const lines = text.split("\n");
      const last = lines.pop();
      tornTail = last !== undefined && last.length > 0;
      for (const l of lines) {
        const id = parseLine(l);
        if (id !== null) {
          store.ids.delete(id); // re-insert so Set order stays "most recent last"
          store.ids.add(id);
        }
        store.linesInFile++;
      }
    }
    store.fd = openSync(path, "a", 0o640);
    if (tornTail) {
      writeSync(store.fd, "\n");
      fsyncSync(store.fd);
      store.linesInFile++;
    }
    store.trimMemory();
    if (store.linesInFile > 2 * maxIds) store.compact();
    return store;
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  get size(): number {
    return this.ids.size;
  }

  /** Record `id` durably. Returns only after the line is fsynced. */
  add(id: string): void {
    if (this.fd < 0) throw new Error(`dedup store ${this.path} is closed`);
    if (this.ids.has(id)) return;
    const line = Buffer.from(JSON.stringify(id) + "\n", "utf8");
    let off = 0;
    while (off < line.length) off += writeSync(this.fd, line, off, line.length - off);
    fsyncSync(this.fd);
    this.ids.add(id);
    this.linesInFile++;
    this.trimMemory();
    if (this.linesInFile > 2 * this.maxIds) this.compact();
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  private trimMemory(): void {
    for (const id of this.ids) {
      if (this.ids.size <= this.maxIds) break;
      this.ids.delete(id);
    }
  }

  /** Rewrite the file with the ids in memory: temp file, fsync, rename, fsync the directory. */
  private compact(): void {
    const tmp = `${this.path}.tmp`;
    const tfd = openSync(tmp, "w", 0o640);
    try {
      const body = Buffer.from([...this.ids].map((id) => JSON.stringify(id) + "\n").join(""), "utf8");
      let off = 0;
      while (off < body.length) off += writeSync(tfd, body, off, body.length - off);
      fsyncSync(tfd);
    } finally {
      closeSync(tfd);
    }
    renameSync(tmp, this.path);
    const dfd = openSync(dirname(this.path), "r");
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
    closeSync(this.fd);
    this.fd = openSync(this.path, "a", 0o640);
    this.linesInFile = this.ids.size;
  }
}

function parseLine(line: string): string | null {
  if (line.length === 0) return null;
  try {
    const v: unknown = JSON.parse(line);
    return typeof v === "string" ? v : null;
  } catch {
    return null;
  }
}
