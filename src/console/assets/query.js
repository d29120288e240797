/**
 * Query: a goal box, a context picker (the contexts the genlCx edges and the registry name,
 * each with its cone), the solutions as a table, and whether the answer was truncated (and
 * the seq it reflects, when the answer names one).
 */
import { html, Component, Refusal, yesNo } from "./ui.js";
import { wire, contextsWithCones } from "./api.js";

export class Query extends Component {
  state = { contexts: [], context: "", goal: "", limit: "", answer: null, error: null, busy: false };

  async componentDidMount() {
    try {
      const contexts = await contextsWithCones();
      this.setState({ contexts, context: this.state.context || (contexts.find((c) => c.name !== "CxCore" && c.name !== "CxUniverse") ?? contexts[0])?.name || "" });
    } catch (e) {
      this.setState({ error: e });
    }
  }

  run = async (ev) => {
    ev.preventDefault();
    const { goal, context, limit } = this.state;
    const body = { goal: goal.trim(), context };
    if (limit.trim() !== "") body.limit = Number(limit);
    this.setState({ busy: true, error: null });
    try {
      this.setState({ answer: await wire("POST", "/v1/query", body), busy: false });
    } catch (e) {
      this.setState({ error: e, answer: null, busy: false });
    }
  };

  render(_, { contexts, context, goal, limit, answer, error, busy }) {
    const cone = contexts.find((c) => c.name === context)?.cone ?? [];
    const columns = answer ? [...new Set(answer.solutions.flatMap((s) => Object.keys(s)))] : [];
    return html`<section class="query">
      <h2>Query</h2>
      <form class="querybox" onSubmit=${this.run}>
        <label>goal <input name="goal" size="48" placeholder="(and (dog ?x) (likes ?x ?y))" value=${goal} onInput=${(e) => this.setState({ goal: e.target.value })} /></label>
        <label>in context <select name="context" value=${context} onChange=${(e) => this.setState({ context: e.target.value })}>
          ${contexts.map((c) => html`<option value=${c.name}>${c.name}${c.cone.length > 1 ? ` (sees ${c.cone.length - 1})` : ""}</option>`)}
        </select></label>
        <label>limit <input name="limit" size="6" placeholder="default" value=${limit} onInput=${(e) => this.setState({ limit: e.target.value })} /></label>
        <button type="submit" disabled=${busy}>run</button>
      </form>
      <p class="cone">cone of ${context || "—"}: ${cone.join(", ") || "—"}</p>
      <${Refusal} error=${error} />
      ${answer &&
      html`<p class="answer-meta" data-truncated=${yesNo(answer.truncated)} data-count=${answer.solutions.length}>
          ${answer.solutions.length} solutions · truncated: <b class=${answer.truncated ? "warn" : ""}>${yesNo(answer.truncated)}</b>
          ${answer.asOf !== undefined ? html` · as of seq <span class="asof">${answer.asOf}</span>` : null}
        </p>
        <table class="solutions">
          <thead><tr>${columns.length ? columns.map((c) => html`<th>${c}</th>`) : html`<th>(no variables: the goal holds)</th>`}</tr></thead>
          <tbody>${answer.solutions.map((s) => html`<tr>${columns.length ? columns.map((c) => html`<td>${s[c] ?? ""}</td>`) : html`<td>yes</td>`}</tr>`)}</tbody>
        </table>`}
    </section>`;
  }
}
