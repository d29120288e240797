/**
 * Open the responder's durable files and build a `Responder` from them: verify the audit
 * chain (refusing a broken one), rebuild today's counters, the processed and answered ids
 * and the outcomes the KB never acknowledged from it, open the dedup store, and write the
 * boot record with the charter's sha256. A reply that was being sent when the process died
 * is closed out as `escalated` / `send_unconfirmed` (a human checks whether it arrived).
 */
import { join } from "node:path";
import { AuditLog } from "./audit.js";
import type { LoadedCharter } from "./charter.js";
import { type OffWindow, clearSwitchedOff, readSwitchedOff, windowAction, windowOf } from "./killswitch.js";
import { DedupStore } from "./dedup.js";
import { AuditReplay, type Clock, type KbPort, Responder, type ResponderOptions, type UnrecordedOutcome } from "./responder.js";
import type { PlatformPort } from "./platform.js";
import type { Composer } from "../composer/types.js";

export interface BootOptions extends Omit<ResponderOptions, "charter" | "initialState" | "initialAnswered"> {
  /** Holds `audit.jsonl` and `processed.jsonl` (unless `auditPath` / `processedPath` say otherwise). */
  dataDir: string;
  auditPath?: string;
  processedPath?: string;
  loaded: LoadedCharter;
  kb: KbPort;
  platform: PlatformPort;
  composer: Composer;
  clock: Clock;
  maxProcessedIds?: number;
}

export interface Booted {
  responder: Responder;
  audit: AuditLog;
  processed: DedupStore;
  /** Spans the responder was switched off (R22): catch-up leaves DM nodes created in them for a human. */
  offWindows: OffWindow[];
  /** Outcomes the knowledge base never acknowledged before this boot, oldest first: the service records them at its first connect. */
  unrecorded: UnrecordedOutcome[];
  /** Close both files after writing `daemon_stopped`. */
  stop(signal: string): Promise<void>;
}

/**
 * @example const { responder, stop } = bootResponder({ dataDir, loaded: loadCharter(p), kb, platform,
 *   composer: createComposer(process.env), clock: { nowMs: Date.now } });
 */
export function bootResponder(o: BootOptions): Booted {
  const now = o.clock.nowMs();
  const replay = new AuditReplay(now);
  const offWindows: OffWindow[] = [];
  const audit = AuditLog.open(
    o.auditPath ?? join(o.dataDir, "audit.jsonl"),
    {
      charter_version: o.loaded.charter.version,
      charter_sha256: o.loaded.sha256,
      charter_enabled: o.loaded.charter.enabled,
      allowlist: [...o.loaded.charter.allowlist.values()],
      composer: o.composer.name,
    },
    now,
    (r) => {
      replay.onRecord(r);
      const w = windowOf(r);
      if (w !== null) offWindows.push(w);
    },
  );
  // A start refused by a kill switch left a marker: its window goes into the audit, then the marker goes.
  const off = readSwitchedOff(o.dataDir);
  if (off !== null) {
    audit.append(windowAction, { since_ms: off.sinceMs, until_ms: now, switch: off.switch }, now);
    offWindows.push({ fromMs: off.sinceMs, toMs: now });
    clearSwitchedOff(o.dataDir);
  }
  const processed = DedupStore.open(o.processedPath ?? join(o.dataDir, "processed.jsonl"), o.maxProcessedIds);
  for (const id of replay.processedIds) processed.add(id);
  const unrecorded = replay.unrecorded();
  for (const u of unrecorded) {
    if (u.outcome.action === "escalated" && u.outcome.reason === "send_unconfirmed") {
      audit.append("escalated", { reason: "send_unconfirmed", message_id: u.messageId, query: u.query }, now);
    }
  }
  const { dataDir: _d, auditPath: _a, processedPath: _p, loaded, kb, platform, composer, clock, maxProcessedIds: _m, ...rest } = o;
  const responder = new Responder(
    { kb, platform, composer, audit, clock, processed },
    { ...rest, charter: loaded.charter, initialState: replay.stateAt(now), initialAnswered: replay.answeredIds },
  );
  return {
    responder,
    audit,
    processed,
    unrecorded,
    offWindows,
    async stop(signal: string) {
      await responder.drain();
      audit.append("daemon_stopped", { sig: signal }, clock.nowMs());
      audit.close();
      processed.close();
    },
  };
}
