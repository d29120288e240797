/**
 * The mail agent's network layer (docs/agents-mail.md "Network layer"): IMAP and JMAP sync,
 * SMTP submission, the receipt table and sending. Kept apart from `index.ts` (the pure
 * core) so that importing the core pulls in no transport.
 */
export {
  IMAP_READ_ONLY_COMMANDS,
  ImapGuardError,
  READ_ONLY,
  applySync,
  checkImapCommand,
  commandSkeleton,
  commandVerb,
  connectImap,
  findFolders,
  findMessageIds,
  folderMessageIds,
  guardImapClient,
  imapEndpoint,
  syncImapAccount,
} from "./imap.js";
export type { AccountSyncResult, FolderReport, GuardProfile, GuardRecord, GuardedImap, ImapEndpoint, ImapGuard, ImapSyncOptions } from "./imap.js";

export { JMAP_ALLOWED_METHODS, JmapClient, JmapRefusal, checkJmapMethod, syncJmapAccount } from "./jmap.js";
export type { JmapClientOptions, JmapSession, JmapSyncOptions } from "./jmap.js";

export { ReceiptStore } from "./receipts.js";
export type { InsertResult, StoredReceipt } from "./receipts.js";

export { Secret, parseCredentials, readCredentials } from "./secrets.js";
export type { Credentials } from "./secrets.js";

export { SmtpError, smtpSubmitter } from "./smtp.js";
export type { SubmitResult, Submitter } from "./smtp.js";

export { imapSentCopy, reconcileReceipts, sendReply, submitWithReceipt } from "./send.js";
export type { ReconcileReport, ReplyInput, SendHooks, SendOutcome, SentCopy, SubmitArgs } from "./send.js";
