/**
 * What a transport hands back, turned into refs (reference §2.3 "Sync"). The IMAP and JMAP
 * clients are thin layers that fetch raw messages and flags and call these.
 */
import { parseMessage, type FetchMeta, type MailRef, type ParsedMail } from "./parse.js";
import type { AccountSyncResult, FolderReport } from "./imap.js";
import { ProgressMeter, type ProgressSink } from "../../kb/progress.js";

export interface FetchedMessage {
  raw: string | Uint8Array;
  meta: FetchMeta;
}

export interface SyncBatch {
  parsed: ParsedMail[];
  /** A message that could not be parsed is reported, never dropped silently. */
  failures: { account: string; server_id: string; error: string }[];
}

/**
 * Parse a batch of fetched messages.
 *
 * @example const { parsed, failures } = parseFetched(fetched); const refs = parsed.map((p) => p.ref)
 */
export function parseFetched(items: readonly FetchedMessage[]): SyncBatch {
  const out: SyncBatch = { parsed: [], failures: [] };
  for (const { raw, meta } of items) {
    try {
      out.parsed.push(parseMessage(raw, meta));
    } catch (e) {
      out.failures.push({ account: meta.account, server_id: meta.server_id, error: (e as Error).message });
    }
  }
  return out;
}

/** A known ref whose body was not fetched again: only its flags are refreshed. */
export function refreshFlags(ref: MailRef, flags: readonly string[], syncedAt: string): MailRef {
  return { ...ref, flags: [...flags], synced_at: syncedAt };
}

/**
 * The store after one account's sync: a successful account's refs replace its old ones
 * wholesale (the server is the record, so a purged message disappears); a failed account
 * (`fresh` null) keeps its previous refs.
 */
export function replaceAccountRefs(old: readonly MailRef[], account: string, fresh: readonly MailRef[] | null): MailRef[] {
  if (fresh === null) return [...old];
  return [...old.filter((r) => r.account !== account), ...fresh.filter((r) => r.account === account)];
}

/**
 * What one account's sync gathers, the same for IMAP and JMAP: refs reused from the
 * previous sync (flags refreshed) or parsed anew, parse failures, warnings, per-folder
 * reports and the Sent folder's Message-IDs (for `reconcile`).
 */
export class AccountCollector {
  readonly refs: MailRef[] = [];
  readonly parsed: ParsedMail[] = [];
  readonly failures: SyncBatch["failures"] = [];
  readonly warnings: string[] = [];
  readonly folders: FolderReport[] = [];
  readonly sentMessageIds = new Set<string>();
  private readonly known: Map<string, MailRef>;
  private readonly meter: ProgressMeter;

  constructor(
    readonly account: string,
    previous: readonly MailRef[],
    private readonly log: (line: string) => void,
    progress?: ProgressSink,
  ) {
    this.meter = new ProgressMeter(`syncing ${account}`, "messages", progress);
    this.known = new Map(previous.filter((r) => r.account === account).map((r) => [`${r.folder}\u0000${r.server_id}`, r]));
  }

  warn(line: string): void {
    this.warnings.push(line);
    this.log(line);
  }

  /** The previous sync's ref for this message, with its flags refreshed, if there was one. */
  reuse(folder: string, serverId: string, flags: readonly string[], syncedAt: string): boolean {
    const old = this.known.get(`${folder}\u0000${serverId}`);
    if (old) {
      this.refs.push(refreshFlags(old, flags, syncedAt));
      this.meter.tick();
    }
    return old !== undefined;
  }

  add(batch: readonly FetchedMessage[]): void {
    const b = parseFetched(batch);
    this.parsed.push(...b.parsed);
    this.refs.push(...b.parsed.map((p) => p.ref));
    this.failures.push(...b.failures);
    this.meter.tick(batch.length);
  }

  /** A folder is done: remember the Sent Message-IDs, report it, print one line. */
  folderDone(report: FolderReport, line: string): void {
    if (report.role === "sent") for (const r of this.refs) if (r.role === "sent" && r.message_id) this.sentMessageIds.add(r.message_id);
    this.folders.push(report);
    this.log(line);
  }

  result(): AccountSyncResult {
    this.meter.end();
    const { account, refs, parsed, failures, folders, sentMessageIds, warnings } = this;
    return { account, ok: true, refs, parsed, failures, folders, sentMessageIds, warnings };
  }
}
