/**
 * The whole failover story on one machine, started by the test itself: a PostgreSQL primary
 * with a synchronous standby (`pg_basebackup -R`), one address in front of them that moves
 * (a TCP proxy), three daemons on that address, writer loops that log every
 * acknowledgement, SSE subscribers on any node and long-poll subscribers on the followers.
 * Faults, one after another with writes flowing between them:
 *
 *   1. SIGKILL the writer (a supervisor starts it again);
 *   2. SIGSTOP the new writer past its lease, then SIGCONT (it must rejoin as a follower);
 *   3. stop the PostgreSQL primary with `-m immediate`, promote the standby, move the
 *      address (the daemons must reconnect by themselves);
 *   4. restart the followers (SIGTERM, start again on the same database).
 *
 * After each fault and at the end: the event log (read from PostgreSQL) holds exactly seq
 * 1..max; every acknowledged write is stored with its seq; every subscriber saw every seq of
 * its range once, in order; no write was applied twice (each writer's Idempotency-Key makes
 * a retry answer the first application); writes sent to followers were redirected; no epoch
 * was ever held by two daemons; no daemon exited that the test did not stop (the deposed
 * writer and every daemon that lost PostgreSQL stay up and rejoin). Failover times are
 * printed, not asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnDaemon, type Daemon } from "../daemon/helpers.js";
import { startPgPair, startProxy, query, type PgNode, type PgPair, type Proxy } from "./pgpair.js";
import { pollSubscriber, sseSubscriber, writerLoop, WRITE_CONTEXT, type Ack, type Nodes, type Subscriber, type WriterLoop } from "./clients.js";

/** The lease and its neighbours, short so each fault costs seconds (milliseconds). */
const LEASE_MS = 2_000;
const DAEMON_FLAGS = [
  "--lease-ms", String(LEASE_MS), "--lease-renew-ms", "200", "--follow-poll-ms", "200",
  "--pg-lock-timeout-ms", "500", "--pg-idle-in-transaction-ms", "1000", "--pg-statement-timeout-ms", "2000",
  "--heartbeat-ms", "500", "--max-events", "100000", "--max-wait-ms", "5000", "--quiet",
];

const DATABASE = "koinii";
/** Acknowledged writes to wait for after each fault before checking (writes flowing again). */
const WRITES_PER_PHASE = 30;
/** Bound on writes flowing again after a fault, or subscribers catching up (ms). */
const RECOVERY_BOUND_MS = 40_000;
const SAMPLE_EVERY_MS = 100;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The first way `seqs` differs from 1, 2, ..., n (a gap, a duplicate, a reordering), or undefined. */
function notOneToN(seqs: number[]): string | undefined {
  for (let i = 0; i < seqs.length; i++) {
    if (seqs[i] !== i + 1) return `position ${i} holds ${seqs[i]}, expected ${i + 1} (… ${seqs.slice(Math.max(0, i - 3), i + 3).join(", ")} …)`;
  }
  return undefined;
}

interface Slot {
  name: string;
  daemon: Daemon;
  /** The test stops this daemon itself: its exit is not a fault of the daemon. */
  stoppingByTest: boolean;
  role?: string;
}

interface UnexpectedExit {
  slot: string;
  pid: number;
  exit: number | string;
  phase: string;
  reason: string;
}

/** Three daemons on one store URL, sampled over time; implements the clients' view of them. */
class Cluster implements Nodes {
  slots: Slot[] = [];
  phase = "start";
  /** Daemons that exited without the test stopping them (none may). */
  readonly unexpectedExits: UnexpectedExit[] = [];
  /** epoch -> daemons (slot/pid) whose /health said writer under it. */
  readonly writersByEpoch = new Map<number, Set<string>>();
  /** epoch -> holders the lease row named under it. */
  readonly holdersByEpoch = new Map<number, Set<string>>();
  private running = true;
  private loops: Promise<void>[] = [];

  constructor(private readonly storeUrl: string, private readonly leaseUrl: () => string) {}

  async start(n: number): Promise<void> {
    for (let i = 0; i < n; i++) this.slots.push({ name: `d${i}`, daemon: await this.spawn(), stoppingByTest: false });
    this.loops.push(this.sample(), this.watchExits());
  }

