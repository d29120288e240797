/**
 * The console in a real browser (chromium-headless-shell) against a real daemon in
 * admin-token posture: the live tail, the query table, the why tree, who is connected, the
 * token refusals and the cross-origin guard. Each page is screenshotted (browser.ts `SHOTS`).
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import type { Browser, Page } from "playwright-core";
import { spawnDaemon, call, type Daemon } from "../daemon/helpers.js";
import { launchBrowser, openConsole, shoot, foreignOrigin, type ConsolePage } from "./browser.js";

const ADMIN = "console-admin-token";
let d: Daemon;
/** expect.poll with room for a loaded machine (the default gives up after 1 s). */
const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 20_000, interval: 100 });
let browser: Browser;

const post = async (path: string, body: unknown, token = ADMIN) => {
  const r = await call(d.url, "POST", path, body, { token });
  if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${r.text}`);
  return r.body;
};

/** Open the console with the admin token handed over in the fragment, as `koinii console` prints it. */
async function openAs(hash: string, token = ADMIN): Promise<ConsolePage> {
  const cp = await openConsole(browser, `${d.url}/console#token=${encodeURIComponent(token)}`);
  await cp.page.waitForSelector(".tokenbar"); // the token has moved to sessionStorage
  await cp.page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  return cp;
}

/** The tail is live once its watch answered (events after its cursor reach it). */
async function tailReady(page: Page): Promise<void> {
  await page.waitForSelector('.counters[data-running="yes"]:not([data-last-seq=""])');
}

beforeAll(async () => {
  d = await spawnDaemon({ env: { KOINII_ADMIN_TOKEN: ADMIN } });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await d?.stop();
});

