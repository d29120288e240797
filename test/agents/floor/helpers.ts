/** Rigs for the floor tests that go through the KB: ingest posting and KB readouts. */
import type { FloorDecision, RoomHistory } from "../../../src/agents/floor/index.js";

/** The ingest secret the tests start endpoints (and `koinii floor`) with. */
export const INGEST_SECRET = "floor-test-ingest-secret-0123456789";
export const ingestAuth = { authorization: `Bearer ${INGEST_SECRET}` };

/** POST a JSON body to the ingest endpoint, with INGEST_SECRET unless `headers` say otherwise; answers status and parsed body. */
export async function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const r = await fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...ingestAuth, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

export const decisionText = (d: FloorDecision): string => `${d.action}${"reason" in d ? `(${d.reason})` : ""}`;

/** [text, decision, holder after] per utterance, in Ord order, read from the KB. */
export function kbDecisions(room: RoomHistory): [string, string, string | undefined][] {
  return room.utterances.map((u) => {
    const d = u.decisions[0];
    return [u.text, d ? decisionText(d.decision) : "(none)", d?.holderId];
  });
}

/** What he did with each turn, in Ord order: the reply text, or (why) for a silence. */
export function kbOutcomes(room: RoomHistory): string[] {
  return room.utterances.flatMap((u) => [...u.replies.map((r) => r.text), ...u.silences.map((s) => `(${s.why})`)]);
}
