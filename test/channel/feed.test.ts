/**
 * Subscriptions and catch-up over both media: delivery in seq order off the caller's work,
 * throwing and slow callbacks isolated, stop/unsubscribe, and the consumer's view folded
 * from the tail and re-snapshotted when the feed lost something.
 */
import { describe, it, expect } from "vitest";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join as pathJoin } from "node:path";
import {
  join, assert, poseQuery, answer, retract, subscribe, unsubscribe, openConsumer, sync, viewOf, snapshot, query,
  memoryCursorStore, fileCursorStore, ChannelError, type FeedEvent,
} from "../../src/channel/index.js";
import { rig, eventually, gate, tempDir, type MediumKind } from "./helpers.js";

describe.each<MediumKind>(["local", "wire"])("subscriptions over %s", (kind) => {
  it("delivers matching events in strictly increasing seq, each with bindings, and nothing after unsubscribe", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const b = await join(r.medium, "CxDeploy", "AgentBoreas");
    const seen: FeedEvent[] = [];
    const sub = await subscribe(a, "(answers ?agent ?content ?target)", "CxDeploy", (ev) => void seen.push(ev), { waitMs: 2000 });
    const q = await poseQuery(a, "(whichDatabase Prod)");
    const x1 = await answer(b, "Postgres", q);
    const x2 = await answer(a, "Mysql", q);
    await eventually(() => seen.length, (n) => n >= 2);
    expect(seen.map((e) => e.added.map((s) => s.handle))).toEqual([[x1], [x2]]);
    expect(seen[0]!.added[0]!.bindings).toEqual({ "?agent": "AgentBoreas", "?content": "Postgres", "?target": `(sentexHandle ${q})` });
    expect(seen[0]!.seq).toBeLessThan(seen[1]!.seq);
    await unsubscribe(sub);
    await unsubscribe(sub); // idempotent
    await answer(b, "Sqlite", q);
    const probe: FeedEvent[] = [];
    const sub2 = await subscribe(a, null, "CxDeploy", (ev) => void probe.push(ev), { waitMs: 2000 });
    await assert(a, "(marker Done)");
    await eventually(() => probe.length, (n) => n >= 1);
    await unsubscribe(sub2);
    expect(seen).toHaveLength(2);
  });

  it("a throwing callback goes to onError and the next event is still delivered", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const seen: number[] = [];
    const errors: unknown[] = [];
    const sub = await subscribe(a, "(n ?x)", "CxDeploy", (ev) => {
      seen.push(ev.seq);
      if (seen.length === 1) throw new Error("boom");
    }, { waitMs: 2000, onError: (e) => errors.push(e) });
    await assert(a, "(n One)");
    await assert(a, "(n Two)");
    await eventually(() => seen.length, (n) => n >= 2);
    expect(errors.map((e) => (e as Error).message)).toEqual(["boom"]);
    await sub.stop();
  });

  it("a slow callback never stalls another subscription, and its own events queue in order behind it", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const held = gate();
    const slow: number[] = [];
    const fast: number[] = [];
    const s1 = await subscribe(a, "(n ?x)", "CxDeploy", async (ev) => {
      slow.push(ev.seq);
      await held.promise;
    }, { waitMs: 2000 });
    const s2 = await subscribe(a, "(n ?x)", "CxDeploy", (ev) => void fast.push(ev.seq), { waitMs: 2000 });
    for (const w of ["One", "Two", "Three"]) await assert(a, `(n ${w})`);
    await eventually(() => fast.length, (n) => n === 3);
    expect(slow).toHaveLength(1); // still inside its first callback
    held.open();
    await eventually(() => slow.length, (n) => n === 3);
    expect(slow).toEqual(fast);
    await Promise.all([s1.stop(), s2.stop()]);
  });

  it("goals that cannot be watched honestly are refused not-watchable, as the daemon refuses them", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    await expect(subscribe(a, "(and (p ?x) (q ?x))", "CxDeploy", () => {})).rejects.toMatchObject({ type: "not-watchable" });
  });
});

