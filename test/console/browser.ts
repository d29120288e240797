/**
 * A real browser for the console's tests and bench: Debian's chromium-headless-shell driven by
 * playwright-core, pages that record every console error and CSP violation, screenshots (into a
 * temporary directory, or docs/console/ under `npm run docs:console`), and a "foreign" page
 * server on another loopback port.
 */
import { createServer, type Server } from "node:http";
import { existsSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";

/** The browser the suite's provisioning found (scripts/provision.sh exports it), else Debian's path. */
export const CHROMIUM = process.env.KOINII_TEST_CHROMIUM ?? "/usr/bin/chromium-headless-shell";
/**
 * Where screenshots go: `KOINII_SHOTS_DIR` when set (`npm run docs:console` sets docs/console,
 * the pictures docs/console.md shows), else a directory under the system's temp, so a test run
 * leaves the working tree as it found it.
 */
export const SHOTS = process.env.KOINII_SHOTS_DIR ? resolve(process.env.KOINII_SHOTS_DIR) : join(tmpdir(), "koinii-console-shots");

export async function launchBrowser(extraArgs: string[] = []): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: the suite's provisioning brings it up (bash scripts/provision.sh chromium)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", ...extraArgs],
  });
}

export interface ConsolePage {
  page: Page;
  /** Console errors and page errors seen so far (a CSP violation is one). */
  errors: string[];
  close(): Promise<void>;
}

/** A fresh browser context (its own sessionStorage) with one page at `url`. */
export async function openConsole(browser: Browser, url: string): Promise<ConsolePage> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  const errors: string[] = [];
  page.on("console", (m) => {
    // A refused fetch logs "Failed to load resource: ... 401"; the page shows those itself.
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(url);
  return { page, errors, close: () => ctx.close() };
}

export async function shoot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** A plain page on another loopback port: the origin a foreign site would have. */
export async function foreignOrigin(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>elsewhere</title><p>a page on another origin</p>");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((r) => server.close(() => r())) };
}
