import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Charter, type Dm, parseCharter } from "../../../src/agents/responder/index.js";

export const FRIEND = "bot-friend";
export const FRIEND2 = "bot-friend-2";
export const STRANGER = "bot-stranger";

export function tmp(prefix = "responder-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function charter(over: Record<string, unknown> = {}, limits: Record<string, number> = {}): Charter {
  return parseCharter({
    version: 1,
    enabled: true,
    allowlist: { [FRIEND]: "Rex", [FRIEND2]: "Tiramisu" },
    limits: { max_replies_per_day: 12, max_replies_per_conversation_per_day: 4, min_gap_seconds_per_conversation: 120, max_reply_chars: 1500, ...limits },
    escalate_keywords: ["deal", "money", "api key", "pay", "token"],
    voice: "You are the bounded responder.",
    ...over,
  });
}

export function dm(over: Partial<Dm> = {}): Dm {
  return { senderId: FRIEND, senderName: "Rex", conversationId: "c1", messageId: "m1", text: "hello there", ...over };
}

/** 2026-07-18T12:00:00Z */
export const NOON = Date.UTC(2026, 6, 18, 12, 0, 0);