describe("wire subscriptions: stop wakes the parked poll", () => {
  it("stop() aborts a poll parked for 30 s and unwatches its token", { timeout: 15_000 }, async () => {
    const r = await rig("wire");
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const sub = await subscribe(a, "(n ?x)", "CxDeploy", () => {}, { waitMs: 30_000 });
    const token = sub.token;
    await new Promise((res) => setTimeout(res, 100)); // let the poll park
    await sub.stop();
    await sub.done;
    await expect(r.medium.feedPoll(token, await r.medium.headSeq())).rejects.toMatchObject({ type: "unknown-subscription" });
  });
});

describe.each<MediumKind>(["local", "wire"])("catch-up over %s", (kind) => {
  it("a consumer's view is the snapshot, then folds added entries in and removed entries out", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const b = await join(r.medium, "CxDeploy", "AgentBoreas");
    const q1 = await poseQuery(a, "(whichDatabase Prod)");
    const c = await openConsumer(b, "(queries ?agent ?q)", "CxDeploy", memoryCursorStore());
    const first = await sync(c);
    expect(first.resnapshots).toEqual(["bootstrap"]);
    expect(viewOf(c)).toEqual(["(queries AgentAtlas (whichDatabase Prod))"]);
    const q2 = await poseQuery(a, "(whoOwns Prod)");
    await retract(a, q1);
    const second = await sync(c);
    expect(second.added.map((s) => s.handle)).toEqual([q2]);
    expect(second.removed.map((s) => s.handle)).toEqual([q1]);
    expect(viewOf(c)).toEqual(["(queries AgentAtlas (whoOwns Prod))"]);
    const third = await sync(c);
    expect(third).toMatchObject({ events: 0, resnapshots: [] });
  });

  it("the view equals the cone-aware query substituted back; a sentence two agents hold stays until both retract", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const b = await join(r.medium, "CxDeploy", "AgentBoreas");
    const c = await openConsumer(a, "(usesDatabase ?c ?db)", "CxDeploy");
    await sync(c);
    const x = await assert(a, "(usesDatabase Prod Postgres)");
    await assert(b, "(usesDatabase Prod Postgres)");
    await assert(b, "(usesDatabase Staging Sqlite)");
    await retract(a, x);
    await sync(c);
    const fromQuery = (await query(a, "(usesDatabase ?c ?db)")).map((s) => `(usesDatabase ${s["?c"]} ${s["?db"]})`).sort();
    expect(viewOf(c)).toEqual(fromQuery);
    expect(viewOf(c)).toEqual(["(usesDatabase Prod Postgres)", "(usesDatabase Staging Sqlite)"]);
    expect([...(await snapshot(a, "(usesDatabase ?c ?db)", "CxDeploy")).values()].sort()).toEqual(fromQuery);
  });

  it("re-snapshots on unknown-subscription and on bad-cursor, and ends holding exactly the snapshot", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const store = memoryCursorStore();
    const c = await openConsumer(a, "(n ?x)", "CxDeploy", store);
    await sync(c);
    await assert(a, "(n One)");
    await r.medium.feedClose(c.position!.token); // reaped behind its back
    await assert(a, "(n Two)");
    expect((await sync(c)).resnapshots).toEqual(["unknown-subscription"]);
    expect(viewOf(c)).toEqual(["(n One)", "(n Two)"]);
    c.position = { token: c.position!.token, cursor: (await r.medium.headSeq()) + 50 };
    await assert(a, "(n Three)");
    expect((await sync(c)).resnapshots).toEqual(["bad-cursor"]);
    expect(viewOf(c)).toEqual(["(n One)", "(n Three)", "(n Two)"]);
    expect((await store.read())!.cursor).toBe(c.position!.cursor);
  });

  it("a file cursor store is written atomically and a consumer reopened on it resumes where it stopped", async () => {
    const r = await rig(kind);
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const dir = tempDir();
    const path = pathJoin(dir, "atlas.cursor.json");
    const c1 = await openConsumer(a, "(n ?x)", "CxDeploy", fileCursorStore(path));
    await assert(a, "(n One)");
    await sync(c1);
    await assert(a, "(n Two)");
    await sync(c1);
    expect(readdirSync(dir)).toEqual(["atlas.cursor.json"]); // no temp file left behind
    const saved = JSON.parse(readFileSync(path, "utf8"));
    expect(saved.cursor).toBe(c1.position!.cursor);
    await assert(a, "(n Three)");
    // "Restart": a new consumer on the same file resumes with the same token, cursor and view.
    const c2 = await openConsumer(a, "(n ?x)", "CxDeploy", fileCursorStore(path));
    expect(viewOf(c2)).toEqual(["(n One)", "(n Two)"]);
    const res = await sync(c2);
    expect(res.resnapshots).toEqual([]);
    expect(res.added.map((s) => s.sentence)).toEqual(["(n Three)"]);
    writeFileSync(path, "{\"token\": 3}");
    await expect(openConsumer(a, "(n ?x)", "CxDeploy", fileCursorStore(path))).rejects.toMatchObject({ type: "bad-cursor-file" });
    expect(existsSync(path)).toBe(true);
  });
});

