/**
 * Threads (reference §2.3): union-find per account over Message-ID, In-Reply-To and
 * References. There is no subject fallback (M7): a message without threading headers
 * starts its own thread.
 */
import { createHash } from "node:crypto";
import { refId, type MailRef } from "./parse.js";

export type ThreadId = `t:${string}`;

export interface Thread {
  id: ThreadId;
  /** The root id the thread id is hashed from. */
  key: string;
  account: string;
  /** Oldest first, by `compareRefs`. */
  refs: MailRef[];
}

/** `"t:"` + the first 10 hex digits of sha256(account + "\n" + key). */
export function threadId(account: string, key: string): ThreadId {
  return `t:${createHash("sha256").update(`${account}\n${key}`).digest("hex").slice(0, 10)}`;
}

/**
 * Message order: missing dates first, then by date; INBOX before Sent on a tie; then uid;
 * then the anchor, so the order is total and never depends on arrival.
 */
export function compareRefs(a: MailRef, b: MailRef): number {
  if (a.date !== b.date) {
    if (a.date === null) return -1;
    if (b.date === null) return 1;
    const d = Date.parse(a.date) - Date.parse(b.date);
    if (d !== 0) return d;
  }
  if (a.role !== b.role) return a.role === "inbox" ? -1 : 1;
  if ((a.uid ?? -1) !== (b.uid ?? -1)) return (a.uid ?? -1) - (b.uid ?? -1);
  const [x, y] = [refId(a), refId(b)];
  return x < y ? -1 : x > y ? 1 : 0;
}

function node(account: string, id: string): string {
  return `${account}\n${id}`;
}

/**
 * Group refs into threads, newest thread first. Keys are namespaced by account, so the
 * same Message-ID in two accounts gives two threads.
 *
 * @example groupThreads(refs).map((t) => [t.id, t.refs.length])
 */
export function groupThreads(refs: readonly MailRef[]): Thread[] {
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    let root = x;
    while (parent.has(root) && parent.get(root) !== root) root = parent.get(root)!;
    let cur = x;
    while (cur !== root) {
      const next = parent.get(cur)!;
      parent.set(cur, root);
      cur = next;
    }
    return root;
  };
  const union = (a: string, b: string) => {
    const [ra, rb] = [find(a), find(b)];
    // Link the larger string under the smaller: the forest's shape then does not depend on arrival order.
    if (ra !== rb) (ra < rb ? parent.set(rb, ra) : parent.set(ra, rb));
  };
  const own = (r: MailRef) => node(r.account, r.message_id ?? `server:${refId(r)}`);
  for (const r of refs) {
    const me = own(r);
    if (!parent.has(me)) parent.set(me, me);
    for (const id of [...r.in_reply_to, ...r.references]) {
      const other = node(r.account, id);
      if (!parent.has(other)) parent.set(other, other);
      union(me, other);
    }
  }
  const groups = new Map<string, MailRef[]>();
  for (const r of refs) {
    const root = find(own(r));
    groups.set(root, [...(groups.get(root) ?? []), r]);
  }
  const threads: Thread[] = [];
  for (const members of groups.values()) {
    members.sort(compareRefs);
    const earliest = members[0];
    const key = earliest.references[0] ?? earliest.in_reply_to[0] ?? earliest.message_id ?? earliest.server_id;
    threads.push({ id: threadId(earliest.account, key), key, account: earliest.account, refs: members });
  }
  return threads.sort((a, b) => -compareRefs(a.refs.at(-1)!, b.refs.at(-1)!) || (a.id < b.id ? -1 : 1));
}
