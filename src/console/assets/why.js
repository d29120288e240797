/**
 * Why: one sentex's page. Its text, context, strength, creator, handle and locator; whether
 * it is believed and why (the justification tree: each support's rule and premises, each
 * premise expandable in turn); the contradictions and disputes it is a side of; its replies
 * (answers, endorsements, disputes, ballots with their tally, rulings); and its history in
 * the feed. The page follows the feed and reads again when an event arrives, so a retracted
 * premise shows at once.
 */
import { html, Component, Refusal, SentexLink, yesNo } from "./ui.js";
import { wire, stream, sx, settle } from "./api.js";

/** Events the history section reads back from the durable log at most. */
export const MAX_HISTORY_EVENTS = 500;
/** A burst of feed events causes one re-read after this many milliseconds. */
export const WHY_REFRESH_MS = 200;

/** Reply shapes on a target, each matched in every context (`?ctx`). */
const REPLIES = [
  ["answers", (t) => `(answers ?agent ?content ${t})`],
  ["endorses", (t) => `(endorses ?agent ${t})`],
  ["disputes", (t) => `(disputes ?agent ${t})`],
  ["justifies", (t) => `(justifies ?agent ?ground ${t})`],
  ["votesFor", (t) => `(votesFor ?agent ${t})`],
  ["votesAgainst", (t) => `(votesAgainst ?agent ${t})`],
  ["notUnderstood", (t) => `(notUnderstood ?agent ${t})`],
  ["refuse", (t) => `(refuse ?agent ${t})`],
];

/** A sentex and its why, or the refusal of either (a retracted sentex has a why but no record). */
async function loadNode(handle) {
  const [sentex, why] = await Promise.all([settle(wire("GET", `/v1/sentex/${handle}`)), settle(wire("POST", "/v1/why", { handle }))]);
  return { sentex: sentex.value?.sentex, why: why.value, error: why.error ?? (sentex.error?.status === 404 ? undefined : sentex.error) };
}

function Belief({ why }) {
  if (!why) return null;
  const label = why.believed ? "believed" : `not believed: ${why.reason ?? "unknown"}`;
  return html`<span class=${why.believed ? "belief yes" : "belief no"} data-believed=${yesNo(why.believed)}>${label}</span>${why.premise ? html` <span class="tag">premise</span>` : null}${why.strength ? html` <span class="tag">${why.strength}</span>` : null}`;
}

/** One node of the justification tree; its supports open on click (the root's start open). */
class WhyNode extends Component {
  state = { node: null, rules: new Map(), open: this.props.open ?? false };

  componentDidMount() {
    this.load();
  }

  componentDidUpdate(prev) {
    if (prev.version !== this.props.version) this.load();
  }

  async load() {
    const node = await loadNode(this.props.handle);
    const rules = new Map();
    for (const j of node.why?.support ?? []) {
      if (j.rule !== undefined && !rules.has(j.rule)) rules.set(j.rule, (await settle(wire("GET", `/v1/sentex/${j.rule}`))).value?.sentex);
    }
    this.setState({ node, rules });
  }

  render({ handle, version, depth = 0 }, { node, rules, open }) {
    if (!node) return html`<li class="why-node loading">#${handle} …</li>`;
    const { sentex, why, error } = node;
    const support = why?.support ?? [];
    const toggle = support.length ? html`<button type="button" class="toggle" aria-expanded=${open ? "true" : "false"} onClick=${() => this.setState({ open: !open })}>${open ? "▾" : "▸"}</button>` : html`<span class="toggle-none">·</span>`;
    return html`<li class="why-node" data-handle=${handle}>
      ${toggle} <${SentexLink} handle=${handle} /> <span class="sentence">${sentex?.sentence ?? "(no longer stored)"}</span>
      ${sentex ? html` <span class="ctx">${sentex.context}</span>` : null} <${Belief} why=${why} />
      <${Refusal} error=${error} />
      ${open && support.length
        ? html`<ul class="supports">${support.map(
            (j, i) => html`<li class="support" key=${i}>
              ${j.rule !== undefined ? html`<span class="rule">by rule <${SentexLink} handle=${j.rule} /> <span class="sentence">${rules.get(j.rule)?.sentence ?? ""}</span></span>` : html`<span class="rule">by a built-in step</span>`}
              ${j.edges?.length ? html` <span class="edges">across genlCx ${j.edges.map((e) => html`<${SentexLink} handle=${e} /> `)}</span>` : null}
              <ul class="premises">${j.antecedents.map((a) => html`<${WhyNode} key=${a} handle=${a} version=${version} depth=${depth + 1} />`)}</ul>
            </li>`,
          )}</ul>`
        : null}
    </li>`;
  }
}

