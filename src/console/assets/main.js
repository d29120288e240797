/**
 * The console's entry: the token bar, the navigation and a hash router over the four pages
 * (#/tail, #/query, #/why/<handle>, #/who). A `#token=...` fragment (what `koinii console`
 * prints) is moved into this tab's sessionStorage and taken out of the address bar.
 */
import { render } from "../vendor/preact.mjs";
import { html, Component, Refusal } from "./ui.js";
import { token, setToken, wire } from "./api.js";
import { Tail } from "./tail.js";
import { Query } from "./query.js";
import { Why } from "./why.js";
import { Who } from "./who.js";

function takeTokenFromFragment() {
  const m = /^#token=([^&]*)/.exec(location.hash);
  if (!m) return;
  setToken(decodeURIComponent(m[1]));
  history.replaceState(null, "", `${location.pathname}#/tail`);
}

const route = () => {
  const [, page = "tail", arg] = location.hash.split("/");
  return { page, arg };
};

class TokenBar extends Component {
  state = { draft: "", check: null, error: null };

  componentDidMount() {
    this.check();
  }

  /** Ask the wire who we are: any read route answers 401 to a missing or wrong token. */
  async check() {
    try {
      const { agents } = await wire("GET", "/v1/agents");
      this.setState({ check: `accepted (${agents.length} agents registered)`, error: null });
    } catch (e) {
      this.setState({ check: null, error: e });
    }
  }

  use = (ev) => {
    ev.preventDefault();
    setToken(this.state.draft.trim());
    this.setState({ draft: "" });
    this.check();
    this.props.onChange();
  };

  forget = () => {
    setToken("");
    this.check();
    this.props.onChange();
  };

  render(_, { draft, check, error }) {
    const have = token() !== "";
    return html`<form class="tokenbar" onSubmit=${this.use}>
      <label>bearer token <input id="token" type="password" autocomplete="off" placeholder=${have ? "set for this tab" : "none (open mode)"} value=${draft} onInput=${(e) => this.setState({ draft: e.target.value })} /></label>
      <button type="submit">use</button>
      ${have ? html`<button type="button" onClick=${this.forget}>forget</button>` : null}
      <span class="token-state" data-accepted=${check ? "yes" : "no"}>${check ?? ""}</span>
      <${Refusal} error=${error} />
    </form>`;
  }
}

class App extends Component {
  state = { route: route(), epoch: 0 };

  componentDidMount() {
    addEventListener("hashchange", () => this.setState({ route: route() }));
  }

  render(_, { route: { page, arg }, epoch }) {
    const pages = {
      tail: () => html`<${Tail} key=${`tail${epoch}`} />`,
      query: () => html`<${Query} key=${`query${epoch}`} />`,
      why: () => html`<${Why} key=${`why${arg}-${epoch}`} handle=${Number(arg)} />`,
      who: () => html`<${Who} key=${`who${epoch}`} />`,
    };
    const nav = (p, label) => html`<a href=${`#/${p}`} class=${page === p ? "current" : ""}>${label}</a>`;
    return html`<header>
        <h1>koinii</h1>
        <nav>${nav("tail", "Live tail")} ${nav("query", "Query")} ${nav("who", "Who is connected")} <${WhyJump} /></nav>
        <${TokenBar} onChange=${() => this.setState({ epoch: epoch + 1 })} />
      </header>
      <main data-page=${page}>${(pages[page] ?? pages.tail)()}</main>`;
  }
}

class WhyJump extends Component {
  state = { handle: "" };
  go = (ev) => {
    ev.preventDefault();
    if (/^[1-9][0-9]*$/.test(this.state.handle)) location.hash = `#/why/${this.state.handle}`;
  };
  render(_, { handle }) {
    return html`<form class="whyjump" onSubmit=${this.go}><input placeholder="handle" size="8" value=${handle} onInput=${(e) => this.setState({ handle: e.target.value.trim() })} /><button type="submit">why</button></form>`;
  }
}

takeTokenFromFragment();
render(html`<${App} />`, document.getElementById("app"));
