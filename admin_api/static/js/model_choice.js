// Which connection chats (the chat model setting) and the one connection test of the saved chat
// model: a card on top of the Connections tab, beside the connections it picks from.

import {busy, fill, h} from './dom.js';

/** The "Chat model in use" card. */
export class ModelChoice {
  constructor({api, status, root}) {
    this.api = api;
    this.status = status;
    this.current = h('code', {id: 'chat-model-now'});
    this.pick = h('select', {id: 'chat-model-pick', name: 'chat_model_pick'});
    // A connection added below shows here without leaving the tab.
    this.pick.addEventListener('focus', () => this.loadChoices());
    const use = h('button', {type: 'button'}, 'Use');
    use.addEventListener('click', () => busy(use, () => this.use(this.pick.value)));
    this.result = h('output', {id: 'connection-result', class: 'result', 'aria-live': 'polite'});
    const test = h('button', {type: 'button', id: 'test-connection'}, 'Test connection');
    test.addEventListener('click', () => busy(test, () => this.test()));
    root.append(h('section', {class: 'card', 'aria-labelledby': 'chat-model-title'},
      h('h3', {id: 'chat-model-title'}, 'Chat model in use'),
      h('p', {}, 'Conversations use ', this.current, ' unless a server picks its own default ',
        '(Settings → Spaces) or a person switches with /model.'),
      h('div', {class: 'inline-fields'},
        h('div', {class: 'field'}, h('label', {for: 'chat-model-pick'}, 'Connection to use'),
          this.pick), use),
      h('p', {class: 'hint'}, 'The test calls the chat model in use once with a tiny prompt.'),
      h('div', {class: 'actions'}, test), this.result));
  }

  async show() {
    await Promise.all([this.loadCurrent(), this.loadChoices()]);
  }

  async loadCurrent() {
    const settings = await this.status.guard(() => this.api.get('/api/settings'));
    if (settings) this.current.textContent = settings.values.llm_model;
  }

  async loadChoices() {
    const result = await this.status.guard(() => this.api.get('/api/models/presets'));
    if (!result) return;
    const chosen = this.pick.value;
    fill(this.pick, result.presets.length
      ? result.presets.map((preset) => h('option', {value: preset.value},
        `${preset.label} (${preset.value})`))
      : h('option', {value: ''}, 'No connections yet: add one below'));
    if (result.presets.some((preset) => preset.value === chosen)) this.pick.value = chosen;
  }

  async use(model) {
    if (!model) return;
    const result = await this.status.guard(() =>
      this.api.put('/api/settings', {values: {llm_model: model}}));
    if (!result) return;
    this.current.textContent = result.values.llm_model;
    this.status.info(`Chat model is now ${result.values.llm_model}.`);
  }

  async test() {
    this.result.textContent = 'Testing…';
    delete this.result.dataset.ok;
    const result = await this.status.guard(() => this.api.post('/api/models/test'));
    if (!result) {
      this.result.textContent = '';
      return;
    }
    this.result.dataset.ok = String(result.ok);
    this.result.textContent = result.ok
      ? `Connected: ${result.model} answered in ${result.latency_ms} ms: “${result.reply}”`
      : `Failed: ${result.model} did not answer (${result.latency_ms} ms): ${result.error}`;
  }
}

/** The Connections tab: the chat model in use, then the connections themselves. */
export function withModelChoice(Screen) {
  return class {
    constructor(args) {
      this.choice = new ModelChoice(args);
      this.screen = new Screen(args);
      // The connections list reloads after every change: the choice follows it.
      const reload = this.screen.show.bind(this.screen);
      this.screen.show = async () => {
        await reload();
        await this.choice.loadChoices();
      };
    }

    async show() {
      await Promise.all([this.choice.loadCurrent(), this.screen.show()]);
    }
  };
}