export class Why extends Component {
  state = { node: null, sections: {}, version: 0, history: null };
  abort = new AbortController();
  subToken = null;
  timer = null;

  componentDidMount() {
    this.load();
    this.follow();
  }

  componentWillUnmount() {
    this.abort.abort();
    clearTimeout(this.timer);
    if (this.subToken) wire("POST", "/v1/unwatch", { token: this.subToken }).catch(() => undefined);
  }

  /** Follow every event; a burst causes one re-read of the page. */
  async follow() {
    try {
      const w = await wire("POST", "/v1/watch", {});
      this.subToken = w.token;
      for await (const f of stream(w.token, w.cursor, this.abort.signal)) {
        if (f.event === undefined) continue;
        this.timer ??= setTimeout(() => {
          this.timer = null;
          this.load();
        }, WHY_REFRESH_MS);
      }
    } catch (e) {
      if (!this.abort.signal.aborted) this.setState({ followError: e });
    }
  }

  async load() {
    const h = this.props.handle;
    const node = await loadNode(h);
    this.setState({ node, version: this.state.version + 1 });
    const s = node.sentex;
    const target = sx(h);
    const [replies, tally, contradictions, disputes, rulings, ruled] = await Promise.all([
      settle(Promise.all(REPLIES.map(([pred, shape]) => wire("POST", "/v1/match", { sentence: shape(target), context: "?ctx" }).then((r) => r.sentexes.map((x) => ({ ...x, pred })))))).then((r) => (r.value ? { value: r.value.flat() } : r)),
      settle(wire("POST", "/v1/tally", { handle: h })),
      s ? settle(wire("POST", "/v1/contradictions", { context: s.context })) : { value: { contradictions: [], conflicts: [] } },
      s ? settle(wire("POST", "/v1/disputes", { context: s.context })) : { value: { disputes: [] } },
      settle(wire("POST", "/v1/match", { sentence: "(ruling ?arbiter ?dispute ?upheld)", context: "?ctx" })),
      settle(wire("POST", "/v1/who-ruled", { handle: h })),
    ]);
    const sides = (c) => c.sides.some((x) => x.handle === h);
    const mentions = new RegExp(`\\(sentexHandle ${h}\\)`);
    this.setState({
      sections: {
        replies,
        tally,
        clashes: contradictions.value ? { value: [...contradictions.value.contradictions, ...contradictions.value.conflicts].filter(sides) } : contradictions,
        disputes: disputes.value ? { value: disputes.value.disputes.filter(sides) } : disputes,
        rulings: rulings.value ? { value: rulings.value.sentexes.filter((r) => mentions.test(r.sentence)) } : rulings,
        ruled,
      },
    });
    if (s && this.state.history === null) this.loadHistory(s);
  }

  /** The events that added or removed this sentence in its context's cone, read back from the durable log. */
  async loadHistory(s) {
    let token;
    try {
      const w = await wire("POST", "/v1/watch", { goal: s.sentence, context: s.context, from: 0 });
      token = w.token;
      const events = [];
      let cursor = w.cursor;
      for (;;) {
        const a = await wire("POST", "/v1/poll", { token, cursor, limit: 1000 });
        events.push(...a.events);
        if (a.events.length === 0 || events.length >= MAX_HISTORY_EVENTS || a.cursor === cursor) break;
        cursor = a.cursor;
      }
      this.setState({ history: { value: events.slice(0, MAX_HISTORY_EVENTS) } });
    } catch (e) {
      this.setState({ history: { error: e } });
    } finally {
      if (token) wire("POST", "/v1/unwatch", { token }).catch(() => undefined);
    }
  }

