// The one visible, aria-live place where results and refusals are reported.

import {ApiError} from './api.js';
import {fill, h} from './dom.js';

/** How an error reads to a person: the API's detail first, its code and status after. */
export function describe(error) {
  if (error instanceof ApiError) {
    const where = error.status ? `HTTP ${error.status}, ${error.code}` : error.code;
    return `${error.detail} (${where})`;
  }
  return error?.message ? String(error.message) : String(error);
}

/** Writes into the status region; messages stay until the next one or a dismissal. */
export class Status {
  constructor(element) {
    this.element = element;
  }

  show(kind, text) {
    this.element.dataset.kind = kind;
    fill(
      this.element,
      h('span', {class: 'status-text'}, text),
      h('button', {type: 'button', class: 'quiet', 'aria-label': 'Dismiss message',
        onclick: () => this.clear()}, '×'),
    );
  }

  info(text) { this.show('info', text); }

  error(error) {
    if (!error?.handled) this.show('error', describe(error));
  }

  clear() {
    delete this.element.dataset.kind;
    this.element.replaceChildren();
  }

  /** Run `action`; report its failure (and return undefined) instead of throwing. */
  async guard(action) {
    try {
      return await action();
    } catch (error) {
      this.error(error);
      return undefined;
    }
  }
}
