/**
 * What the kill switch does to DMs that arrive while it is on (R22): they are the humans',
 * never the responder's later. A start refused by a kill switch leaves a marker in the data
 * directory (`switched-off.json`, `{since_ms, switch}`, written once: the first refusal's time
 * stays); the next enabled boot turns it into a `kill_switch_window {since_ms, until_ms,
 * switch}` audit record and removes it. Catch-up leaves every DM node created inside a
 * recorded window for a human and lists it (`switched_off`), so switching the responder back
 * on never answers what arrived while it was off (a human may already have).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AuditRecord } from "./audit.js";

export const switchedOffFile = "switched-off.json";
export const windowAction = "kill_switch_window";

export type KillSwitch = "env" | "charter";

export interface SwitchedOff {
  readonly sinceMs: number;
  readonly switch: KillSwitch;
}

/** A span of time the responder was switched off, epoch ms, both ends inclusive. */
export interface OffWindow {
  readonly fromMs: number;
  readonly toMs: number;
}

/** Record that a start was refused by `sw` at `nowMs`, unless an earlier refusal is already recorded. */
export function noteSwitchedOff(dataDir: string, sw: KillSwitch, nowMs: number): void {
  const path = join(dataDir, switchedOffFile);
  if (existsSync(path)) return;
  mkdirSync(dataDir, { recursive: true, mode: 0o750 });
  writeFileSync(path, JSON.stringify({ since_ms: nowMs, switch: sw }) + "\n", { mode: 0o640, flag: "wx" });
}

/** The recorded refusal, if any (an unreadable marker counts from the epoch: every earlier DM is left). */
export function readSwitchedOff(dataDir: string): SwitchedOff | null {
  const path = join(dataDir, switchedOffFile);
  if (!existsSync(path)) return null;
  try {
    const v = JSON.parse(readFileSync(path, "utf8")) as { since_ms?: unknown; switch?: unknown };
    const sinceMs = Number.isSafeInteger(v.since_ms) ? (v.since_ms as number) : 0;
    return { sinceMs, switch: v.switch === "charter" ? "charter" : "env" };
  } catch {
    return { sinceMs: 0, switch: "env" };
  }
}

/** Remove the marker once its window is in the audit. */
export function clearSwitchedOff(dataDir: string): void {
  rmSync(join(dataDir, switchedOffFile), { force: true });
}

/** The window an audit record names, or null. */
export function windowOf(r: AuditRecord): OffWindow | null {
  if (r.action !== windowAction) return null;
  const { since_ms: from, until_ms: to } = r.detail;
  return Number.isSafeInteger(from) && Number.isSafeInteger(to) ? { fromMs: from as number, toMs: to as number } : null;
}

export function inWindow(windows: readonly OffWindow[], atMs: number): boolean {
  return windows.some((w) => atMs >= w.fromMs && atMs <= w.toMs);
}