  spawn(): Promise<Daemon> {
    return spawnDaemon({ args: ["--store", this.storeUrl, ...DAEMON_FLAGS] });
  }

  private up(s: Slot): boolean {
    return s.daemon.proc.exitCode === null && s.daemon.proc.signalCode === null;
  }

  urls(): string[] {
    return this.slots.filter((s) => this.up(s)).map((s) => s.daemon.url);
  }

  followers(): string[] {
    return this.slots.filter((s) => this.up(s) && s.role === "follower").map((s) => s.daemon.url);
  }

  async health(s: Slot): Promise<{ role: string; epoch: number; appliedSeq: number } | undefined> {
    try {
      const r = await fetch(s.daemon.url + "/health", { signal: AbortSignal.timeout(500) });
      return r.status === 200 ? ((await r.json()) as { role: string; epoch: number; appliedSeq: number }) : undefined;
    } catch {
      return undefined;
    }
  }

  /** Resolves once every slot's daemon is up and one of them is the writer (a fault starts from a whole cluster). */
  async whole(): Promise<void> {
    const end = Date.now() + RECOVERY_BOUND_MS;
    while (this.urls().length < this.slots.length) {
      if (Date.now() > end) throw new Error(`${this.phase}: only ${this.urls().length} of ${this.slots.length} daemons are up`);
      await sleep(SAMPLE_EVERY_MS);
    }
    await this.writer();
  }

  /** The slot whose daemon says it is the writer (waits for one). */
  async writer(): Promise<Slot> {
    const end = Date.now() + RECOVERY_BOUND_MS;
    for (;;) {
      for (const s of this.slots) if (this.up(s) && (await this.health(s))?.role === "writer") return s;
      if (Date.now() > end) throw new Error("no daemon reports role writer");
      await sleep(SAMPLE_EVERY_MS);
    }
  }

  /** Every SAMPLE_EVERY_MS: each daemon's role and epoch, and the lease row's holder and epoch. */
  private async sample(): Promise<void> {
    while (this.running) {
      for (const s of this.slots) {
        if (!this.up(s)) continue;
        const h = await this.health(s);
        if (!h) continue;
        s.role = h.role;
        if (h.role === "writer") add(this.writersByEpoch, h.epoch, `${s.name}/pid${s.daemon.proc.pid}`);
      }
      const lease = await query<{ holder: string; epoch: string }>(this.leaseUrl(), "select holder, epoch from lease where name = 'writer'").catch(() => []);
      for (const l of lease) if (Number(l.epoch) > 0) add(this.holdersByEpoch, Number(l.epoch), l.holder);
      await sleep(SAMPLE_EVERY_MS);
    }
  }

  /** Record every exit the test did not cause, with its reason (the daemon's last words). */
  private async watchExits(): Promise<void> {
    const recorded = new Set<Daemon>();
    while (this.running) {
      for (const s of this.slots) {
        if (this.up(s) || s.stoppingByTest || recorded.has(s.daemon)) continue;
        recorded.add(s.daemon);
        this.unexpectedExits.push({ slot: s.name, pid: s.daemon.proc.pid!, exit: s.daemon.proc.exitCode ?? s.daemon.proc.signalCode ?? -1, phase: this.phase, reason: exitReason(s.daemon.stderr()) });
      }
      await sleep(200);
    }
  }

  /** Stop one daemon on purpose (`signal`), and start it again on the same database. */
  async restart(s: Slot, signal: NodeJS.Signals): Promise<number | string> {
    s.stoppingByTest = true;
    const code = await s.daemon.stop(signal);
    s.daemon = await this.spawn();
    s.role = undefined;
    s.stoppingByTest = false;
    return code;
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    for (const s of this.slots) (s.stoppingByTest = true), await s.daemon.stop("SIGKILL");
  }
}

/** Why a daemon stopped, from its stderr: the fail-stop log line's `reason`, else the uncaught error's first line. */
function exitReason(stderr: string): string {
  const lines = stderr.split("\n");
  const logged = lines
    .map((l) => {
      try {
        return (JSON.parse(l) as { reason?: string }).reason;
      } catch {
        return undefined;
      }
    })
    .filter(Boolean)
    .at(-1);
  const thrown = lines.map((l) => l.trim()).find((l) => /^\w*error\b/i.test(l));
  return logged ?? (thrown ? `uncaught: ${thrown}` : lines.slice(-3).join(" | "));
}

