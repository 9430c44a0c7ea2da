// The start-up settings (access lists, the admin binding, limits…): read-only, by topic,
// secrets masked; they change only in .env or the environment, with a restart.

import {fill, h} from './dom.js';

/** A start-up value in words. */
export function startupValue(setting) {
  const value = setting.value;
  if (setting.secret) {
    if (!value?.set) return 'not set';
    return value.last4 ? `set · ends in …${value.last4}` : 'set';
  }
  if (value === null || value === undefined) return 'not set';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (Array.isArray(value)) return value.length ? value.join(', ') : 'none (empty list)';
  return String(value);
}

/** The read-only card on the Settings screen. */
export class StartupSettings {
  constructor({api, status}) {
    this.api = api;
    this.status = status;
    this.body = h('div', {id: 'startup-settings'});
    this.element = h('section', {class: 'card', 'aria-labelledby': 'startup-title'},
      h('h3', {id: 'startup-title'}, 'Start-up settings (read-only)'),
      h('p', {class: 'hint'}, 'Read once when PlayChat starts: change them in .env or the ',
        'environment, then restart. Secrets show only whether they are set.'),
      this.body);
  }

  async show() {
    // They cannot change while PlayChat runs: read once.
    if (this.loaded) return;
    const result = await this.status.guard(() => this.api.get('/api/settings/startup'));
    if (!result) return;
    this.loaded = true;
    fill(this.body, result.groups.filter((group) => group.settings.length).map((group) =>
      h('details', {class: 'startup-group', dataset: {group: group.id}},
        h('summary', {}, group.title, h('span', {class: 'meta'}, ` · ${group.settings.length}`)),
        h('dl', {class: 'facts startup'}, group.settings.map((setting) => [
          h('dt', {}, h('code', {}, setting.env),
            setting.description ? h('small', {class: 'hint'}, setting.description) : null),
          h('dd', {dataset: {key: setting.key, source: setting.source}}, startupValue(setting),
            setting.source === 'default' ? h('span', {class: 'meta'}, ' (default)') : null),
        ])))));
  }
}
