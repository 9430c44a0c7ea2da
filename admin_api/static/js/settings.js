// Runtime settings grouped by topic (secrets masked, set/replace only) and the read-only
// start-up settings. Help text, ranges and choices come from GET /api/settings/schema.

import {busy, confirmButton, field, fill, h} from './dom.js';
import {StartupSettings} from './startup_settings.js';

const LABELS = {
  llm_model: 'Chat model',
  llm_api_base: 'LLM API base URL',
  llm_api_key: 'LLM API key',
  embed_model: 'Embedding model',
  language: 'Language',
  llm_context_tokens: 'Context window (tokens)',
  tagging_mode: 'Tagging mode',
  knowledge_context_limit: 'Knowledge headings in context',
  memory_summarize_threshold: 'Summarise after (messages)',
  user_cooldown_seconds: 'User cooldown (seconds)',
  member_daily_tokens: 'Tokens per member per day (0 = unlimited)',
  server_daily_tokens: 'Tokens per server per day (0 = unlimited)',
  stream_edit_interval: 'Discord edit interval (seconds)',
  burst_wait_seconds: 'Wait for a typing member (seconds, 0 = off)',
  confirm_note_writes: 'Ask the member before writing a note',
  approval_timeout_seconds: 'Time to answer Allow / Deny (seconds)',
  topic_quiet_hours: 'Quiet hours, e.g. 23-7 (empty = none)',
  topic_reply_window_minutes: 'Reply window of an opener (minutes)',
  topic_backoff_max_minutes: 'Longest backed-off quiet wait (minutes)',
  system_prompt_extra: 'Extra system prompt',
  web_search_max_results: 'Web search results',
  scrape_max_chars: 'Scrape limit (characters)',
  fetch_max_chars: 'Fetch limit (characters)',
  fetch_max_results: 'Fetch results',
  local_kb_top_k: 'Local knowledge hits',
  local_kb_min_score: 'Local knowledge minimum score',
};
const LONG_TEXT = new Set(['system_prompt_extra']);
/** The topics the form is grouped by, each in the order an owner reads it. */
const GROUPS = [
  ['model', 'Model', ['llm_model', 'llm_api_base', 'embed_model', 'llm_context_tokens', 'language',
    'system_prompt_extra']],
  ['memory', 'Memory', ['memory_summarize_threshold', 'knowledge_context_limit', 'tagging_mode',
    'local_kb_top_k', 'local_kb_min_score']],
  ['tools', 'Tools', ['web_search_max_results', 'scrape_max_chars', 'fetch_max_chars',
    'fetch_max_results', 'confirm_note_writes', 'approval_timeout_seconds']],
  ['discord', 'Discord', ['user_cooldown_seconds', 'burst_wait_seconds',
    'stream_edit_interval']],
  ['budgets', 'Budgets', ['member_daily_tokens', 'server_daily_tokens']],
  ['topics', 'Topics', ['topic_quiet_hours', 'topic_reply_window_minutes', 'topic_backoff_max_minutes']],
];
const SOURCES = {
  env: 'From .env',
  default: 'Default',
  override: 'Changed here (overrides .env)',
};

function label(key) {
  return LABELS[key] ?? key.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase());
}

/** How a masked secret reads: set or not, and its last four characters when long enough. */
export function maskedText(masked) {
  if (!masked || !masked.set) return 'Not set';
  return masked.last4 ? `Set · ends in …${masked.last4}` : 'Set (too short to show its end)';
}

/** The allowed range of a number in words, from its JSON Schema ("512 to 1048576"). */
export function rangeText(prop) {
  const low = prop.minimum ?? prop.exclusiveMinimum;
  const high = prop.maximum ?? prop.exclusiveMaximum;
  const above = prop.minimum === undefined ? 'above ' : '';
  if (low !== undefined && high !== undefined) return `${above}${low} to ${high}`;
  if (low !== undefined) return prop.minimum === undefined ? `above ${low}` : `at least ${low}`;
  if (high !== undefined) return `at most ${high}`;
  return '';
}

