/**
 * Cluster membership on PostgreSQL: every daemon on one database records itself in the
 * `member` table (its lease holder id, advertised URL, role, epoch, applied seq and apply lag,
 * `seen_at` = the database's `clock_timestamp()`) at each lease renewal (the writer) and each
 * election attempt (a follower), and reads every member back in the same beat.
 *
 *   const roster = new PgMembers();
 *   await roster.beat(pool, { leaseMs, memberForgetMs }, { holder, url, role, epoch, appliedSeq, lagMs });
 *   roster.list(leaseMs); // [{url, role, epoch, appliedSeq, lagMs, seenAgoMs, state}]
 *
 * Ages are measured on the database's clock (seen_at against clock_timestamp(), at the read),
 * then grown by this process's monotonic clock until the next read: no two machines' clocks
 * are ever compared. A member not seen for UNREACHABLE_LEASES lease periods is `unreachable`;
 * a row not seen for `memberForgetMs` is deleted by the next beat of any member.
 *
 * Membership is for people and tools looking at the cluster; it decides nothing. A beat that
 * fails (PostgreSQL unreachable) is not a store failure: the last reading stays, its ages
 * growing, so every member (this one included) turns `unreachable` if beats keep failing.
 */
import type pg from "pg";
import type { ClusterMember } from "./store-of-record.js";

/** A member not seen for this many lease periods (`leaseMs`) is shown `unreachable`. */
export const UNREACHABLE_LEASES = 3;

/** What a daemon records of itself at each beat. */
export interface MemberState {
  holder: string;
  url: string | null;
  role: "writer" | "follower";
  epoch: number;
  appliedSeq: number;
  lagMs: number;
}

interface MemberRow {
  url: string | null;
  role: "writer" | "follower";
  epoch: number;
  applied_seq: number;
  lag_ms: number;
  /** Milliseconds since its seen_at, by the database's clock when read. */
  ago_ms: number;
}

/** `memberForgetMs` must leave time to show a member `unreachable` before it is forgotten. */
export function checkMemberForget(limits: { leaseMs: number; memberForgetMs: number }): void {
  if (limits.memberForgetMs <= UNREACHABLE_LEASES * limits.leaseMs) {
    throw new RangeError(`memberForgetMs (${limits.memberForgetMs}) must exceed ${UNREACHABLE_LEASES} x leaseMs (${UNREACHABLE_LEASES * limits.leaseMs}), the age at which a member is shown unreachable`);
  }
}

export class PgMembers {
  private rows: MemberRow[] = [];
  /** performance.now() when `rows` was read. */
  private readAt = 0;
  private beating = false;

  /**
   * Record `self` (seen now), forget rows older than `memberForgetMs`, read every member
   * back. One beat at a time: a beat due while one is in flight is skipped.
   */
  async beat(pool: pg.Pool, limits: { memberForgetMs: number }, self: MemberState): Promise<void> {
    if (this.beating) return;
    this.beating = true;
    try {
      await pool.query(
        `with forgotten as (delete from member where seen_at < clock_timestamp() - make_interval(secs => $7::float8 / 1000))
         insert into member (holder, url, role, epoch, applied_seq, lag_ms, seen_at) values ($1, $2, $3, $4, $5, $6, clock_timestamp())
         on conflict (holder) do update set url = excluded.url, role = excluded.role, epoch = excluded.epoch,
           applied_seq = excluded.applied_seq, lag_ms = excluded.lag_ms, seen_at = excluded.seen_at`,
        [self.holder, self.url, self.role, self.epoch, self.appliedSeq, self.lagMs, limits.memberForgetMs],
      );
      const read = await pool.query<MemberRow>(
        `select url, role, epoch, applied_seq, lag_ms, greatest(0, (extract(epoch from clock_timestamp() - seen_at) * 1000))::bigint as ago_ms
         from member order by role = 'writer' desc, epoch desc, holder`,
      );
      this.rows = read.rows;
      this.readAt = performance.now();
    } catch {
      // Kept: the last reading, whose ages go on growing (see the module comment).
    } finally {
      this.beating = false;
    }
  }

  /** The members as last read, aged to now; empty until the first beat has read them. */
  list(leaseMs: number): ClusterMember[] {
    const since = Math.round(performance.now() - this.readAt);
    return this.rows.map((r) => {
      const seenAgoMs = r.ago_ms + since;
      return { url: r.url, role: r.role, epoch: r.epoch, appliedSeq: r.applied_seq, lagMs: r.lag_ms, seenAgoMs, state: seenAgoMs > UNREACHABLE_LEASES * leaseMs ? "unreachable" : "live" };
    });
  }
}
