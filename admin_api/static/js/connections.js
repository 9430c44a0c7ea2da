// Model connections: named presets (backend, model, address, key — masked), create, edit,
// delete, and a Test button that reports success or the failure in words.

import {busy, confirmButton, field, fill, h, labelCells} from './dom.js';

const BACKENDS = [['ollama', 'Ollama'], ['litellm', 'Hosted / OpenAI-compatible (LiteLLM)']];

/** The model string a preset stores: `ollama/<model>` for Ollama, else the provider string. */
export function modelValue(backend, model) {
  const name = model.trim();
  if (backend === 'ollama') return name.startsWith('ollama/') ? name : `ollama/${name}`;
  return name;
}

function shownModel(preset) {
  return preset.backend === 'ollama' ? preset.value.replace(/^ollama(_chat)?\//, '') : preset.value;
}

/** What kind of failure a test reported, in words (the API's sentence follows). */
const FAILURES = {
  unreachable: 'Unreachable: no server answers',
  auth: 'Key refused by the server',
  not_found: 'Model missing on the server',
  timeout: 'No answer in time from the server',
  error: 'The call failed on the server',
};

/** Where a test call went, as the owner reads it. */
function where(result) {
  return result.address ?? 'the provider\'s own address';
}

function keyText(key) {
  return key.set ? `set (…${key.last4})` : 'not set';
}

/** Under a connection's name: whether it is the configured model (LLM_MODEL), and a warning
 * when it did not answer at the last check (the address and the fix). */
function connectionNotes(preset) {
  return [
    preset.configured ? h('span', {class: 'meta configured'},
      preset.seeded ? ' (configured: LLM_MODEL, follows it)' : ' (configured: LLM_MODEL)') : null,
    preset.warning ? h('p', {class: 'bad connection-warning', role: 'note'},
      `Not answering: ${preset.warning}`) : null,
  ];
}

/** The model connections screen. */
export class ConnectionsScreen {
  constructor({api, status, root}) {
    this.api = api;
    this.status = status;
    this.presets = [];
    this.rows = h('tbody');
    this.editor = h('div', {id: 'connection-editor'});
    root.append(
      h('p', {class: 'hint'}, 'A connection is a named model at an address: Ollama and hosted ',
        'endpoints can sit side by side. Servers pick one as their default on the Spaces screen; ',
        'in Discord, /model switches among them.'),
      h('div', {class: 'card'},
        h('div', {class: 'table-wrap'},
          this.table = h('table', {id: 'connection-table', class: 'stack'},
            h('thead', {}, h('tr', {}, ['Name', 'Backend', 'Model', 'Address', 'Key', 'Test', 'Actions']
              .map((name) => h('th', {scope: 'col'}, name)))),
            this.rows)),
        h('div', {class: 'actions'}, h('button', {type: 'button', class: 'primary',
          onclick: () => this.edit(null)}, 'New connection'))),
      this.editor);
  }

  async show() {
    const result = await this.status.guard(() => this.api.get('/api/models/presets'));
    if (!result) return;
    this.presets = result.presets;
    fill(this.rows, this.presets.length
      ? this.presets.map((preset) => this.row(preset))
      : h('tr', {}, h('td', {colspan: '7', class: 'empty'}, 'No connections yet. Press New ',
        'connection to add one; until then every conversation uses the model set in .env.')));
    labelCells(this.table);
  }

  row(preset) {
    const result = h('output', {class: 'result', dataset: {testFor: String(preset.id)}});
    const test = h('button', {type: 'button', 'aria-label': `Test ${preset.label}`}, 'Test');
    test.addEventListener('click', () => busy(test, () => this.test(preset, result)));
    return h('tr', {dataset: {id: String(preset.id), state: preset.state ?? 'unknown'}},
      h('td', {}, preset.label, connectionNotes(preset)),
      h('td', {}, preset.backend === 'ollama' ? 'Ollama' : `LiteLLM (${preset.provider})`),
      h('td', {class: 'mono'}, shownModel(preset)),
      h('td', {class: 'mono'}, preset.api_base ?? 'from .env'),
      h('td', {}, keyText(preset.api_key)),
      h('td', {}, test, result),
      h('td', {class: 'actions'},
        h('button', {type: 'button', 'aria-label': `Edit ${preset.label}`,
          onclick: () => this.edit(preset)}, 'Edit'),
        confirmButton('Delete', 'Press again to delete', () => this.remove(preset),
          {'aria-label': `Delete ${preset.label}`})));
  }

  async test(preset, output) {
    output.textContent = 'Testing…';
    delete output.dataset.ok;
    const result = await this.status.guard(() => this.api.post(`/api/models/${preset.id}/test`));
    if (!result) {
      output.textContent = '';
      return;
    }
    output.dataset.ok = String(result.ok);
    output.dataset.kind = result.kind;
    output.textContent = result.ok
      ? `✓ Works at ${where(result)} (${result.latency_ms} ms): ${result.message}`
      : `✗ ${FAILURES[result.kind] ?? FAILURES.error} at ${where(result)}. ${result.message}`;
  }

  async remove(preset) {
    const done = await this.status.guard(() => this.api.del(`/api/models/presets/${preset.id}`));
    if (done === undefined) return;
    this.status.info(`Deleted the connection ${preset.label}.`);
    fill(this.editor);
    await this.show();
  }

  edit(preset) {
    const backend = h('select', {name: 'backend'}, BACKENDS.map(([value, label]) =>
      h('option', {value, selected: (preset?.backend ?? 'ollama') === value}, label)));
    const inputs = {
      label: h('input', {type: 'text', name: 'label', required: true, maxlength: '200',
        value: preset?.label ?? ''}),
      value: h('input', {type: 'text', name: 'value', required: true, maxlength: '200',
        value: preset ? shownModel(preset) : '', autocomplete: 'off', spellcheck: 'false'}),
      api_base: h('input', {type: 'url', name: 'api_base', maxlength: '500',
        value: preset?.api_base ?? '', placeholder: 'http://localhost:11434'}),
      // Never filled with the stored key: left empty, the stored key stays as it is.
      api_key: h('input', {type: 'password', name: 'api_key', autocomplete: 'new-password',
        maxlength: '1000', value: ''}),
    };
    const clearKey = h('input', {type: 'checkbox', name: 'clear_key', id: 'connection-clear-key'});
    const keyHint = preset?.api_key.set
      ? `A key is stored (…${preset.api_key.last4}); leave empty to keep it.`
      : 'Leave empty to use LLM_API_KEY from .env (when the address is from .env too).';
    const title = preset ? `Edit ${preset.label}` : 'New connection';
    const save = h('button', {type: 'submit', class: 'primary'}, preset ? 'Save connection' : 'Create connection');
    const form = h('form', {class: 'card', 'aria-label': title},
      h('h3', {}, title),
      h('div', {class: 'grid'},
        field('Name', inputs.label).row,
        field('Backend', backend).row,
        field('Model', inputs.value, 'Ollama: a pulled model, e.g. qwen3:8b. Hosted: ' +
          'provider/model, e.g. openai/gpt-4o-mini.').row,
        field('Address', inputs.api_base, 'Empty: LLM_API_BASE from .env.').row,
        field('API key', inputs.api_key, keyHint).row),
      preset?.api_key.set
        ? h('div', {class: 'field check'}, clearKey, h('label', {for: 'connection-clear-key'}, 'Remove the stored key'))
        : null,
      h('div', {class: 'actions'}, save,
        h('button', {type: 'button', class: 'quiet', onclick: () => fill(this.editor)}, 'Cancel')));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      busy(save, () => this.save(preset, backend.value, inputs, clearKey.checked, form));
    });
    fill(this.editor, form);
    inputs.label.focus();
  }

  async save(preset, backend, inputs, clearKey, form) {
    const body = {
      label: inputs.label.value.trim(),
      value: modelValue(backend, inputs.value.value),
      api_base: inputs.api_base.value.trim() || null,
    };
    const key = inputs.api_key.value.trim();
    if (key) body.api_key = key;
    else if (clearKey) body.api_key = null;
    const result = await this.status.guard(() => (preset
      ? this.api.patch(`/api/models/presets/${preset.id}`, body)
      : this.api.post('/api/models/presets', body)), {form});
    if (!result) return;
    inputs.api_key.value = '';
    this.status.info(`Connection ${result.label} saved.`);
    fill(this.editor);
    await this.show();
  }
}