function numberInput(key, value, prop) {
  const input = h('input', {type: 'number', name: key, value: value === null ? '' : String(value),
    step: prop.type === 'integer' ? '1' : 'any'});
  const low = prop.minimum ?? prop.exclusiveMinimum;
  const high = prop.maximum ?? prop.exclusiveMaximum;
  if (low !== undefined) input.min = String(low);
  if (high !== undefined) input.max = String(high);
  return input;
}

function control(key, value, prop = {}) {
  if (prop.enum) {
    return h('select', {name: key}, prop.enum.map((choice) =>
      h('option', {value: choice, selected: choice === value}, choice)));
  }
  if (prop.type === 'boolean' || typeof value === 'boolean') {
    return h('input', {type: 'checkbox', name: key, checked: value});
  }
  if (prop.type === 'integer' || prop.type === 'number' || typeof value === 'number') {
    return numberInput(key, value, prop);
  }
  if (LONG_TEXT.has(key)) return h('textarea', {name: key, rows: '4', value: value ?? ''});
  const input = h('input', {type: 'text', name: key, value: value ?? ''});
  if (key === 'llm_model') input.setAttribute('list', 'model-options');
  return input;
}

function helpText(prop) {
  const range = rangeText(prop);
  const description = prop.description ?? '';
  return range ? `${description} (${range})` : description;
}

function read(input, before) {
  if (input.type === 'checkbox') return input.checked;
  if (input.type === 'number') return input.value === '' ? null : Number(input.value);
  if (input.value === '' && before === null) return null;
  return input.value;
}

