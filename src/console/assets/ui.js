/** Shared pieces of the console's pages: htm bound to preact, the refusal box, small formatters. */
import { h, Component } from "../vendor/preact.mjs";
import htm from "../vendor/htm.mjs";

export const html = htm.bind(h);
export { Component };

/** A refusal shown as the wire gave it: status, type and message, never reworded. */
export function Refusal({ error }) {
  if (!error) return null;
  if (error.body) {
    return html`<div class="refusal" role="alert" data-status=${error.status} data-type=${error.body.type}>
      <b>${error.status} ${error.body.type}</b>: <span class="refusal-error">${error.body.error}</span>
    </div>`;
  }
  return html`<div class="refusal" role="alert" data-type="network"><b>no answer</b>: ${String(error.message ?? error)}</div>`;
}

export const SentexLink = ({ handle }) => html`<a class="handle" href=${`#/why/${handle}`}>#${handle}</a>`;

export const yesNo = (b) => (b ? "yes" : "no");

export const ago = (ms) => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`);
