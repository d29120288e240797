/**
 * Live tail: every event as the daemon publishes it (a subscription read as a stream), filtered
 * on the daemon by context and standing goal, pausable, resumable from a seq. Rows are kept
 * newest first and capped at MAX_TAIL_ROWS (older rows fall off the bottom; the counters keep
 * counting); a `lagged` frame is shown as a row and in the counters, never hidden.
 */
import { html, Component, Refusal, SentexLink } from "./ui.js";
import { wire, stream } from "./api.js";

/** The most rows the tail keeps in the page; older ones are dropped, so page memory stays bounded. */
export const MAX_TAIL_ROWS = 2000;
/** Rows arriving within this many milliseconds are drawn together. */
export const TAIL_FLUSH_MS = 100;

let rowKey = 0;

/** The rows one event makes: one per added and per removed entry. */
function rowsOf(ev) {
  const out = [];
  for (const a of ev.added) out.push({ key: ++rowKey, seq: ev.seq, op: "add", handle: a.handle, sentence: a.sentence, context: a.context, note: a.derived ? "derived" : a.strength });
  for (const r of ev.removed) out.push({ key: ++rowKey, seq: ev.seq, op: "remove", handle: r.handle, sentence: r.sentence, context: r.context, note: r.reason });
  if (out.length === 0) out.push({ key: ++rowKey, seq: ev.seq, op: "empty", note: "no entry matched" });
  return out;
}

export class Tail extends Component {
  state = { context: "", goal: "", from: "", running: false, error: null, rows: [], events: 0, lastSeq: null, lagged: 0, subToken: null };
  /** Rows received since the last draw, newest last. */
  incoming = [];
  rows = [];
  /** Counters kept outside state between draws (flush copies them in). */
  count = { events: 0, lastSeq: null, lagged: 0 };
  timer = null;
  abort = null;

  componentDidMount() {
    this.start();
  }

  componentWillUnmount() {
    this.stop();
    clearTimeout(this.timer);
  }

  /** Stop reading and drop the subscription (pausing keeps the seq to resume from). */
  stop() {
    this.abort?.abort();
    this.abort = null;
    const t = this.state.subToken;
    if (t) wire("POST", "/v1/unwatch", { token: t }).catch(() => undefined);
  }

  async start(from) {
    this.stop();
    const { context, goal } = this.state;
    const body = {};
    if (context.trim()) body.context = context.trim();
    if (goal.trim()) body.goal = goal.trim();
    if (from !== undefined) body.from = from;
    this.setState({ error: null, running: true, subToken: null });
    const abort = (this.abort = new AbortController());
    try {
      const w = await wire("POST", "/v1/watch", body);
      this.count.lastSeq ??= w.cursor;
      this.setState({ subToken: w.token, lastSeq: this.count.lastSeq });
      if (w.lagged > 0) this.lag(w.lagged);
      for await (const f of stream(w.token, w.cursor, abort.signal)) {
        if (f.lagged !== undefined) this.lag(f.lagged);
        else this.take(f.event);
      }
      if (!abort.signal.aborted) this.setState({ running: false });
    } catch (e) {
      if (!abort.signal.aborted) this.setState({ error: e, running: false });
    }
  }

  take(ev) {
    this.incoming.push(...rowsOf(ev));
    this.count.events++;
    this.count.lastSeq = ev.seq;
    this.schedule();
  }

  lag(n) {
    this.incoming.push({ key: ++rowKey, seq: null, op: "lagged", note: `${n} events lost here: the subscription's ring overflowed` });
    this.count.lagged += n;
    this.schedule();
  }

  schedule() {
    this.timer ??= setTimeout(() => this.flush(), TAIL_FLUSH_MS);
  }

  flush() {
    this.timer = null;
    const fresh = this.incoming.reverse();
    this.incoming = [];
    this.rows = fresh.length >= MAX_TAIL_ROWS ? fresh.slice(0, MAX_TAIL_ROWS) : fresh.concat(this.rows.slice(0, MAX_TAIL_ROWS - fresh.length));
    this.setState({ rows: this.rows, ...this.count });
  }

  pause = () => {
    this.stop();
    this.setState({ running: false, subToken: null, from: this.count.lastSeq === null ? "" : String(this.count.lastSeq) });
  };

  resume = (ev) => {
    ev.preventDefault();
    const f = this.state.from.trim();
    if (f !== "" && !/^[0-9]+$/.test(f)) return this.setState({ error: { message: "resume from: a seq is a whole number" } });
    this.start(f === "" ? undefined : Number(f));
  };

  apply = (ev) => {
    ev.preventDefault();
    this.rows = [];
    this.incoming = [];
    this.count = { events: 0, lastSeq: null, lagged: 0 };
    this.setState({ rows: [], ...this.count });
    this.start();
  };

  render(_, { context, goal, from, running, error, rows, events, lastSeq, lagged }) {
    const field = (name) => (e) => this.setState({ [name]: e.target.value });
    return html`<section class="tail">
      <h2>Live tail</h2>
      <form class="filters" onSubmit=${this.apply}>
        <label>context <input name="context" placeholder="every context" value=${context} onInput=${field("context")} /></label>
        <label>standing goal <input name="goal" placeholder="(pred ?x ...) — needs a context" size="36" value=${goal} onInput=${field("goal")} /></label>
        <button type="submit">apply filter</button>
      </form>
      <form class="controls" onSubmit=${this.resume}>
        ${running ? html`<button type="button" id="pause" onClick=${this.pause}>pause</button>` : html`<label>resume from seq <input name="from" size="8" value=${from} onInput=${field("from")} /></label><button type="submit" id="resume">resume</button>`}
        <span class="counters" data-events=${events} data-rows=${rows.length} data-last-seq=${lastSeq ?? ""} data-lagged=${lagged} data-running=${running ? "yes" : "no"}>
          ${running ? "live" : "paused"} · ${events} events · ${rows.length} rows kept (cap ${MAX_TAIL_ROWS}) · last seq ${lastSeq ?? "—"} ·${" "}
          <span class=${lagged > 0 ? "lagged warn" : "lagged"}>lagged ${lagged}</span>
        </span>
      </form>
      <${Refusal} error=${error} />
      <table class="rows">
        <thead><tr><th>seq</th><th></th><th>sentex</th><th>sentence</th><th>context</th><th>note</th></tr></thead>
        <tbody>
          ${rows.map((r) =>
            r.op === "lagged"
              ? html`<tr key=${r.key} class="row-lagged"><td></td><td>⚠</td><td colspan="4">${r.note}</td></tr>`
              : html`<tr key=${r.key} class=${`row-${r.op}`} data-seq=${r.seq}>
                  <td>${r.seq}</td><td>${r.op === "add" ? "+" : r.op === "remove" ? "−" : ""}</td>
                  <td>${r.handle ? html`<${SentexLink} handle=${r.handle} />` : ""}</td>
                  <td class="sentence">${r.sentence ?? ""}</td><td>${r.context ?? ""}</td><td>${r.note}</td>
                </tr>`,
          )}
        </tbody>
      </table>
    </section>`;
  }
}