/** The settings screen. */
export class SettingsScreen {
  constructor({api, status, root}) {
    this.api = api;
    this.status = status;
    this.values = {};
    this.secretKeys = [];
    this.inputs = new Map();
    this.modelOptions = h('datalist', {id: 'model-options'});
    this.secrets = h('div', {class: 'secrets'});
    // The server checks ranges and says what is wrong next to the field (novalidate: the
    // browser's own bubble would block the request and show a different text).
    this.form = h('form', {class: 'settings-form', 'aria-label': 'Settings', novalidate: true});
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      busy(event.submitter ?? this.form, () => this.save());
    });
    this.startup = new StartupSettings({api, status});
    this.skipped = h('div', {class: 'skipped-settings'});
    root.append(
      h('p', {class: 'hint'}, 'Changes here apply at once, without a restart. Model connections ',
        'and the connection test are under Models.'),
      this.skipped,
      h('div', {class: 'card'}, h('h3', {}, 'Settings'), this.form),
      h('div', {class: 'card'}, h('h3', {}, 'Secrets'),
        h('p', {class: 'hint'}, 'Secrets are never shown: set or replace them here.'), this.secrets),
      this.startup.element,
      this.modelOptions,
    );
  }

  async show() {
    const result = await this.status.guard(async () => {
      // The schema (help, ranges, choices) changes only with a restart: fetched once.
      this.schema ??= await this.api.get('/api/settings/schema');
      return this.api.get('/api/settings');
    });
    if (result) this.render(result);
    await Promise.all([this.loadModelOptions(), this.startup.show()]);
  }

  render({values, secret_keys: secretKeys, sources = {}, skipped = {}}) {
    const ignored = Object.entries(skipped);
    fill(this.skipped, ignored.length ? h('div', {class: 'card error', role: 'alert'},
      h('h3', {}, 'Stored settings not in effect'),
      h('ul', {}, ignored.map(([key, why]) => h('li', {dataset: {key}},
        h('strong', {}, label(key)), `: ${why}. The .env value applies; save or reset it here.`))))
      : null);
    this.values = values;
    this.secretKeys = secretKeys;
    this.sources = sources;
    const props = this.schema?.properties ?? {};
    const keys = Object.keys(values).filter((key) => !secretKeys.includes(key));
    const placed = new Set(GROUPS.flatMap(([, , members]) => members));
    const groups = [...GROUPS, ['other', 'Other', keys.filter((key) => !placed.has(key)).sort()]];
    this.inputs.clear();
    fill(this.form,
      groups.map(([id, title, members]) => {
        const shown = members.filter((key) => keys.includes(key));
        return shown.length ? h('fieldset', {class: 'group', dataset: {group: id}},
          h('legend', {}, title),
          h('div', {class: 'grid'}, shown.map((key) => this.row(key, values[key], props[key] ?? {}))))
          : null;
      }),
      h('div', {class: 'actions'}, h('button', {type: 'submit', class: 'primary'}, 'Save settings')));
    fill(this.secrets, secretKeys.map((key) => this.secretRow(key, values[key])));
  }

  row(key, value, prop) {
    const input = control(key, value, prop);
    this.inputs.set(key, input);
    const row = field(label(key), input, helpText(prop) || undefined).row;
    row.dataset.key = key;
    if (input.type === 'checkbox') row.classList.add('check');
    if (input.tagName === 'TEXTAREA') row.classList.add('wide');
    const source = this.sources[key];
    if (source) {
      const line = h('small', {class: 'source', dataset: {source}}, SOURCES[source] ?? source);
      if (source === 'override') {
        line.append(' ', h('button', {type: 'button', class: 'link',
          title: `Reset ${label(key)} to its .env value`,
          onclick: (event) => busy(event.currentTarget, () =>
            this.put({[key]: null}, `${label(key)} reset to its .env value.`))}, 'Reset to .env'));
      }
      row.append(line);
    }
    return row;
  }

  secretRow(key, masked) {
    const input = h('input', {type: 'password', autocomplete: 'new-password', name: key,
      'aria-label': `New ${label(key)}`});
    const shown = h('output', {class: 'masked', dataset: {key}}, maskedText(masked));
    const submit = h('button', {type: 'submit'}, masked?.set ? 'Replace' : 'Set');
    const form = h('form', {class: 'secret inline-form', dataset: {key}},
      h('span', {class: 'label'}, label(key)), shown, input, submit,
      masked?.set ? confirmButton('Reset to .env value', 'Really reset?',
        () => this.put({[key]: null}, `${label(key)} reset to its .env value.`), {class: 'quiet danger'}) : null);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (!input.value) {
        this.status.error(new Error(`Type the new ${label(key)} first.`));
        input.focus();
        return;
      }
      // On success the row is rebuilt from the reply, so the typed secret leaves the page.
      await busy(submit, () => this.put({[key]: input.value}, `${label(key)} saved.`));
    });
    return form;
  }

  async put(values, message) {
    let result;
    try {
      result = await this.api.put('/api/settings', {values});
    } catch (error) {
      this.status.error(error);
      return false;
    }
    this.render(result);
    this.status.info(message);
    return true;
  }

  async save() {
    const changes = {};
    for (const [key, input] of this.inputs) {
      const value = read(input, this.values[key]);
      if (value !== this.values[key]) changes[key] = value;
    }
    if (!Object.keys(changes).length) {
      this.status.info('Nothing changed.');
      return;
    }
    await this.put(changes, `Saved: ${Object.keys(changes).map(label).join(', ')}.`);
  }

  /** Model names to suggest in the chat model field: the connections' and the backend's. */
  async loadModelOptions() {
    const [presets, available] = await Promise.all([
      this.api.get('/api/models/presets').catch(() => ({presets: []})),
      this.api.get('/api/models/available').catch(() => ({models: []})),
    ]);
    const names = new Set([...presets.presets.map((preset) => preset.value), ...available.models]);
    fill(this.modelOptions, [...names].map((name) => h('option', {value: name})));
  }
}
