// The one visible, aria-live place where results and refusals are reported, in words a person
// understands; a refusal that names a form field is also shown next to that field.

import {ApiError} from './api.js';
import {fill, h} from './dom.js';

/** How long a success message stays before it goes by itself (errors stay until dismissed). */
export const SUCCESS_MS = 6000;
/** The longest message shown whole; a longer one is cut at a word, the rest under "Details". */
export const SHORT_CHARS = 200;

/** `text` cut to at most SHORT_CHARS at a word boundary (with "…"), or as it is. */
export function shorten(text) {
  if (text.length <= SHORT_CHARS) return text;
  const cut = text.slice(0, SHORT_CHARS - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > SHORT_CHARS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

const VALUE_ERROR = /^(Value error|Assertion failed), /;
const LOCATION = /^(?:body|query|path)((?:\.[^.:\s]+)+): (.+)$/;
const SETTING = /^Invalid value for ([a-z0-9_]+): (.+)$/;

/**
 * The field problems a 422 names: [{field, message}], from pydantic's "body.a.b: msg; …" or the
 * settings' "Invalid value for key: msg".
 */
export function fieldProblems(detail, fields = null) {
  // The structured form ({name: why}) when the API gives one.
  const listed = Object.entries(fields && typeof fields === 'object' ? fields : {});
  if (listed.length) return listed.map(([field, message]) => ({field, message: withoutName(field, message)}));
  const setting = SETTING.exec(String(detail ?? ''));
  if (setting) return [{field: setting[1], message: setting[2].replace(VALUE_ERROR, '')}];
  const problems = [];
  for (const part of String(detail ?? '').split('; ')) {
    const match = LOCATION.exec(part);
    if (!match) continue;
    // The innermost name is the field; list indexes ("order.3") point into it.
    const names = match[1].slice(1).split('.').filter((name) => !/^[0-9]+$/.test(name));
    if (names.length) problems.push({field: names[names.length - 1], message: match[2].replace(VALUE_ERROR, '')});
  }
  return problems;
}

/** A reason without the internal name it starts with ("llm_x must be…" → "must be…"): the
 * field's own label goes in front of it where it is shown. */
function withoutName(field, message) {
  const text = String(message);
  return text.startsWith(`${field} `) ? text.slice(field.length + 1) : text;
}

/** A reason as a sentence of its own (shown under its field). */
function sentence(message) {
  return message.charAt(0).toUpperCase() + message.slice(1);
}

function humanField(name) {
  return name.replaceAll('_', ' ');
}

function seconds(error) {
  const value = Number.parseInt(error.retryAfter ?? '', 10);
  return Number.isFinite(value) && value > 0 ? value : null;
}

/** How an error reads to a person: a sentence for its kind, the API's own words where useful. */
export function describe(error) {
  if (!(error instanceof ApiError)) return error?.message ? String(error.message) : String(error);
  const {status, code, detail} = error;
  if (status === 0) return 'Cannot reach PlayChat. Check that the bot is running, then try again.';
  if (status === 401) {
    return code === 'unauthorized' ? 'Your session ended; log in again.' : detail;
  }
  if (status === 403) {
    return code.startsWith('forbidden_')
      ? 'The admin API refused this page\'s address; open it at the address PlayChat serves it on.'
      : 'You are not allowed to do that.';
  }
  if (status === 404) return 'It was deleted meanwhile; reload to see what is left.';
  if (status === 409) return detail || 'It was changed meanwhile; reload and try again.';
  if (status === 413) {
    const limit = /(\d+) bytes/.exec(detail ?? '');
    const size = limit ? ` (the limit is ${(Number(limit[1]) / 1048576).toFixed(1)} MB)` : '';
    return `That is too large to send${size}.`;
  }
  if (status === 422) {
    const problems = fieldProblems(detail, error?.fields);
    if (!problems.length) return detail;
    return `Please check: ${problems.map((p) => `${humanField(p.field)} — ${p.message}`).join('; ')}.`;
  }
  if (status === 429) {
    const wait = seconds(error);
    return wait ? `Too many requests; wait ${wait} s and try again.` : 'Too many requests; wait a moment and try again.';
  }
  if (code === 'llm_error') return `The model did not answer: ${detail}`;
  if (status >= 500) return 'The server hit a problem; the log has details.';
  return detail;
}

/** Remove every field message shown in `root`. */
export function clearFieldErrors(root) {
  for (const note of root.querySelectorAll('.field-error')) note.remove();
  for (const control of root.querySelectorAll('[aria-invalid="true"]')) {
    control.removeAttribute('aria-invalid');
    const ids = (control.getAttribute('aria-describedby') ?? '').split(' ')
      .filter((id) => id && !id.endsWith('-error'));
    if (ids.length) control.setAttribute('aria-describedby', ids.join(' '));
    else control.removeAttribute('aria-describedby');
  }
}

function showFieldError(control, message) {
  if (!control.id) control.id = `f-${Math.random().toString(36).slice(2, 10)}`;
  const id = `${control.id}-error`;
  document.getElementById(id)?.remove();
  const note = h('small', {class: 'field-error', id}, message);
  (control.closest('.field') ?? control.parentElement).append(note);
  control.setAttribute('aria-invalid', 'true');
  const ids = (control.getAttribute('aria-describedby') ?? '').split(' ').filter(Boolean);
  control.setAttribute('aria-describedby', [...ids.filter((x) => x !== id), id].join(' '));
  control.addEventListener('input', () => {
    note.remove();
    control.removeAttribute('aria-invalid');
  }, {once: true});
}

/** The text of the label of a form control, if it has one. */
function labelOf(input) {
  const label = input.labels?.[0]?.textContent?.trim() || input.getAttribute('aria-label');
  return label || null;
}

/** The one control named `name` in `root`, or null when there is none or more than one. */
function control(root, name) {
  const found = root.querySelectorAll(`[name="${CSS.escape(name)}"]`);
  return found.length === 1 ? found[0] : null;
}

/** Writes into the status region; successes go by themselves, errors stay until dismissed. */
export class Status {
  constructor(element) {
    this.element = element;
    this.timer = null;
  }

  show(kind, text, {stay = true, error = null} = {}) {
    clearTimeout(this.timer);
    this.timer = null;
    this.element.dataset.kind = kind;
    if (error instanceof ApiError) {
      this.element.dataset.httpStatus = String(error.status);
      this.element.dataset.code = error.code;
    } else {
      delete this.element.dataset.httpStatus;
      delete this.element.dataset.code;
    }
    const short = shorten(text);
    fill(
      this.element,
      h('div', {class: 'status-body'}, h('span', {class: 'status-text'}, short),
        short === text ? null : h('details', {class: 'status-more'},
          h('summary', {}, 'Details'), h('p', {}, text))),
      h('button', {type: 'button', class: 'quiet', 'aria-label': 'Dismiss message',
        onclick: () => this.clear()}, '×'),
    );
    if (!stay) this.timer = setTimeout(() => this.clear(), SUCCESS_MS);
  }

  /** A success: it goes by itself after a few seconds. */
  info(text) { this.show('info', text, {stay: false}); }

  /** Information that stays until dismissed or the screen changes. */
  note(text) { this.show('info', text); }

  /**
   * Report a failure; a 422 naming fields also marks those fields, looked up in `form` (or,
   * without one, in the screen on view when the name is unique there).
   */
  error(error, {form = null} = {}) {
    if (error?.handled) return;
    let text = describe(error);
    if (error instanceof ApiError && error.status === 422) {
      const root = form ?? document.querySelector('.screen:not([hidden])');
      const problems = fieldProblems(error.detail, error.fields);
      const marked = [];
      const named = problems.map((problem) => {
        const input = root ? control(root, problem.field) : null;
        if (!input) return `${humanField(problem.field)} — ${problem.message}`;
        showFieldError(input, sentence(problem.message));
        marked.push(input);
        return `${labelOf(input) ?? humanField(problem.field)} — ${problem.message}`;
      });
      if (named.length) text = `Please check: ${named.join('; ')}.`;
      // The first field to correct gets the focus; its message is read out with it.
      marked[0]?.focus();
    }
    this.show('error', text, {error});
  }

  clear() {
    clearTimeout(this.timer);
    this.timer = null;
    delete this.element.dataset.kind;
    delete this.element.dataset.httpStatus;
    delete this.element.dataset.code;
    this.element.replaceChildren();
  }

  /** Run `action`; report its failure (and return undefined) instead of throwing. */
  async guard(action, {form = null} = {}) {
    if (form) clearFieldErrors(form);
    try {
      return await action();
    } catch (error) {
      this.error(error, {form});
      return undefined;
    }
  }
}
