/**
 * The console's only way to the daemon: the ordinary wire routes, with the bearer token this
 * tab was given (kept in sessionStorage: one entry per tab, gone when the tab closes).
 *
 *   const { solutions } = await wire("POST", "/v1/query", { goal: "(dog ?x)", context: "CxPets" });
 *   for await (const frame of stream(token, cursor, signal)) ...
 */
export const TOKEN_KEY = "koinii.token";

export const token = () => sessionStorage.getItem(TOKEN_KEY) ?? "";

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** A refusal exactly as the wire answered it: its status and its `{ok:false, type, error}` body. */
export class WireRefusal extends Error {
  constructor(status, body) {
    super(`${status} ${body.type}: ${body.error}`);
    this.status = status;
    this.body = body;
  }
}

function headers(json) {
  const h = {};
  if (json) h["content-type"] = "application/json";
  const t = token();
  if (t) h.authorization = `Bearer ${t}`;
  return h;
}

async function refusalOf(res) {
  const text = await res.text();
  try {
    return new WireRefusal(res.status, JSON.parse(text));
  } catch {
    return new WireRefusal(res.status, { ok: false, type: "protocol", error: `the daemon answered ${res.status} with no JSON body` });
  }
}

/** One wire request; resolves with the `ok: true` answer, rejects with a WireRefusal. */
export async function wire(method, path, body) {
  const res = await fetch(path, { method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" });
  if (!res.ok) throw await refusalOf(res);
  const json = await res.json();
  if (json.ok !== true) throw new WireRefusal(res.status, json);
  return json;
}

/** A promise as `{value}` or `{error}`: a page section shows its own refusal and the others still show. */
export const settle = (p) => p.then((value) => ({ value }), (error) => ({ error }));

/** The term naming a sentex by its handle, as replies and ballots name their target. */
export const sx = (handle) => `(sentexHandle ${handle})`;

/**
 * A subscription's Server-Sent Events, read with fetch so the bearer header goes along
 * (EventSource cannot send one). Yields `{seq, event}` for each event frame and
 * `{lagged}` for each `event: lagged` frame, until `signal` aborts or the stream ends.
 */
export async function* stream(subToken, cursor, signal) {
  const q = new URLSearchParams({ token: subToken });
  if (cursor !== undefined) q.set("cursor", String(cursor));
  const res = await fetch(`/v1/stream?${q}`, { headers: headers(false), signal, cache: "no-store" });
  if (!res.ok) throw await refusalOf(res);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let kind = "message";
        let data;
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) kind = line.slice(7);
          else if (line.startsWith("data: ")) data = JSON.parse(line.slice(6));
        }
        if (data === undefined) continue; // a heartbeat comment
        if (kind === "lagged") yield { lagged: data.lagged };
        else yield { seq: data.seq, event: data };
      }
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

/**
 * Contexts named by the genlCx edges (stored in CxUniverse) and by the registered agents,
 * each with its cone: itself, what it reaches over edges, and CxCore with its own cone.
 */
export async function contextsWithCones() {
  const [edges, agents] = await Promise.all([wire("POST", "/v1/match", { sentence: "(genlCx ?viewer ?seen)", context: "CxUniverse" }), wire("GET", "/v1/agents")]);
  const seen = new Map();
  const names = new Set(["CxCore", "CxUniverse"]);
  for (const e of edges.sentexes) {
    const m = /^\(genlCx (\S+) (\S+)\)$/.exec(e.sentence);
    if (!m) continue;
    names.add(m[1]).add(m[2]);
    seen.set(m[1], [...(seen.get(m[1]) ?? []), m[2]]);
  }
  for (const a of agents.agents) names.add(a.context);
  const coneOf = (c) => {
    const cone = new Set();
    const stack = [c, "CxCore"];
    while (stack.length) {
      const x = stack.pop();
      if (cone.has(x)) continue;
      cone.add(x);
      stack.push(...(seen.get(x) ?? []));
    }
    return [...cone].sort();
  };
  return [...names].sort().map((name) => ({ name, cone: coneOf(name) }));
}
