// Activity: turns, tokens and errors over time as charts, latency per model, tool use and totals
// per space, over the last 48 hours (by hour) or 30 days (by day), for the chosen space.

import {TimeChart} from './chart.js';
import {fill, h, labelCells} from './dom.js';

const RANGES = {
  hour: 'Last 48 hours, by hour',
  day: 'Last 30 days, by day',
};

function sum(values) {
  return values.reduce((total, value) => total + (value ?? 0), 0);
}

/** A total with its noun, singular for one ("1 LLM call", "2 LLM calls"); `noun` is plural. */
export function count(values, noun) {
  const total = sum(values);
  if (total !== 1) return `${total} ${noun}`;
  return `${total} ${noun.replace(/(call|turn|error)s\b/, '$1')}`;
}

/** A table kept across loads (fitTable watches it), whose rows `fillTable` replaces. */
function table(id, caption, columns) {
  return h('table', {id, class: 'stack'},
    h('caption', {class: 'sr-only'}, caption),
    h('thead', {}, h('tr', {}, columns.map((name) => h('th', {scope: 'col'}, name)))),
    h('tbody'));
}

function fillTable(element, rows, empty) {
  const columns = element.tHead.rows[0].cells.length;
  fill(element.tBodies[0], rows.length
    ? rows
    : h('tr', {}, h('td', {colspan: String(columns), class: 'empty'}, empty)));
  labelCells(element);
}

/** The activity screen. */
export class ActivityScreen {
  constructor({api, status, root, spaces}) {
    this.api = api;
    this.status = status;
    this.spaces = spaces;
    this.range = h('select', {id: 'activity-range', name: 'bucket'},
      Object.entries(RANGES).map(([value, label]) => h('option', {value}, label)));
    this.range.addEventListener('change', () => this.load());
    this.scope = h('p', {class: 'meta', id: 'activity-scope'});
    this.turns = new TimeChart({
      id: 'activity-turns',
      title: 'Turns and LLM calls',
      series: [{label: 'Turns (answers)'}, {label: 'LLM calls'}, {label: 'Tool calls'}],
      empty: 'No activity in this range yet. Turns appear as the bot answers in Discord or in a chat.',
      summary: (_times, [turns, calls, tools]) =>
        `${count(turns, 'turns')}, ${count(calls, 'LLM calls')} and ${count(tools, 'tool calls')} in this range.`,
    });
    this.tokens = new TimeChart({
      id: 'activity-tokens',
      title: 'Tokens',
      series: [{label: 'Prompt tokens', unit: 'tokens'}, {label: 'Completion tokens', unit: 'tokens'}],
      empty: 'No tokens counted in this range yet.',
      summary: (_times, [prompt, completion]) =>
        `${sum(prompt)} prompt and ${sum(completion)} completion tokens in this range.`,
    });
    this.errors = new TimeChart({
      id: 'activity-errors',
      title: 'Errors',
      series: [{label: 'LLM errors', colour: '--chart-2'}, {label: 'Failed tool calls', colour: '--chart-3'}],
      empty: 'No calls in this range yet, so no errors either.',
      summary: (_times, [llm, tools]) =>
        `${count(llm, 'LLM errors')} and ${count(tools, 'failed tool calls')} in this range.`,
    });
    this.models = table('activity-models', 'Latency per model in this range',
      ['Model', 'Calls', 'Errors', 'Latency p50', 'Latency p95', 'Tokens in / out']);
    this.tools = table('activity-tools', 'Tool use in this range',
      ['Tool', 'Calls', 'Failed', 'Mean duration']);
    this.spacesTable = table('activity-spaces', 'Totals per space in this range',
      ['Space', 'Turns', 'LLM calls', 'Tokens in / out', 'Errors', 'Tool calls']);
    this.usageDay = h('p', {class: 'meta', id: 'activity-usage-day'});
    this.usageTable = table('activity-usage', 'Tokens used today per space and member',
      ['Space', 'Member', 'Tokens used', 'Model calls', 'Daily budget']);
    root.append(
      h('div', {class: 'card inline-fields'},
        h('div', {class: 'field'}, h('label', {for: 'activity-range'}, 'Range'), this.range),
        this.scope),
      h('div', {class: 'chart-grid'}, this.turns.element, this.tokens.element, this.errors.element),
      h('section', {class: 'card', 'aria-labelledby': 'activity-models-title'},
        h('h3', {id: 'activity-models-title'}, 'Latency per model'),
        h('div', {class: 'table-wrap'}, this.models)),
      h('section', {class: 'card', 'aria-labelledby': 'activity-tools-title'},
        h('h3', {id: 'activity-tools-title'}, 'Tool use per tool'),
        h('div', {class: 'table-wrap'}, this.tools)),
      h('section', {class: 'card', 'aria-labelledby': 'activity-spaces-title'},
        h('h3', {id: 'activity-spaces-title'}, 'Per space'),
        h('div', {class: 'table-wrap'}, this.spacesTable)),
      h('section', {class: 'card', 'aria-labelledby': 'activity-usage-title'},
        h('h3', {id: 'activity-usage-title'}, 'Token budgets today'),
        this.usageDay,
        h('div', {class: 'table-wrap'}, this.usageTable)),
    );
  }

