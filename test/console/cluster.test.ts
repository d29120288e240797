/**
 * The who page's Cluster table in a real browser (chromium-headless-shell), opened on the
 * follower of two daemons sharing one PostgreSQL database: both daemons with role, epoch and
 * applied seq; the seqs advance after a write; SIGKILL the writer and the page shows the
 * follower elected at epoch 2 and the dead one unreachable. Screenshot: cluster.png (browser.ts `SHOTS`).
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import type { Browser, Locator } from "playwright-core";
import { spawnClusterDaemon, call, type Daemon } from "../daemon/helpers.js";
import { freshDatabase } from "../kb/pg.js";
import { launchBrowser, openConsole, shoot } from "./browser.js";

const ADMIN = "cluster-console-token";
/** expect.poll with room for a loaded machine and an election (lease 2 s, unreachable after 6 s). */
const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 30_000, interval: 100 });

let writer: Daemon;
let follower: Daemon;
let browser: Browser;

beforeAll(async () => {
  const url = await freshDatabase();
  writer = await spawnClusterDaemon(url, [], { KOINII_ADMIN_TOKEN: ADMIN });
  follower = await spawnClusterDaemon(url, [], { KOINII_ADMIN_TOKEN: ADMIN });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await follower?.stop();
  await writer?.stop();
});

/** A row's data-* attributes: what the page says of one daemon. */
async function shown(row: Locator): Promise<Record<string, string | null>> {
  if ((await row.count()) !== 1) return {};
  const get = (a: string) => row.getAttribute(`data-${a}`);
  return { role: await get("role"), epoch: await get("epoch"), applied: await get("applied"), state: await get("state"), writer: await get("current-writer") };
}

describe("console: the cluster table", () => {
  it("opened on the follower: both daemons, applied seqs advancing; SIGKILL the writer and the follower is shown elected at epoch 2, the dead one unreachable", async () => {
    const c = await openConsole(browser, `${follower.url}/console#token=${encodeURIComponent(ADMIN)}`);
    const { page } = c;
    await page.waitForSelector(".tokenbar");
    await page.evaluate(`location.hash = "#/who"`);
    const rows = page.locator("table.members tbody tr");
    const w = page.locator(`table.members tr[data-url="${writer.url}"]`);
    const f = page.locator(`table.members tr[data-url="${follower.url}"]`);
    await poll(() => rows.count()).toBe(2);
    await poll(() => shown(w)).toMatchObject({ role: "writer", epoch: "1", state: "live", writer: "yes" });
    await poll(() => shown(f)).toMatchObject({ role: "follower", epoch: "0", state: "live", writer: "no" });
    expect(await w.getAttribute("class")).toContain("writer"); // highlighted

    const a = await call(writer.url, "POST", "/v1/assert", { sentence: "(dog Muffet)", context: "CxPets" }, { token: ADMIN });
    expect(a.status).toBe(200);
    await poll(async () => Number(await w.getAttribute("data-applied"))).toBeGreaterThanOrEqual(a.body.seq);
    await poll(async () => Number(await f.getAttribute("data-applied"))).toBeGreaterThanOrEqual(a.body.seq);

    await writer.stop("SIGKILL");
    await poll(() => shown(f)).toMatchObject({ role: "writer", epoch: "2", state: "live", writer: "yes" });
    await poll(() => shown(w)).toMatchObject({ state: "unreachable", writer: "no" });
    expect(await f.getAttribute("class")).toContain("writer");
    expect(await rows.count()).toBe(2);
    await shoot(page, "cluster");
    expect(c.errors).toEqual([]);
    await c.close();
  });
});