describe("console", () => {
  it("serves its files under a strict CSP, with no inline script, without a token; nothing else under /console", async () => {
    const page = await call(d.url, "GET", "/console");
    expect(page.status).toBe(200);
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).toContain("frame-ancestors 'none'");
    // Every <script> names its source: no inline script.
    expect(page.text.match(/<script\b[^>]*>/g)!.every((tag) => /\bsrc=/.test(tag))).toBe(true);
    for (const path of ["/console/assets/main.js", "/console/vendor/preact.mjs", "/console/vendor/htm.mjs", "/console/assets/console.css"]) {
      const r = await call(d.url, "GET", path);
      expect(r.status, path).toBe(200);
      expect(r.headers.get("content-security-policy"), path).toBe(csp);
    }
    for (const path of ["/console/assets/serve.ts", "/console/assets/..%2fserve.ts", "/console/vendor/hooks.mjs", "/console/vendor/..%2f..%2fpackage.json"]) {
      expect((await call(d.url, "GET", path, undefined, { token: ADMIN })).status, path).toBe(404);
    }
  });

  it("a write made over the wire appears in an open live tail, linked to its sentex; pause holds it back, resume from a seq replays it", async () => {
    const c = await openAs("#/tail");
    const { page } = c;
    await tailReady(page);
    const a = await post("/v1/assert", { sentence: "(dog Rex)", context: "CxPets" });
    const row = page.locator(`tr[data-seq="${a.seq}"]`);
    await poll(() => row.textContent()).toContain("(dog Rex)");
    expect(await row.locator("a.handle").getAttribute("href")).toBe(`#/why/${a.handle}`);
    await shoot(page, "tail");

    await page.click("#pause");
    await page.waitForSelector('.counters[data-running="no"]');
    const held = await post("/v1/assert", { sentence: "(dog Bolt)", context: "CxPets" });
    expect(await page.locator(`tr[data-seq="${held.seq}"]`).count()).toBe(0);
    expect(await page.inputValue('input[name="from"]')).toBe(String(a.seq)); // resumes after the last seq seen
    await page.click("#resume");
    await poll(() => page.locator(`tr[data-seq="${held.seq}"]`).textContent()).toContain("(dog Bolt)");

    // Filtered on the daemon by context: a write elsewhere never shows.
    await page.fill('input[name="context"]', "CxBirds");
    await page.click('button:has-text("apply filter")');
    await tailReady(page);
    const other = await post("/v1/assert", { sentence: "(dog Fang)", context: "CxPets" });
    const bird = await post("/v1/assert", { sentence: "(bird Tweety)", context: "CxBirds" });
    await poll(() => page.locator(`tr[data-seq="${bird.seq}"]`).count()).toBe(1);
    expect(await page.locator(`tr[data-seq="${other.seq}"]`).count()).toBe(0);
    expect(c.errors).toEqual([]);
    await c.close();
  });

  it("a query returns its table, with truncated shown", async () => {
    await post("/v1/assert", { sentence: "(implies (cat ?x) (pet ?x))", context: "CxHome" });
    for (const n of ["Tom", "Felix", "Garfield"]) await post("/v1/assert", { sentence: `(cat ${n})`, context: "CxHome" });
    await post("/v1/assert", { sentence: "(genlCx CxHome CxPets)", context: "CxHome" });
    const c = await openAs("#/query");
    const { page } = c;
    await page.waitForSelector('select[name="context"] option[value="CxHome"]', { state: "attached" });
    await page.selectOption('select[name="context"]', "CxHome");
    expect(await page.textContent(".cone")).toContain("CxPets"); // the picker shows the cone
    await page.fill('input[name="goal"]', "(pet ?x)");
    await page.click('button:has-text("run")');
    await page.waitForSelector(".answer-meta");
    const wire = await post("/v1/query", { goal: "(pet ?x)", context: "CxHome" });
    const cells = await page.locator("table.solutions tbody td").allTextContents();
    expect(cells.sort()).toEqual(wire.solutions.map((s: Record<string, string>) => s["?x"]).sort());
    expect(cells.sort()).toEqual(["Felix", "Garfield", "Tom"]);
    expect(await page.getAttribute(".answer-meta", "data-truncated")).toBe("no");
    await shoot(page, "query");

    await page.fill('input[name="limit"]', "2");
    await page.click('button:has-text("run")');
    await poll(() => page.getAttribute(".answer-meta", "data-truncated")).toBe("yes");
    expect(await page.locator("table.solutions tbody tr").count()).toBe(2);
    expect(c.errors).toEqual([]);
    await c.close();
  });

  it("a derived sentex's why tree shows its rule and premises; retracting a premise updates the page", async () => {
    const rule = await post("/v1/assert", { sentence: "(implies (dog ?x) (animal ?x))", context: "CxFarm" });
    const premise = await post("/v1/assert", { sentence: "(dog Shep)", context: "CxFarm" });
    const [derived] = (await post("/v1/match", { sentence: "(animal Shep)", context: "CxFarm" })).sentexes;
    expect(derived.derived).toBe(true);
    const c = await openAs(`#/why/${derived.handle}`);
    const { page } = c;
    await page.waitForSelector("#verdict [data-believed]");
    expect(await page.getAttribute("#verdict [data-believed]", "data-believed")).toBe("yes");
    expect(await page.textContent("#why-sentence")).toBe("(animal Shep)");
    const support = page.locator(".why-tree .support").first();
    await poll(() => support.locator(".rule").textContent()).toContain("(implies (dog ?x) (animal ?x))");
    expect(await support.locator(".rule a.handle").getAttribute("href")).toBe(`#/why/${rule.handle}`);
    const premiseNode = support.locator(`.premises .why-node[data-handle="${premise.handle}"]`);
    await poll(() => premiseNode.textContent()).toContain("(dog Shep)");
    await page.waitForSelector("table.history td");
    await shoot(page, "why");

    await post("/v1/retract", { handle: premise.handle });
    await poll(() => page.getAttribute("#verdict [data-believed]", "data-believed")).toBe("no");
    expect(await page.textContent("#verdict")).toContain(`not believed: ${(await post("/v1/why", { handle: derived.handle })).reason}`);
    expect(c.errors).toEqual([]);
    await c.close();
  });

  it("a subscriber that stops reading shows its lag growing; open queries show their claim", async () => {
    const agent = await post("/v1/agents", { id: "AgentSlow", displayName: "Slow reader" });
    await post("/v1/assert", { sentence: "(genlCx CxSlow CxSpeechActs)", context: "CxSlow" }, agent.token);
    const q = await post("/v1/assert", { sentence: "(queries AgentSlow (colourOf Sky))", context: "CxSlow" }, agent.token);
    await post("/v1/assert", { sentence: `(claims AgentSlow (sentexHandle ${q.handle}) ${Date.now() + 600_000})`, context: "CxSlow" }, agent.token);
    const sub = await post("/v1/watch", {}, agent.token); // and never read again
    const waiting = await post("/v1/watch", { goal: "(never ?x)", context: "CxSlow" }, agent.token);
    const parked = call(d.url, "POST", "/v1/poll", { token: waiting.token, cursor: waiting.cursor, waitMs: 20_000 }, { token: agent.token });
    const c = await openAs("#/who");
    const { page } = c;
    const row = page.locator(`table.watchers tr[data-token="${sub.token}"]`);
    await row.waitFor();
    const lag = async () => Number(await row.getAttribute("data-lag"));
    const pending = async () => Number(await row.getAttribute("data-pending"));
    const before = await lag();
    for (let i = 0; i < 5; i++) await post("/v1/assert", { sentence: `(tick N${i})`, context: "CxClock" });
    await poll(lag).toBeGreaterThanOrEqual(before + 5);
    expect(await pending()).toBeGreaterThanOrEqual(5);
    expect(await row.textContent()).toContain("AgentSlow");
    await poll(() => page.getAttribute(`table.watchers tr[data-token="${waiting.token}"]`, "data-parked")).toBe("1");
    await post("/v1/unwatch", { token: waiting.token }, agent.token);
    expect((await parked).body.type).toBe("unknown-subscription"); // an unwatched parked poll is answered
    const queryRow = page.locator("table.queries tbody tr", { hasText: "(colourOf Sky)" });
    await poll(() => queryRow.textContent()).toContain("AgentSlow");
    expect(await queryRow.locator("td").nth(5).textContent()).toBe("AgentSlow"); // claimed by
    expect(await page.textContent("#cluster")).toMatch(/role\s*writer\s*epoch\s*0\s*appliedSeq\s*\d+\s*lagMs\s*0/); // /health's cluster fields (the SQLite daemon is its own writer, epoch 0)
    // The cluster table: on SQLite the daemon alone, the writer at epoch 0, highlighted.
    const members = page.locator("table.members tbody tr");
    await poll(() => members.count()).toBe(1);
    expect(await members.getAttribute("data-url")).toBe(d.url);
    expect(await members.getAttribute("data-role")).toBe("writer");
    expect(await members.getAttribute("data-epoch")).toBe("0");
    expect(await members.getAttribute("data-current-writer")).toBe("yes");
    await shoot(page, "who");
    expect(c.errors).toEqual([]);
    await c.close();
  });

  it("a wrong token shows the same refusal as the wire; an agent's token sees only what it sees over the wire", async () => {
    const c = await openConsole(browser, `${d.url}/console#/tail`);
    const { page } = c;
    await page.fill("#token", "not-a-token");
    await page.click('button:has-text("use")');
    const wire = await call(d.url, "GET", "/v1/agents", undefined, { token: "not-a-token" });
    const shown = page.locator(".tokenbar .refusal");
    await shown.waitFor();
    expect(await shown.getAttribute("data-status")).toBe(String(wire.status));
    expect(await shown.getAttribute("data-type")).toBe(wire.body.type);
    expect(await shown.locator(".refusal-error").textContent()).toBe(wire.body.error);
    // The tail's own requests are refused the same way.
    const tailRefusal = page.locator(".tail .refusal");
    await tailRefusal.waitFor();
    expect(await tailRefusal.getAttribute("data-status")).toBe("401");
    expect(await tailRefusal.locator(".refusal-error").textContent()).toBe(wire.body.error);
    await shoot(page, "refused");
    await c.close();

    // An agent's token: the who page lists its own subscriptions only, as GET /v1/watchers does for it.
    const agent = await post("/v1/agents", { id: "AgentPeek" });
    await post("/v1/watch", {}); // the admin's
    const own = await post("/v1/watch", {}, agent.token);
    const a = await openAs("#/who", agent.token);
    await a.page.locator(`table.watchers tr[data-token="${own.token}"]`).waitFor();
    const tokens = await a.page.locator("table.watchers tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-token")));
    const wireTokens = (await call(d.url, "GET", "/v1/watchers", undefined, { token: agent.token })).body.watchers.map((w: { token: string }) => w.token);
    expect(tokens.sort()).toEqual(wireTokens.sort());
    expect(a.errors).toEqual([]);
    await a.close();
  });

  it("a cross-origin page cannot drive it: its requests are refused and unreadable, its frames stay empty, nothing is written", async () => {
    const foreign = await foreignOrigin();
    const c = await openConsole(browser, foreign.url);
    const refusedBefore = await crossOriginRefusals();
    const outcome = await c.page.evaluate(async ({ daemon, token }) => {
      const attempt = async (f: () => Promise<Response>) => {
        try {
          const r = await f();
          return r.type === "opaque" ? "opaque" : `read ${r.status} ${await r.text()}`;
        } catch (e) {
          return `refused ${(e as Error).name}`;
        }
      };
      return {
        // A JSON write with the token: the preflight is refused, the write never sent.
        write: await attempt(() => fetch(`${daemon}/v1/assert`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify({ sentence: "(evil One)", context: "CxPets" }) })),
        // A "simple" request that needs no preflight: sent, refused 403 by the daemon, unreadable.
        read: await attempt(() => fetch(`${daemon}/v1/agents`)),
        blind: await attempt(() => fetch(`${daemon}/v1/assert`, { method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body: JSON.stringify({ sentence: "(evil Two)", context: "CxPets" }) })),
        console: await attempt(() => fetch(`${daemon}/console`)),
      };
    }, { daemon: d.url, token: ADMIN });
    expect(outcome.write).toBe("refused TypeError");
    expect(outcome.read).toBe("refused TypeError");
    expect(outcome.blind).toBe("opaque");
    expect(outcome.console).toBe("refused TypeError");
    // The daemon saw the simple ones and refused them as cross-origin.
    expect(await crossOriginRefusals()).toBeGreaterThanOrEqual(refusedBefore + 2);
    for (const s of ["(evil One)", "(evil Two)"]) expect((await post("/v1/match", { sentence: s, context: "CxPets" })).sentexes).toEqual([]);

    // Framed by the foreign page (clickjacking), the console does not load: frame-ancestors 'none'.
    await c.page.evaluate(`document.body.append(Object.assign(document.createElement("iframe"), { src: ${JSON.stringify(d.url + "/console")} }))`);
    await c.page.waitForTimeout(500);
    const frame = c.page.frames().find((f) => f !== c.page.mainFrame())!;
    expect(await frame.evaluate('document.querySelector("#app") === null').catch(() => true)).toBe(true);
    await c.close();
    await foreign.close();
  });
});

async function crossOriginRefusals(): Promise<number> {
  const m = await call(d.url, "GET", "/metrics", undefined, { token: ADMIN });
  const line = m.text.split("\n").find((l) => l.startsWith('koinii_refusals_total{type="cross-origin"}'));
  return line ? Number(line.split(" ")[1]) : 0;
}