  async show() {
    await this.load();
  }

  async load() {
    const space = this.spaces.current || undefined;
    const bucket = this.range.value;
    const report = await this.status.guard(() => this.api.get('/api/activity', {space, bucket}));
    if (!report) return;
    this.scope.textContent = space
      ? `Space ${this.spaces.label?.(space) ?? space} only; choose "All spaces" above for every space.`
      : 'Every space.';
    const buckets = report.buckets;
    const busy = buckets.some((b) => b.turns || b.llm_calls || b.tool_calls || b.errors);
    // An empty range reads as "nothing yet" rather than as flat lines at zero.
    const times = busy ? buckets.map((b) => b.start) : [];
    const column = (key) => (busy ? buckets.map((b) => b[key]) : []);
    this.turns.update(times, [column('turns'), column('llm_calls'), column('tool_calls')]);
    this.tokens.update(times, [column('prompt_tokens'), column('completion_tokens')]);
    this.errors.update(times, [column('errors'), column('tool_failures')]);
    this.renderModels(report.models);
    this.renderTools(report.tools);
    this.renderSpaces(report.spaces);
    const usage = await this.status.guard(() => this.api.get('/api/usage', {space}));
    if (usage) this.renderUsage(usage);
  }

  /** Today's tokens per space (its total first) and per member, against the daily budgets. */
  renderUsage(usage) {
    const budget = (limit, used) => (limit ? `${used} of ${limit}` : 'Unlimited');
    this.usageDay.textContent = `Day ${usage.day}: what each member's turns used (prompt and completion tokens).`;
    const rows = usage.spaces.flatMap((s) => [
      h('tr', {dataset: {space: s.space_id, member: ''}},
        h('td', {}, this.spaces.label?.(s.space_id) ?? s.space_id),
        h('td', {}, 'Every member'),
        h('td', {class: 'num'}, String(s.used)),
        h('td', {class: 'num'}, String(s.calls)),
        h('td', {class: 'num'}, budget(usage.server_daily_tokens, s.used))),
      ...s.members.map((m) => h('tr', {dataset: {space: s.space_id, member: m.member_id}},
        h('td', {}, this.spaces.label?.(s.space_id) ?? s.space_id),
        h('td', {class: 'mono'}, m.member_id),
        h('td', {class: 'num'}, String(m.used)),
        h('td', {class: 'num'}, String(m.calls)),
        h('td', {class: 'num'}, budget(usage.member_daily_tokens, m.used)))),
    ]);
    fillTable(this.usageTable, rows, 'No tokens used today yet.');
  }

  renderModels(models) {
    fillTable(this.models, models.map((m) => h('tr', {dataset: {model: m.model}},
        h('td', {}, m.model),
        h('td', {class: 'num'}, String(m.calls)),
        h('td', {class: 'num'}, String(m.errors)),
        h('td', {class: 'num'}, `${m.p50_ms} ms`),
        h('td', {class: 'num'}, `${m.p95_ms} ms`),
        h('td', {class: 'num'}, `${m.prompt_tokens} / ${m.completion_tokens}`))),
      'No model was called in this range.');
  }

  renderTools(tools) {
    fillTable(this.tools, tools.map((t) => h('tr', {dataset: {tool: t.tool}},
        h('td', {class: 'mono'}, t.tool),
        h('td', {class: 'num'}, String(t.calls)),
        h('td', {class: 'num'}, String(t.failures)),
        h('td', {class: 'num'}, t.avg_ms === null ? '—' : `${t.avg_ms} ms`))),
      'No tool was used in this range. Tools run when the model searches, reads pages or writes notes.');
  }

  renderSpaces(spaces) {
    fillTable(this.spacesTable, spaces.map((s) => h('tr', {},
        h('td', {}, s.space_id === null ? 'Outside any conversation' : (this.spaces.label?.(s.space_id) ?? s.space_id)),
        h('td', {class: 'num'}, String(s.turns)),
        h('td', {class: 'num'}, String(s.llm_calls)),
        h('td', {class: 'num'}, `${s.prompt_tokens} / ${s.completion_tokens}`),
        h('td', {class: 'num'}, String(s.errors)),
        h('td', {class: 'num'}, `${s.tool_calls} (${s.tool_failures} failed)`))),
      'No space had activity in this range.');
  }
}
