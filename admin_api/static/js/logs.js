// LLM call logs: filter (session, model, errors only, time), paging, detail, delete.

import {TimeChart} from './chart.js';
import {busy, clip, confirmButton, field, fill, h, labelCells, plural, when} from './dom.js';

const PAGE_SIZE = 50;

function pretty(text) {
  if (text === null || text === undefined) return '';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function localToIso(value) {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

function tokens(row) {
  const show = (n) => (n === null || n === undefined ? '–' : String(n));
  const counts = `${show(row.prompt_tokens)} / ${show(row.completion_tokens)}`;
  return row.tokens_estimated ? `≈ ${counts}` : counts;
}

/** Who the call answered: the member's name, with their Discord id as a tooltip. */
function member(row) {
  if (!row.member_name && !row.member_id) return '—';
  return h('span', {title: row.member_id ?? ''}, row.member_name ?? row.member_id);
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : Math.round((sorted[middle - 1] + sorted[middle]) / 2);
}

/** The caption's sentence: how many calls, over what time, how fast, how many failed. */
function latencySummary(times, [ok, failed]) {
  const latencies = [...ok, ...failed].filter((value) => value !== null);
  const failures = failed.filter((value) => value !== null).length;
  const span = times.length > 1
    ? `from ${when(new Date(times[0] * 1000).toISOString())} to ${when(new Date(times[times.length - 1] * 1000).toISOString())}`
    : `at ${when(new Date(times[0] * 1000).toISOString())}`;
  return `${plural(times.length, 'call')} on this page ${span}; median latency ${median(latencies)} ms, ` +
    `slowest ${Math.max(...latencies)} ms; ${failures} failed.`;
}

function cost(row) {
  return row.cost === null || row.cost === undefined ? '–' : `$${row.cost.toFixed(4)}`;
}

/** The logs screen. */
export class LogsScreen {
  constructor({api, status, root, spaces}) {
    this.api = api;
    this.status = status;
    this.spaces = spaces;
    this.filter = {};
    this.cursors = [null];
    this.index = 0;
    this.nextCursor = null;
    this.inputs = {
      session_id: h('input', {type: 'text', name: 'session_id', maxlength: '200'}),
      model: h('input', {type: 'text', name: 'model', maxlength: '200', list: 'log-models'}),
      errors_only: h('input', {type: 'checkbox', name: 'errors_only'}),
      since: h('input', {type: 'datetime-local', name: 'since'}),
      until: h('input', {type: 'datetime-local', name: 'until'}),
    };
    this.models = h('datalist', {id: 'log-models'});
    const form = h('form', {class: 'card inline-fields', 'aria-label': 'Log filter'},
      field('Session id', this.inputs.session_id).row,
      field('Model', this.inputs.model).row,
      h('div', {class: 'field check'}, this.inputs.errors_only,
        h('label', {for: 'log-errors-only'}, 'Errors only')),
      field('From', this.inputs.since).row,
      field('Until', this.inputs.until).row,
      h('div', {class: 'actions'},
        h('button', {type: 'submit', class: 'primary'}, 'Apply filter'),
        h('button', {type: 'button', class: 'quiet', onclick: () => this.clearFilter(form)}, 'Clear')));
    this.inputs.errors_only.id = 'log-errors-only';
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.apply();
    });
    this.deleteSlot = h('span');
    this.rows = h('tbody');
    this.newer = h('button', {type: 'button', onclick: () => this.go(-1)}, '← Newer');
    this.older = h('button', {type: 'button', onclick: () => this.go(1)}, 'Older →');
    this.pageLabel = h('span', {class: 'page-label'});
    this.detail = h('div', {class: 'log-detail', id: 'log-detail'});
    this.chart = new TimeChart({
      id: 'log-chart',
      title: 'Latency of the calls on this page',
      series: [
        {label: 'Latency', unit: 'ms'},
        {label: 'Latency of failed calls', unit: 'ms', colour: '--chart-2', points: true},
      ],
      empty: 'No LLM calls match yet. Calls appear here as the bot answers in Discord or in a chat.',
      summary: latencySummary,
    });
    root.append(
      form,
      this.models,
      this.chart.element,
      h('div', {class: 'toolbar'}, this.deleteSlot,
        h('button', {type: 'button', class: 'quiet', onclick: () => this.load()}, 'Reload')),
      h('div', {class: 'table-wrap'},
        this.table = h('table', {class: 'logs stack', id: 'log-table'},
          h('caption', {class: 'sr-only'}, 'LLM calls, newest first'),
          h('thead', {}, h('tr', {},
            ['When', 'Space', 'Member', 'Model', 'Purpose', 'Session', 'Latency', 'Tokens in / out',
              'Cost', 'Result']
              .map((name) => h('th', {scope: 'col'}, name)))),
          this.rows)),
      h('div', {class: 'pager'}, this.newer, this.pageLabel, this.older),
      this.detail,
    );
    this.renderDeleteButton();
  }

  async show() {
    // The chosen space is part of the filter (listing and delete-matching alike).
    const space = this.spaces.current || undefined;
    if (space !== this.filter.space) {
      this.filter = {...this.filter, space};
      this.cursors = [null];
      this.index = 0;
      this.renderDeleteButton();
    }
    await this.load();
  }

  readFilter() {
    const {session_id: session, model, errors_only: errors, since, until} = this.inputs;
    return {
      space: this.spaces.current || undefined,
      session_id: session.value.trim() || undefined,
      model: model.value.trim() || undefined,
      errors_only: errors.checked ? 'true' : undefined,
      since: localToIso(since.value),
      until: localToIso(until.value),
    };
  }

  hasFilter() {
    return Object.values(this.filter).some((value) => value !== undefined);
  }

  renderDeleteButton() {
    const everything = !this.hasFilter();
    const label = everything ? 'Delete all logs' : 'Delete matching logs';
    fill(this.deleteSlot, confirmButton(label, everything ? 'Really delete ALL logs?' : 'Really delete?',
      () => this.deleteMatching(), {id: 'log-delete-matching'}));
  }

  clearFilter(form) {
    form.reset();
    this.apply();
  }

  async apply() {
    this.filter = this.readFilter();
    this.cursors = [null];
    this.index = 0;
    this.renderDeleteButton();
    fill(this.detail);
    await this.load();
  }

  async go(step) {
    if (step > 0) {
      if (this.nextCursor === null) return;
      this.cursors[this.index + 1] = this.nextCursor;
    } else if (this.index === 0) return;
    this.index += step;
    await this.load();
  }

  async load() {
    const query = {...this.filter, limit: PAGE_SIZE, cursor: this.cursors[this.index] ?? undefined};
    const result = await this.status.guard(() => this.api.get('/api/logs', query));
    if (!result) return;
    this.nextCursor = result.next_cursor;
    fill(this.rows, result.items.length
      ? result.items.map((row) => this.row(row))
      : h('tr', {}, h('td', {colspan: '10', class: 'empty'},
        Object.entries(this.filter).some(([key, value]) => key !== 'space' && value !== undefined)
        ? 'No logs match. Clear the filter to see every call.'
        : 'No logs yet. Every call to a model (chat, summaries, tags, connection tests) is logged here.')));
    labelCells(this.table);
    this.chart.update(result.items.map((row) => row.created_at), [
      result.items.map((row) => (row.error ? null : row.latency_ms)),
      result.items.map((row) => (row.error ? row.latency_ms : null)),
    ]);
    const models = new Set(result.items.map((row) => row.model));
    fill(this.models, [...models].map((model) => h('option', {value: model})));
    this.newer.disabled = this.index === 0;
    this.older.disabled = this.nextCursor === null;
    this.pageLabel.textContent = `Page ${this.index + 1}`;
  }

  row(row) {
    // The visible time starts the accessible name (a name unlike the text confuses voice control).
    const open = h('button', {type: 'button', class: 'link', onclick: () => this.open(row.id)},
      when(row.created_at), h('span', {class: 'sr-only'}, ` — details of call ${row.id}`));
    return h('tr', {class: row.error ? 'is-error' : null, dataset: {id: String(row.id)}},
      h('td', {}, open),
      h('td', {class: 'space'}, row.space_id ? this.spaces.label(row.space_id) : '—'),
      h('td', {class: 'member'}, member(row)),
      h('td', {}, row.model),
      h('td', {}, row.purpose),
      h('td', {class: 'mono'}, clip(row.session_id ?? '—', 16)),
      h('td', {class: 'num'}, `${row.latency_ms} ms`),
      h('td', {class: 'num'}, tokens(row)),
      h('td', {class: 'num'}, cost(row)),
      h('td', {}, row.error ? h('span', {class: 'bad'}, `Error: ${clip(row.error, 60)}`) : 'OK'));
  }

  async open(id) {
    const row = await this.status.guard(() => this.api.get(`/api/logs/${id}`));
    if (!row) return;
    const facts = [
      ['Call', `#${row.id}`], ['When', when(row.created_at)], ['Model', row.model],
      ['Purpose', row.purpose], ['Session', row.session_id ?? '—'],
      ['Latency', `${row.latency_ms} ms`], ['Tokens in / out', tokens(row)], ['Cost', cost(row)],
    ];
    const close = h('button', {type: 'button', class: 'quiet', onclick: () => fill(this.detail)}, 'Close');
    fill(this.detail, h('article', {class: 'card', 'aria-label': `Call ${row.id}`},
      h('h3', {}, `Call #${row.id}`),
      h('dl', {class: 'facts'}, facts.map(([name, value]) => [h('dt', {}, name), h('dd', {}, value)])),
      row.error ? [h('h4', {}, 'Error'), h('pre', {class: 'bad'}, row.error)] : null,
      h('h4', {}, 'Request'), h('pre', {class: 'log-request'}, pretty(row.request_json)),
      h('h4', {}, 'Response'), h('pre', {class: 'log-response'}, row.response_text ?? '(none)'),
      h('div', {class: 'actions'}, close,
        confirmButton('Delete this log', 'Really delete?', () => this.deleteOne(row.id)))));
    close.focus();
  }

  async deleteOne(id) {
    const result = await this.status.guard(() => this.api.del(`/api/logs/${id}`));
    if (!result) return;
    this.status.info('Log deleted.');
    fill(this.detail);
    await this.load();
  }

  async deleteMatching() {
    const query = this.hasFilter() ? this.filter : {all: 'true'};
    const button = this.deleteSlot.firstChild;
    const result = await busy(button, () => this.status.guard(() => this.api.del('/api/logs', query)));
    if (!result) return;
    this.status.info(`Deleted ${plural(result.deleted, 'log')}.`);
    this.cursors = [null];
    this.index = 0;
    fill(this.detail);
    await this.load();
  }
}
