/**
 * GET /v1/cluster over the wire: on PostgreSQL every daemon on the database records itself in
 * the member table and any node answers the same list (role, epoch, applied seq, lag, last
 * seen, unreachable after 3 lease periods, forgotten after --member-forget-ms); on SQLite the
 * daemon alone. Real daemons, a real database.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnDaemon, spawnClusterDaemon, call, type Daemon } from "../daemon/helpers.js";
import { freshDatabase, pgQuery } from "../kb/pg.js";

const ADMIN = "members-admin-token";
/** expect.poll with room for a loaded machine (beats come every 200 ms). */
const poll = <T>(fn: () => Promise<T>) => expect.poll(fn, { timeout: 15_000, interval: 50 });

interface Member {
  url: string | null;
  role: string;
  epoch: number;
  appliedSeq: number;
  lagMs: number;
  seenAgoMs: number;
  state: string;
}

const members = async (d: Daemon): Promise<Member[]> => {
  const r = await call(d.url, "GET", "/v1/cluster", undefined, { token: ADMIN });
  expect(r.status).toBe(200);
  expect(typeof r.body.asOf).toBe("number");
  return r.body.members;
};
const byUrl = (ms: Member[], url: string) => ms.find((m) => m.url === url);

describe("GET /v1/cluster on PostgreSQL", () => {
  let url: string;
  let writer: Daemon;
  let follower: Daemon;
  beforeAll(async () => {
    url = await freshDatabase();
    writer = await spawnClusterDaemon(url, ["--member-forget-ms", "60000"], { KOINII_ADMIN_TOKEN: ADMIN });
    follower = await spawnClusterDaemon(url, ["--member-forget-ms", "60000"], { KOINII_ADMIN_TOKEN: ADMIN });
  });
  afterAll(async () => {
    await follower?.stop();
    await writer?.stop();
  });

  it("every node lists both daemons with role, epoch and applied seq; applied seqs advance after a write", async () => {
    for (const d of [writer, follower]) {
      await poll(async () => (await members(d)).map((m) => m.url).sort()).toEqual([writer.url, follower.url].sort());
    }
    const ms = await members(follower);
    expect(ms).toHaveLength(2);
    expect(byUrl(ms, writer.url)).toMatchObject({ role: "writer", epoch: 1, lagMs: 0, state: "live" });
    expect(byUrl(ms, follower.url)).toMatchObject({ role: "follower", epoch: 0, state: "live" });
    for (const m of ms) expect(m.seenAgoMs).toBeLessThan(6000);

    const w = await call(writer.url, "POST", "/v1/assert", { sentence: "(dog Muffet)", context: "CxPets" }, { token: ADMIN });
    expect(w.status).toBe(200);
    for (const d of [writer, follower]) {
      await poll(async () => Math.min(...(await members(d)).map((m) => m.appliedSeq))).toBeGreaterThanOrEqual(w.body.seq);
    }
    // Same access as /v1/agents: a token is needed.
    const anon = await call(follower.url, "GET", "/v1/cluster");
    expect(anon.status).toBe(401);
  });

  it("a member not seen for 3 lease periods is unreachable (database clock); one not seen for --member-forget-ms is deleted", async () => {
    await pgQuery(url, "insert into member (holder, url, role, epoch, applied_seq, lag_ms, seen_at) values ('quiet', 'http://quiet.invalid', 'follower', 0, 0, 0, clock_timestamp() - interval '7 seconds'), ('gone', 'http://gone.invalid', 'follower', 0, 0, 0, clock_timestamp() - interval '61 seconds')");
    // Wait for a reading taken after a beat's delete (one taken between our insert and that delete shows both).
    await poll(async () => (await members(follower)).map((m) => m.url).filter((u) => u!.endsWith(".invalid"))).toEqual(["http://quiet.invalid"]);
    const ms = await members(follower);
    expect(byUrl(ms, "http://quiet.invalid")).toMatchObject({ state: "unreachable" });
    expect(byUrl(ms, "http://quiet.invalid")!.seenAgoMs).toBeGreaterThanOrEqual(7000);
    expect(byUrl(ms, writer.url)!.state).toBe("live");
    expect(await pgQuery(url, "select holder from member where holder = 'gone'")).toEqual([]);
    expect((await pgQuery(url, "select holder from member where holder = 'quiet'")).length).toBe(1);
  });

  it("a forget bound that would delete members before they show unreachable is refused at start", async () => {
    const d = spawnClusterDaemon(url, ["--member-forget-ms", "6000"]);
    await expect(d).rejects.toThrow(/memberForgetMs \(6000\) must exceed 3 x leaseMs \(6000\)/);
  });
});

describe("GET /v1/cluster on SQLite", () => {
  let d: Daemon;
  beforeAll(async () => {
    d = await spawnDaemon({ env: { KOINII_ADMIN_TOKEN: ADMIN } });
  });
  afterAll(async () => {
    await d?.stop();
  });

  it("lists this daemon alone: the writer at epoch 0, at its head seq", async () => {
    const w = await call(d.url, "POST", "/v1/assert", { sentence: "(dog Rex)", context: "CxPets" }, { token: ADMIN });
    expect(await members(d)).toEqual([{ url: d.url, role: "writer", epoch: 0, appliedSeq: w.body.seq, lagMs: 0, seenAgoMs: 0, state: "live" }]);
  });
});
