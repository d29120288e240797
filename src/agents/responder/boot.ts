/**
 * Open the responder's durable files and build a `Responder` from them: verify the audit
 * chain (refusing a broken one), rebuild today's counters and the processed ids from it,
 * open the dedup store, and write the boot record with the charter's sha256.
 */
import { join } from "node:path";
import { AuditLog } from "./audit.js";
import type { LoadedCharter } from "./charter.js";
import { DedupStore } from "./dedup.js";
import { AuditReplay, type Clock, type KbPort, Responder, type ResponderOptions } from "./responder.js";
import type { PlatformPort } from "./platform.js";
import type { Composer } from "../composer/types.js";

export interface BootOptions extends Omit<ResponderOptions, "charter" | "initialState"> {
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
    replay.onRecord,
  );
  const processed = DedupStore.open(o.processedPath ?? join(o.dataDir, "processed.jsonl"), o.maxProcessedIds);
  for (const id of replay.processedIds) processed.add(id);
  const { dataDir: _d, auditPath: _a, processedPath: _p, loaded, kb, platform, composer, clock, maxProcessedIds: _m, ...rest } = o;
  const responder = new Responder(
    { kb, platform, composer, audit, clock, processed },
    { ...rest, charter: loaded.charter, initialState: replay.stateAt(now) },
  );
  return {
    responder,
    audit,
    processed,
    async stop(signal: string) {
      await responder.drain();
      audit.append("daemon_stopped", { sig: signal }, clock.nowMs());
      audit.close();
      processed.close();
    },
  };
}
