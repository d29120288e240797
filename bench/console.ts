/**
 * `npm run bench -- console` (issue 19): the console's live tail in a real browser
 * (chromium-headless-shell) against the daemon as `koinii serve` runs it, fed 1 000 events/s
 * over the wire. Figures: the write rate achieved, events the page received against events
 * written (none may be missing), the rows kept (the named cap, MAX_TAIL_ROWS), `lagged`, how
 * long the page took to show the last event once writing stopped, and the page's JS heap
 * (after a forced GC, read over CDP) when the cap first fills against at the end: with the
 * cap, the heap must not keep growing with the number of events.
 */
import { Pool } from "undici";
import type { Page } from "playwright-core";
import { Suite, nowNs, elapsedMs } from "./lib.js";
import { startDaemon } from "./procs.js";
import { launchBrowser } from "../test/console/browser.js";

/** The tail's row cap, as src/console/assets/tail.js names it. */
const MAX_TAIL_ROWS = 2000;
const RATE_PER_S = 1000;
const DURATION_S = Number(process.env.KOINII_BENCH_CONSOLE_SECONDS ?? 10);
const MAX_IN_FLIGHT = 64;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Counters {
  events: number;
  rows: number;
  lastSeq: number;
  lagged: number;
}

const counters = async (page: Page): Promise<Counters> =>
  page.$eval(".counters", (el) => ({
    events: Number(el.getAttribute("data-events")),
    rows: Number(el.getAttribute("data-rows")),
    lastSeq: Number(el.getAttribute("data-last-seq")),
    lagged: Number(el.getAttribute("data-lagged")),
  }));

/** Assert `total` sentences paced at RATE_PER_S (at most MAX_IN_FLIGHT at once); `tick` runs about once a second. */
async function pacedWrites(url: string, total: number, tag: string): Promise<{ done: number; secs: number; lastSeq: number }> {
  const pool = new Pool(url, { connections: 16, pipelining: 1 });
  let sent = 0;
  let done = 0;
  let lastSeq = 0;
  const write = async (i: number) => {
    const body = JSON.stringify({ sentence: `(tick ${tag}${i})`, context: "CxBench" });
    const r = await pool.request({ path: "/v1/assert", method: "POST", headers: { "content-type": "application/json" }, body });
    const a = (await r.body.json()) as { seq: number };
    if (r.statusCode !== 200) throw new Error(`assert answered ${r.statusCode}`);
    lastSeq = Math.max(lastSeq, a.seq);
    done++;
  };
  const t0 = nowNs();
  const inFlight = new Set<Promise<void>>();
  while (sent < total) {
    const due = Math.min(total, Math.floor((elapsedMs(t0) / 1000) * RATE_PER_S));
    while (sent < due && inFlight.size < MAX_IN_FLIGHT) {
      const p = write(sent++).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await sleep(5);
  }
  await Promise.all(inFlight);
  const secs = elapsedMs(t0) / 1000;
  await pool.close();
  return { done, secs, lastSeq };
}

export async function run(): Promise<void> {
  const suite = new Suite("console");
  const daemon = await startDaemon({ durability: "normal" });
  const browser = await launchBrowser();
  const total = RATE_PER_S * DURATION_S;
  try {
    const page = await browser.newPage();
    const cdp = await page.context().newCDPSession(page);
    const heapMb = async () => {
      await cdp.send("HeapProfiler.collectGarbage");
      return (await cdp.send("Runtime.getHeapUsage")).usedSize / 2 ** 20;
    };
    // Baseline, same run: the same paced writes with the console open on a page that follows nothing.
    await page.goto(`${daemon.url}/console#/query`);
    await page.waitForSelector(".querybox");
    const base = await pacedWrites(daemon.url, total, "B");
    suite.add("write_rate_console_idle", { value: base.done / base.secs, unit: "events/s", note: `${base.done} asserts in ${base.secs.toFixed(1)} s, target rate ${RATE_PER_S}/s` });

    await page.evaluate(`location.hash = "#/tail"`);
    await page.waitForSelector('.counters[data-running="yes"]:not([data-last-seq=""])');
    const startSeq = (await counters(page)).lastSeq;
    const heapEmpty = await heapMb();
    let heapAtCap: number | undefined;
    const heapSamples: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await sleep(1000);
        const c = await counters(page);
        const mb = await heapMb();
        if (heapAtCap === undefined && c.rows >= MAX_TAIL_ROWS) heapAtCap = mb;
        else if (heapAtCap !== undefined) heapSamples.push(mb);
      }
    })();
    const w = await pacedWrites(daemon.url, total, "T");
    const tStop = nowNs();
    let c = await counters(page);
    while (c.lastSeq < w.lastSeq && elapsedMs(tStop) < 60_000) {
      await sleep(20);
      c = await counters(page);
    }
    const drainMs = elapsedMs(tStop);
    sampling = false;
    await sampler;
    await sleep(300); // one more draw
    c = await counters(page);
    const heapEnd = await heapMb();
    const seqs = await page.$$eval("tbody tr[data-seq]", (rows) => rows.map((r) => Number(r.getAttribute("data-seq"))));
    const expected = Array.from({ length: Math.min(MAX_TAIL_ROWS, w.done) }, (_, i) => w.lastSeq - i);
    const rowsExact = seqs.length === expected.length && seqs.every((s, i) => s === expected[i]);

    suite.compare("write_rate_tail_open", w.done / w.secs, "events/s", "write_rate_console_idle", { higherIsBetter: true, minRatio: 0.9, note: `${w.done} asserts in ${w.secs.toFixed(1)} s while the tail follows them` });
    suite.add("events_received", { value: c.events, unit: "events", target: `value == ${w.done}`, met: c.events === w.done && c.lastSeq - startSeq === w.done });
    suite.add("rows_kept", { value: c.rows, unit: "rows", target: `value == ${Math.min(MAX_TAIL_ROWS, w.done)} (MAX_TAIL_ROWS), the newest, none missing`, met: rowsExact });
    suite.add("lagged", { value: c.lagged, unit: "events", target: "value == 0", met: c.lagged === 0 });
    suite.add("drain_after_stop", { value: drainMs, unit: "ms", note: "from the last write's answer to the page showing its seq" });
    suite.add("heap_empty", { value: heapEmpty, unit: "MiB" });
    if (heapAtCap !== undefined) suite.add("heap_at_cap", { value: heapAtCap, unit: "MiB", note: `first sample with ${MAX_TAIL_ROWS} rows` });
    suite.add("heap_max_after_cap", { value: Math.max(...heapSamples, heapEnd), unit: "MiB" });
    const growth = heapEnd / (heapAtCap ?? heapEnd);
    suite.add("heap_end_over_at_cap", { value: growth, unit: "x", target: "value <= 1.5", met: growth <= 1.5, note: `${heapEnd.toFixed(2)} MiB after ${w.done} events` });
    suite.write();
  } finally {
    await browser.close();
    await daemon.stop();
  }
}
