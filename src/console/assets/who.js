/**
 * Who is connected: this daemon (its /health), every daemon of the cluster (GET /v1/cluster:
 * role, epoch, applied seq, apply lag, last seen, unreachable), the registered agents, every
 * subscription the token may see with its cursor, lag, parked polls, stream and lagged count,
 * and the open queries with their claims. Read again every WHO_REFRESH_MS.
 */
import { html, Component, Refusal, SentexLink, yesNo, ago } from "./ui.js";
import { wire, settle } from "./api.js";

/** How often the page reads again, in milliseconds. */
export const WHO_REFRESH_MS = 1000;

/** The /health fields of this daemon's place in a cluster (role, epoch, applied seq, apply lag); shown when present. */
const CLUSTER_FIELDS = ["role", "epoch", "appliedSeq", "lagMs"];

export class Who extends Component {
  state = { health: null, members: null, agents: null, watchers: null, queries: null, readAt: null };
  timer = null;

  componentDidMount() {
    this.read();
  }

  componentWillUnmount() {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  async read() {
    const health = await settle(fetch("/health", { cache: "no-store" }).then((r) => r.json()));
    const [members, agents, watchers, queries, answers, claims] = await Promise.all([
      settle(wire("GET", "/v1/cluster")),
      settle(wire("GET", "/v1/agents")),
      settle(wire("GET", "/v1/watchers")),
      settle(wire("POST", "/v1/match", { sentence: "(queries ?agent ?question)", context: "?ctx" })),
      settle(wire("POST", "/v1/match", { sentence: "(answers ?agent ?content ?target)", context: "?ctx" })),
      settle(wire("POST", "/v1/match", { sentence: "(claims ?agent ?target ?until)", context: "?ctx" })),
    ]);
    this.setState({ health, members, agents, watchers, queries: openQueries(queries, answers, claims), readAt: Date.now() });
    if (this.timer !== undefined) this.timer = setTimeout(() => this.read(), WHO_REFRESH_MS);
  }

  render(_, { health, members, agents, watchers, queries, readAt }) {
    const head = health?.value?.seq;
    const cluster = CLUSTER_FIELDS.filter((f) => health?.value?.[f] !== undefined);
    return html`<section class="who">
      <h2>Who is connected</h2>
      <h3>This daemon</h3>
      ${health?.error ? html`<${Refusal} error=${health.error} />` : null}
      <p class="daemon">version ${health?.value?.version ?? "…"} · head seq <span id="head-seq">${head ?? "…"}</span> · read ${readAt ? new Date(readAt).toLocaleTimeString() : "…"}</p>
      <div class="cluster" id="cluster">
        <h4>Cluster role, epoch and apply lag</h4>
        ${cluster.length
          ? html`<dl class="facts">${cluster.map((f) => html`<dt>${f}</dt><dd>${String(health.value[f])}</dd>`)}</dl>`
          : html`<p class="empty">a single daemon: its /health names no role, epoch, applied seq or apply lag</p>`}
      </div>
      <h3>Cluster</h3>
      ${members?.error ? html`<${Refusal} error=${members.error} />` : html`<${Members} members=${members?.value?.members ?? []} />`}
      <h3>Agents</h3>
      ${agents?.error ? html`<${Refusal} error=${agents.error} />` : html`<table class="agents"><thead><tr><th>agent</th><th>context</th><th>display name</th><th>trust</th></tr></thead>
        <tbody>${(agents?.value?.agents ?? []).map((a) => html`<tr><td>${a.id}</td><td>${a.context}</td><td>${a.displayName ?? ""}</td><td>${a.trust ?? ""}</td></tr>`)}</tbody></table>`}
      <h3>Subscriptions</h3>
      ${watchers?.error ? html`<${Refusal} error=${watchers.error} />` : html`<table class="watchers"><thead><tr><th>token</th><th>owner</th><th>context</th><th>goal</th><th>cursor</th><th title="head seq minus cursor">lag (seqs)</th><th title="undelivered events in its ring">pending</th><th>parked polls</th><th>stream</th><th>lagged</th></tr></thead>
        <tbody>${(watchers?.value?.watchers ?? []).map(
          (w) => html`<tr data-token=${w.token} data-lag=${head === undefined ? "" : head - w.cursor} data-pending=${w.pending} data-parked=${w.parked}>
            <td class="token">${w.token.slice(0, 12)}…</td><td>${w.owner}</td><td>${w.context ?? "every"}</td><td>${w.goal ?? ""}</td><td>${w.cursor}</td>
            <td class="lag">${head === undefined ? "" : head - w.cursor}</td><td>${w.pending}</td><td>${w.parked}</td><td>${yesNo(w.streaming)}</td><td class=${w.lagged ? "warn" : ""}>${w.lagged}</td>
          </tr>`,
        )}</tbody></table>`}
      <h3>Open queries and claims</h3>
      ${queries?.error ? html`<${Refusal} error=${queries.error} />` : html`<table class="queries"><thead><tr><th>query</th><th>asked by</th><th>question</th><th>context</th><th>answers</th><th>claimed by</th><th>lease left</th></tr></thead>
        <tbody>${(queries?.value ?? []).map(
          (q) => html`<tr><td><${SentexLink} handle=${q.handle} /></td><td>${q.agent}</td><td class="sentence">${q.question}</td><td>${q.context}</td><td>${q.answers}</td><td>${q.claim?.holder ?? ""}</td><td>${q.claim ? ago(q.claim.until - Date.now()) : ""}</td></tr>`,
        )}</tbody></table>`}
    </section>`;
  }
}

/**
 * Every daemon on the store, as each last recorded itself. The writer is highlighted: the
 * live member claiming the writer role under the highest epoch (a dead writer keeps its old
 * row, epoch and all, until it is forgotten).
 */
function Members({ members }) {
  const writer = members.filter((m) => m.role === "writer" && m.state === "live").reduce((a, m) => (a && a.epoch >= m.epoch ? a : m), undefined);
  return html`<table class="members"><thead><tr><th>daemon</th><th>role</th><th>epoch</th><th>applied seq</th><th>apply lag</th><th>last seen</th><th>state</th></tr></thead>
    <tbody>${members.map(
      (m) => html`<tr class=${[m === writer ? "writer" : "", m.state].join(" ")} data-url=${m.url ?? ""} data-role=${m.role} data-epoch=${m.epoch} data-applied=${m.appliedSeq} data-state=${m.state} data-current-writer=${yesNo(m === writer)}>
        <td class="url">${m.url ?? "(not listening yet)"}</td><td>${m.role}${m === writer ? " ★" : ""}</td><td>${m.epoch}</td><td>${m.appliedSeq}</td><td>${ago(m.lagMs)}</td><td>${ago(m.seenAgoMs)} ago</td><td class=${m.state === "unreachable" ? "warn" : ""}>${m.state}</td>
      </tr>`,
    )}</tbody></table>`;
}

const ARGS_RE = /^\((\S+) (\S+) (.*)\)$/;
const targetOf = (s) => Number(/\(sentexHandle ([0-9]+)\)/.exec(s)?.[1]);

/** Every query node with its answer count and its live claim (the latest lease still running, by this browser's clock). */
function openQueries(queries, answers, claims) {
  const failed = [queries, answers, claims].find((p) => p.error);
  if (failed) return failed;
  const counts = new Map();
  for (const a of answers.value.sentexes) counts.set(targetOf(a.sentence), (counts.get(targetOf(a.sentence)) ?? 0) + 1);
  const live = new Map();
  const now = Date.now();
  for (const c of claims.value.sentexes) {
    const m = /^\(claims (\S+) \(sentexHandle ([0-9]+)\) ([0-9]+)\)$/.exec(c.sentence);
    if (!m || !(Number(m[3]) > now)) continue;
    const prev = live.get(Number(m[2]));
    if (!prev || Number(m[3]) > prev.until) live.set(Number(m[2]), { holder: m[1], until: Number(m[3]) });
  }
  return {
    value: queries.value.sentexes
      .map((q) => {
        const m = ARGS_RE.exec(q.sentence);
        return { handle: q.handle, agent: m?.[2] ?? "", question: m?.[3] ?? q.sentence, context: q.context, answers: counts.get(q.handle) ?? 0, claim: live.get(q.handle) };
      })
      .sort((a, b) => a.handle - b.handle),
  };
}
