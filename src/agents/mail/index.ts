/**
 * The mail agent's pure core (issue 8; docs/agents-mail.md). Transports (IMAP, JMAP,
 * SMTP), the CLI and the channel wiring are thin layers over these functions.
 */
export {
  AccountsConfigSchema,
  AccountSchema,
  ImapAccountSchema,
  JmapAccountSchema,
  PolicySchema,
  credentialsReport,
  formatCredentialsLine,
  loadAccountsConfig,
  mailContext,
  parseAccountsConfig,
} from "./config.js";
export type { Account, AccountsConfig, ConfigResult, CredentialsStatus, ImapAccount, JmapAccount, MailContext, MailPolicyConfig, StatFn } from "./config.js";

export {
  aligned,
  authVerdict,
  bestText,
  decodeEncodedWords,
  htmlToText,
  jmapKeywordsToFlags,
  ownFeatures,
  ownText,
  parseAddressList,
  parseHeaders,
  parseMailDate,
  parseMessage,
  parseMessageIds,
  refId,
  stripQuoted,
} from "./parse.js";
export type { Address, AuthResults, AutoHeaders, FetchMeta, FolderRole, MailRef, OwnFeatures, ParsedMail } from "./parse.js";

export { parseFetched, refreshFlags, replaceAccountRefs } from "./sync.js";
export type { FetchedMessage, SyncBatch } from "./sync.js";

export { classify, isOwn, theirAutomation } from "./classify.js";
export type { AutomatedKind, Classification } from "./classify.js";

export { compareRefs, groupThreads, threadId } from "./thread.js";
export type { Thread, ThreadId } from "./thread.js";

export { STATE_ORDER, STATE_RULES, ackMaxChars, closeThread, defaultStartedWaitDays, isOpen, sortStatuses, summaryLine, threadFacts, threadStatus } from "./state.js";
export type { Closure, Facts, Promised, Rule, StateInput, ThreadEvent, ThreadState, ThreadStatus } from "./state.js";

export {
  COMMITMENT_TRANSITIONS,
  applyCommitmentEvent,
  commitmentsFromMail,
  dueFrom,
  extractByRules,
  isOutstanding,
  outstanding,
  proposeCommitments,
  refreshOverdue,
} from "./commitments.js";
export type { Commitment, CommitmentEvent, CommitmentStatus, ProposalResult, Provenance, WhoOwes } from "./commitments.js";

export { DRAFT_REASONS, REFUSALS, decide, priorContacts } from "./policy.js";
export type { Decision, DraftReason, PolicyInput, RefusalReason } from "./policy.js";

export { beginSend, idempotencyKey, markSubmitted, mintMessageId, normaliseBody, reconcile, startedThreadId } from "./idempotency.js";
export type { BeginResult, IdempotencyKey, Receipt, ReceiptStatus, ReconcileOptions, Reconciliation, SendIntent } from "./idempotency.js";

export { OUR_EARLIER_REPLY, buildComposeRequest, formatMailDate, quoteForReply, renderMessage, replyHeaders, replyReferences, replySubject, untrustedBlock } from "./compose.js";
export type { ReplyHeaders, ThreadItem } from "./compose.js";
