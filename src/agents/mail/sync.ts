/**
 * What a transport hands back, turned into refs (reference §2.3 "Sync"). The IMAP and JMAP
 * clients are thin layers that fetch raw messages and flags and call these.
 */
import { parseMessage, type FetchMeta, type MailRef, type ParsedMail } from "./parse.js";

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