function add<K, V>(m: Map<K, Set<V>>, k: K, v: V): void {
  const set = m.get(k) ?? new Set<V>();
  set.add(v);
  m.set(k, set);
}

describe("failover of the writer and of PostgreSQL, with writers and subscribers running", () => {
  let pair: PgPair;
  let proxy: Proxy;
  /** The PostgreSQL cluster that is primary now: the checks read it directly. */
  let primary: PgNode;
  let cluster: Cluster;
  let writers: WriterLoop[] = [];
  let subscribers: Subscriber[] = [];

  beforeAll(async () => {
    pair = await startPgPair({ databases: [DATABASE] });
    expect(await pair.syncState(pair.primary)).toBe("sync");
    primary = pair.primary;
    proxy = await startProxy(pair.primary.port);
    cluster = new Cluster(proxy.url(DATABASE), () => primary.url(DATABASE));
    await cluster.start(3);
  });

  // Whatever failed above, the PostgreSQL clusters must not outlive the run.
  afterAll(async () => {
    await Promise.allSettled([...writers, ...subscribers].map((c) => c.stop()));
    await cluster?.stop().catch(() => {});
    await proxy?.close();
    await pair?.stop();
  });

  const acks = (): Ack[] => writers.flatMap((w) => w.acks);
  const redirects = () => writers.reduce((n, w) => n + w.redirects, 0);

  /** Resolves once `n` more writes than now are acknowledged. */
  async function writesFlow(n: number): Promise<void> {
    const target = acks().length + n;
    const end = Date.now() + RECOVERY_BOUND_MS;
    while (acks().length < target) {
      if (Date.now() > end) throw new Error(`${cluster.phase}: writes did not flow again within ${RECOVERY_BOUND_MS} ms (${acks().length}/${target} acknowledged)`);
      await sleep(20);
    }
  }

  /**
   * Print how long after `from` the first write committed after it was acknowledged (not
   * asserted): only a request sent after `from` counts, since an answer still on its way
   * at `from` says nothing about the failover.
   */
  function failoverTime(what: string, from: number): void {
    const first = Math.min(...acks().filter((a) => a.sentAt > from).map((a) => a.at));
    console.log(`failover: ${what} to the first acknowledged write: ${first - from} ms (lease ${LEASE_MS} ms)`);
  }

  /**
   * Every invariant, read from PostgreSQL directly. `redirectsBefore`: the 307 count when the
   * phase began (this phase must have seen more).
   */
  async function check(label: string, redirectsBefore: number): Promise<void> {
    const db = primary.url(DATABASE);
    // Taken before the log is read: every write acknowledged by now is committed in it.
    const acked = acks();
    const seen = new Map(subscribers.map((s) => [s, [...s.seen]]));
    // One statement, one snapshot: the log and head_seq as one commit left them.
    const rows = await query<{ seq: string; body: string; head: string }>(db, "select e.seq, e.body, m.value as head from event e, meta m where m.key = 'head_seq' order by e.seq");
    const events = rows.map((r) => ({ seq: Number(r.seq), body: JSON.parse(r.body) as { added: { handle: number; sentence: string; context: string }[] } }));
    const seqs = events.map((e) => e.seq);
    const max = seqs.at(-1) ?? 0;
    expect(notOneToN(seqs), `${label}: the event log holds exactly seq 1..${max}`).toBeUndefined();
    expect(Number(rows[0]?.head ?? 0), `${label}: head_seq is the last event`).toBe(max);

    const bySeq = new Map(events.map((e) => [e.seq, e.body]));
    const sentexes = new Map((await query<{ handle: string; sentence: string; seq: string }>(db, "select handle, sentence, seq from sentex where context = $1", [WRITE_CONTEXT])).map((r) => [Number(r.handle), { sentence: r.sentence, seq: Number(r.seq) }]));
    for (const a of acked) {
      expect(bySeq.get(a.seq)?.added.some((x) => x.handle === a.handle && x.sentence === a.sentence), `${label}: the event at seq ${a.seq} adds ${a.sentence} (handle ${a.handle}), as acknowledged`).toBe(true);
      expect(sentexes.get(a.handle), `${label}: ${a.sentence} is stored with handle ${a.handle} at seq ${a.seq}`).toEqual({ sentence: a.sentence, seq: a.seq });
    }
    // A retried write whose first attempt committed: stored twice only if applied twice.
    const stored = new Map<string, number>();
    for (const e of events) for (const x of e.body.added) if (x.context === WRITE_CONTEXT) stored.set(x.sentence, (stored.get(x.sentence) ?? 0) + 1);
    const duplicates = [...stored].filter(([, n]) => n > 1);
    expect(duplicates, `${label}: no write applied twice`).toEqual([]);
    // A retry whose first attempt committed is answered from its key: the first answer, created.
    expect(acked.filter((a) => !a.created).map((a) => a.sentence), `${label}: every acknowledged write answered as created (a retry gets the first answer)`).toEqual([]);

    for (const s of subscribers) {
      const got = seen.get(s)!;
      expect(notOneToN(got), `${label}: subscriber ${s.name} saw every seq of 1..${got.at(-1) ?? 0} once, in order`).toBeUndefined();
      expect(got.length, `${label}: subscriber ${s.name} saw nothing past the log`).toBeLessThanOrEqual(max);
      expect(s.lagged, `${label}: subscriber ${s.name} was told of no loss`).toBe(0);
    }
    expect(redirects() - redirectsBefore, `${label}: writes sent to followers were redirected (307)`).toBeGreaterThan(0);
    for (const w of writers) expect(w.unexpected, `${label}: no write was refused`).toEqual([]);
    expect(cluster.unexpectedExits, `${label}: no daemon exited without the test stopping it`).toEqual([]);

    for (const [epoch, who] of cluster.writersByEpoch) expect([...who], `${label}: epoch ${epoch} was held by one daemon (its /health said writer)`).toHaveLength(1);
    for (const [epoch, who] of cluster.holdersByEpoch) expect([...who], `${label}: epoch ${epoch} has one holder in the lease row`).toHaveLength(1);
    // If the event table records the committing epoch, epochs never go back along the log.
    const [col] = await query(db, "select 1 from information_schema.columns where table_name = 'event' and column_name = 'epoch'");
    if (col) {
      const epochs = (await query<{ epoch: string }>(db, "select epoch from event order by seq")).map((r) => Number(r.epoch));
      const back = epochs.findIndex((e, i) => i > 0 && e < epochs[i - 1]!);
      expect(back, `${label}: an event committed under an older epoch than the one before it (seq ${back + 1})`).toBe(-1);
    }

    console.log(
      `${label}: log 1..${max}; ${acked.length} acknowledged; ` +
        `${redirects()} redirects (${redirects() - redirectsBefore} this phase); ${writers.reduce((n, w) => n + w.retries, 0)} retries; ` +
        `sentences stored by more than one event: ${duplicates.length}; subscribers ${subscribers.map((s) => `${s.name}:${s.seen.length} seen/${s.connections} connections/${s.servedBy.size} nodes`).join(", ")}; ` +
        `epochs ${[...cluster.writersByEpoch].map(([e, w]) => `${e}=${[...w].join("+")}`).join(" ")}`,
    );
  }

  /** Target behaviour: `slot`'s daemon, resumed after losing its lease, answers as a follower without exiting. */
  async function rejoinsAsFollower(s: Slot, d: Daemon): Promise<boolean> {
    const end = Date.now() + RECOVERY_BOUND_MS;
    while (Date.now() < end && s.daemon === d && d.proc.exitCode === null) {
      if ((await cluster.health(s))?.role === "follower") return true;
      await sleep(SAMPLE_EVERY_MS);
    }
    return false;
  }

  it("keeps every acknowledged write, in one gapless order, delivered once to every subscriber, through four faults", { timeout: 180_000 }, async () => {
    subscribers = [sseSubscriber("sse-1", cluster), sseSubscriber("sse-2", cluster), pollSubscriber("poll-1", cluster), pollSubscriber("poll-2", cluster)];
    writers = ["A", "B", "C"].map((n) => writerLoop(n, cluster));
    let before = redirects();
    await writesFlow(WRITES_PER_PHASE);
    await check("before any fault", before);

    // 1. SIGKILL the writer; a follower takes over once the lease runs out. A supervisor
    //    starts the killed daemon again (it comes back as a follower).
    cluster.phase = "1 SIGKILL";
    before = redirects();
    const first = await cluster.writer();
    const killedAt = Date.now();
    first.stoppingByTest = true;
    await first.daemon.stop("SIGKILL");
    await writesFlow(WRITES_PER_PHASE);
    failoverTime("writer SIGKILL", killedAt);
    await cluster.restart(first, "SIGKILL");
    await writesFlow(WRITES_PER_PHASE);
    await check("after 1 (SIGKILL the writer)", before);

    // 2. SIGSTOP the writer past its lease; another daemon is elected; SIGCONT: the old
    //    writer finds its lease taken and must rejoin as a follower, in place.
    cluster.phase = "2 SIGSTOP";
    await cluster.whole();
    before = redirects();
    const paused = await cluster.writer();
    const pausedDaemon = paused.daemon;
    const stoppedAt = Date.now();
    pausedDaemon.proc.kill("SIGSTOP");
    await sleep(LEASE_MS + 1_000);
    pausedDaemon.proc.kill("SIGCONT");
    await writesFlow(WRITES_PER_PHASE);
    failoverTime("writer SIGSTOP", stoppedAt);
    expect(await rejoinsAsFollower(paused, pausedDaemon), `the deposed writer (${paused.name}, pid ${pausedDaemon.proc.pid}) rejoins as a follower without exiting; it exited ${pausedDaemon.proc.exitCode}`).toBe(true);
    await writesFlow(WRITES_PER_PHASE);
    await check("after 2 (SIGSTOP the writer past its lease)", before);

    // 3. The PostgreSQL primary dies; the operator (Patroni, in production) promotes the
    //    synchronous standby, sets synchronous_standby_names on it (no standby is left: ''),
    //    and the address moves. The daemons must reconnect by themselves.
    cluster.phase = "3 PostgreSQL failover";
    await cluster.whole();
    before = redirects();
    const pidsBefore = cluster.slots.map((s) => s.daemon.proc.pid);
    const pgStoppedAt = Date.now();
    await pair.stopImmediate(pair.primary);
    await pair.promote(pair.standby);
    await pair.setSynchronousStandbyNames(pair.standby, "");
    primary = pair.standby;
    proxy.moveTo(pair.standby.port);
    console.log(`PostgreSQL failover: primary stopped, standby promoted and the address moved in ${Date.now() - pgStoppedAt} ms`);
    await writesFlow(WRITES_PER_PHASE);
    failoverTime("PostgreSQL primary stop", pgStoppedAt);
    expect(cluster.slots.map((s) => s.daemon.proc.pid), "every daemon reconnects to the promoted primary by itself (same processes)").toEqual(pidsBefore);
    await writesFlow(WRITES_PER_PHASE);
    await check("after 3 (PostgreSQL primary stopped, standby promoted)", before);

    // 4. Restart the followers: a graceful stop (exit 0) and a start on the same database.
    cluster.phase = "4 restart followers";
    await cluster.whole();
    before = redirects();
    const writerNow = await cluster.writer();
    for (const s of cluster.slots.filter((x) => x !== writerNow)) expect(await cluster.restart(s, "SIGTERM"), `${s.name} stops gracefully`).toBe(0);
    await writesFlow(WRITES_PER_PHASE);
    await check("after 4 (followers restarted)", before);

    // The end: no more writes; every subscriber catches up to the head and saw 1..max.
    cluster.phase = "end";
    await Promise.all(writers.map((w) => w.stop()));
    const [head] = await query<{ value: string }>(primary.url(DATABASE), "select value from meta where key = 'head_seq'");
    const max = Number(head!.value);
    const end = Date.now() + RECOVERY_BOUND_MS;
    while (subscribers.some((s) => (s.seen.at(-1) ?? 0) < max) && Date.now() < end) await sleep(50);
    await Promise.all(subscribers.map((s) => s.stop()));
    for (const s of subscribers) expect(s.seen.length, `subscriber ${s.name} reached the head ${max}`).toBe(max);
    await check("at the end", 0);
    for (const s of subscribers.filter((x) => x.name.startsWith("sse"))) expect(s.servedBy.size, `${s.name} resumed on more than one node`).toBeGreaterThan(1);

    expect(cluster.unexpectedExits, "no daemon exited without the test stopping it").toEqual([]);
  });
});