describe("catch-up after lag", () => {
  // One feed (the hub) under both media: the same overflow reads the same lagged.
  it.each(["wire", "local"] as const)("%s: a consumer whose subscription lost events (ring overflow) re-snapshots and holds exactly the snapshot", async (kind) => {
    const r = kind === "wire" ? await rig("wire", { daemonArgs: ["--max-events", "4"] }) : await rig("local", { maxEvents: 4 });
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const c = await openConsumer(a, "(n ?x)", "CxDeploy");
    await sync(c);
    const hs: number[] = [];
    for (let i = 0; i < 12; i++) hs.push(await assert(a, `(n N${i})`));
    await retract(a, hs[3]!);
    const res = await sync(c);
    expect(res.resnapshots).toEqual(["lagged"]);
    const snap = [...(await snapshot(a, "(n ?x)", "CxDeploy")).values()].sort();
    expect(viewOf(c)).toEqual(snap);
    expect(snap).toHaveLength(11);
  });

  it("local: a feed reopened from a cursor older than the retained log reads lagged", async () => {
    const r = await rig("local", { feedRetentionEvents: 10 });
    const before = await r.medium.headSeq();
    for (let i = 0; i < 1030; i++) await r.kb!.assert(`(tick T${i})`, "CxAtlas"); // the log prunes every 1024 writes
    expect(r.kb!.oldestRetainedSeq()).toBeGreaterThan(before + 1);
    const feed = await r.medium.feedOpen({ from: before });
    const answer = await r.medium.feedPoll(feed.token, feed.cursor);
    expect(answer.lagged).toBe(r.kb!.oldestRetainedSeq() - 1 - before);
  });
});

describe("errors", () => {
  it("ChannelError carries type, status and problems from the daemon", async () => {
    const r = await rig("wire");
    const e = await r.medium.edit({ add: [{ sentence: "(fine Claim)", context: "CxX" }, { sentence: "(answers A B)", context: "CxSpeechActs" }] }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ChannelError);
    expect(e).toMatchObject({ type: "inadmissible", status: 400 });
    expect((e as ChannelError).problems![0]).toMatchObject({ type: "arity", in: "add", index: 1 });
  });
});

describe("the local medium's hub lives with the KB", () => {
  it("one handle closing a shared local medium leaves the others' subscriptions delivering", async () => {
    const r = await rig("local");
    const a = await join(r.medium, "CxDeploy", "AgentAtlas");
    const seen: number[] = [];
    const sub = await subscribe(a, "(n ?x)", "CxDeploy", (ev) => void seen.push(ev.seq));
    await r.medium.close(); // as an agent does when it leaves
    const w = await assert(a, "(n After)");
    await eventually(() => seen, (s) => s.length === 1);
    expect(seen).toHaveLength(1);
    expect(w).toBeGreaterThan(0);
    await sub.stop();
  });

  it("a hub that was shut down refuses polls (shutting-down) instead of answering empty at once, so no poller spins", async () => {
    const r = await rig("local");
    const { FeedHub } = await import("../../src/feed/index.js");
    const hub = FeedHub.attach(r.kb!);
    const admin = { id: "admin", admin: true };
    const w = hub.watch(admin, {});
    hub.shutdown();
    await expect(hub.poll(admin, { token: w.token, cursor: w.cursor })).rejects.toMatchObject({ type: "shutting-down" });
    expect(() => hub.watch(admin, {})).toThrow(expect.objectContaining({ type: "shutting-down" }));
  });
});