  render({ handle }, { node, sections, version, history, followError }) {
    if (!node) return html`<section class="why"><h2>Why #${handle}</h2><p>reading…</p></section>`;
    const { sentex: s, why, error } = node;
    return html`<section class="why">
      <h2>Why #${handle}</h2>
      <${Refusal} error=${error ?? followError} />
      ${s
        ? html`<dl class="facts">
            <dt>sentence</dt><dd class="sentence" id="why-sentence">${s.sentence}</dd>
            <dt>context</dt><dd>${s.context}</dd>
            <dt>strength</dt><dd>${s.strength}${s.derived ? " (derived)" : ""}</dd>
            <dt>creator</dt><dd>${s.creator ?? "—"}</dd>
            <dt>handle</dt><dd>${s.handle} (stored at seq ${s.seq})</dd>
            <dt>locator</dt><dd class="locator">${s.locator}</dd>
          </dl>`
        : html`<p class="gone">#${handle} is no longer stored.</p>`}
      <p class="verdict" id="verdict"><${Belief} why=${why} /></p>
      <h3>Justification</h3>
      <ul class="why-tree"><${WhyNode} key=${handle} handle=${handle} version=${version} open=${true} /></ul>
      <h3>Contradictions and disputes</h3>
      <${Section} part=${sections.clashes} empty="no contradiction or conflict has this sentex as a side" render=${(cs) => html`<ul>${cs.map((c) => html`<li>${c.kind} ${c.id}: ${c.sides.map((x) => html`<${SentexLink} handle=${x.handle} /> ${x.sentence} (${x.context}, ${x.strength}) `)}</li>`)}</ul>`} />
      <${Section} part=${sections.disputes} empty="no dispute" render=${(ds) => html`<ul>${ds.map((d) => html`<li>dispute ${d.id} (${d.class}): <b>${d.state}</b></li>`)}</ul>`} />
      <h3>Replies</h3>
      <${Section} part=${sections.replies} empty="no replies" render=${(rs) => html`<table class="replies"><tbody>${rs.map((r) => html`<tr><td>${r.pred}</td><td><${SentexLink} handle=${r.handle} /></td><td class="sentence">${r.sentence}</td><td>${r.context}</td></tr>`)}</tbody></table>`} />
      <${Section} part=${sections.tally} render=${(t) => html`<p class="tally">ballots: ${t.for} for, ${t.against} against, ${t.spoiled} spoiled</p>`} />
      <${Section} part=${sections.rulings} empty="no ruling names it" render=${(rs) => html`<ul>${rs.map((r) => html`<li>ruling <${SentexLink} handle=${r.handle} /> ${r.sentence}</li>`)}</ul>`} />
      <${Section} part=${sections.ruled} render=${(r) => (r.ruling ? html`<p>this sentex is a ruling by ${r.ruling.arbiter} on ${r.ruling.disputeIds.join(", ")}</p>` : null)} />
      <h3>History in the feed</h3>
      <${Section} part=${history ?? undefined} empty="no event in the retained log" render=${(evs) => html`<table class="history"><tbody>${evs.flatMap((e) => [
        ...e.added.map((a) => html`<tr><td>${e.seq}</td><td>+</td><td><${SentexLink} handle=${a.handle} /></td><td>${a.context}</td><td>${a.derived ? "derived" : "asserted"}</td></tr>`),
        ...e.removed.map((r) => html`<tr><td>${e.seq}</td><td>−</td><td><${SentexLink} handle=${r.handle} /></td><td>${r.context}</td><td>${r.reason}</td></tr>`),
      ])}</tbody></table>`} />
    </section>`;
  }
}

/** A section's answer, its refusal, or a note that it is empty. */
function Section({ part, empty, render }) {
  if (!part) return html`<p class="loading">reading…</p>`;
  if (part.error) return html`<${Refusal} error=${part.error} />`;
  if (Array.isArray(part.value) && part.value.length === 0) return html`<p class="empty">${empty}</p>`;
  return render(part.value);
}
