/**
 * A cluster daemon rejoins in place (docs/cluster.md, "A deposed writer rejoins"): when its
 * PostgreSQL store fails because it was deposed or lost its connection, the daemon keeps
 * its HTTP listener, closes the failed store, opens a new one (retrying every `retryMs`
 * until PostgreSQL answers), builds a new KB from the new snapshot (a follower, or the
 * writer if elected) and swaps it into the running server. A broken invariant (a replay
 * that diverged, a pruned log) is not recovered: `exit(3)` as on SQLite (K12).
 *
 *   const rejoin = new Rejoiner({ server, log, open, retryMs, closeBoundMs, advertiseUrl, exit });
 *   rejoin.watch(kb);          // from now on, a lost store is rebuilt instead of exiting
 *   await rejoin.stop();       // SIGTERM: no more rebuilding; closes the current KB
 */
import type { Logger } from "pino";
import type { Kb } from "../kb/index.js";
import { storeLost } from "../kb/pgstore.js";
import type { KoiniiServer } from "./server.js";

export interface RejoinOptions {
  server: KoiniiServer;
  log: Logger;
  /** Open a new store and a KB on it (the same options the daemon started with). */
  open(): Promise<Kb>;
  /** Wait between attempts to reach PostgreSQL (the lease renewal period), in ms. */
  retryMs: number;
  /** Longest wait for the failed store to close (its connection may be dead), in ms. */
  closeBoundMs: number;
  /** Where this daemon's writes are to be sent once it is the writer. */
  advertiseUrl(): string;
  /** A broken invariant, or a failure that is not the store's: stop the process. */
  exit(code: number): void;
}

export class Rejoiner {
  private kb: Kb | undefined;
  private stopping = false;
  /** How many times this daemon has rebuilt its KB. */
  rejoins = 0;

  constructor(private readonly o: RejoinOptions) {}

  /** Serve `kb` and rebuild when its store is lost. */
  watch(kb: Kb): void {
    this.kb = kb;
    const onFailure = (f: { reason: string; error: unknown }) => {
      if (this.stopping || this.kb !== kb) return;
      if (!storeLost(f.error)) {
        this.stopping = true;
        void this.o.server.close().finally(() => this.o.exit(3));
        return;
      }
      void this.rejoin(kb, f.reason);
    };
    kb.onFailure(onFailure);
    if (kb.failure) onFailure(kb.failure);
  }

  private async rejoin(failed: Kb, why: string): Promise<void> {
    const { server, log } = this.o;
    server.rejoining(why, this.o.retryMs);
    log.warn({ reason: why }, "the store was lost: rejoining (writes answer 503 no-writer meanwhile)");
    await bounded(failed.close(), this.o.closeBoundMs);
    for (let attempt = 1; !this.stopping; attempt++) {
      let kb: Kb;
      try {
        kb = await this.o.open();
      } catch (err) {
        log.warn({ attempt, reason: err instanceof Error ? err.message : String(err), retryMs: this.o.retryMs }, "reopening the PostgreSQL store failed; retrying");
        await new Promise((r) => setTimeout(r, this.o.retryMs));
        continue;
      }
      if (this.stopping) return void (await kb.close());
      await server.swap(kb);
      this.rejoins++;
      this.watch(kb);
      // A lost connection is the store's to notice (and then this daemon rejoins again).
      await kb.store.cluster?.advertise(this.o.advertiseUrl()).catch((err: unknown) => log.warn({ err }, "advertising the writer URL failed"));
      log.info({ role: kb.role, epoch: kb.store.cluster?.epoch ?? 0, seq: kb.headSeq }, "rejoined");
      return;
    }
  }

  /** A graceful stop: no more rebuilding; close the KB served now (if one is). */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.kb?.close();
  }
}

const bounded = (p: Promise<unknown>, ms: number): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    void p.catch(() => {}).finally(() => (clearTimeout(t), resolve()));
  });
