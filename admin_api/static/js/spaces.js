// Spaces: the selector that scopes every screen, and the spaces screen (counts, purge).

import {busy, fill, h, labelCells, when} from './dom.js';

/** How many characters of a server's name a label keeps (the id after it is never cut). */
export const NAME_CHARS = 16;

/** A space as people know it: the server's name (a long one shortened with "…") with its whole
 * id, or the id alone. */
export function spaceLabel(space) {
  if (!space.name) return space.id;
  const name = space.name.length > NAME_CHARS ? `${space.name.slice(0, NAME_CHARS - 1).trimEnd()}…` : space.name;
  return `${name} (${space.id})`;
}

/** The full label, for a tooltip. */
export function spaceTitle(space) {
  return space.name ? `${space.name} (${space.id})` : space.id;
}

/** The chosen space ('' is every space) and the list behind the selector. */
export class SpaceChoice {
  constructor({api, status, select}) {
    this.api = api;
    this.status = status;
    this.select = select;
    this.spaces = [];
    this.listeners = [];
    select.addEventListener('change', () => {
      select.title = select.selectedOptions[0]?.title ?? '';
      for (const listener of this.listeners) listener(this.current);
    });
  }

  /** The selected space id, '' for every space. */
  get current() {
    return this.select.value;
  }

  /** Call `listener(spaceId)` whenever the selection changes. */
  onChange(listener) {
    this.listeners.push(listener);
  }

  /** `extra` plus `space` when one space is chosen. */
  query(extra = {}) {
    return this.current ? {...extra, space: this.current} : {...extra};
  }

  /** The label of a space id (its server name when known). */
  label(id) {
    const space = this.spaces.find((item) => item.id === id);
    return space ? spaceLabel(space) : id;
  }

  /** Every known space but `id`. */
  others(id) {
    return this.spaces.filter((space) => space.id !== id);
  }

  /** Read the spaces again and rebuild the options, keeping the choice while it exists. */
  async load() {
    const result = await this.status.guard(() => this.api.get('/api/spaces'));
    if (!result) return;
    this.spaces = result.spaces;
    const chosen = this.current;
    fill(this.select, h('option', {value: ''}, 'All spaces'),
      this.spaces.map((space) => h('option', {value: space.id, title: spaceTitle(space)},
        spaceLabel(space))));
    const kept = this.spaces.some((space) => space.id === chosen) ? chosen : '';
    this.select.value = kept;
    this.select.title = this.select.selectedOptions[0]?.title ?? '';
    if (kept !== chosen) for (const listener of this.listeners) listener(kept);
  }

  /** A select of the other spaces and a button that calls `move(targetId)`. */
  moveControl(fromId, what, move) {
    const targets = this.others(fromId);
    if (!targets.length) return null;
    const target = h('select', {'aria-label': `Space to move ${what} to`},
      targets.map((space) => h('option', {value: space.id}, spaceLabel(space))));
    const button = h('button', {type: 'button'}, 'Move to space');
    button.addEventListener('click', () => busy(button, () => move(target.value)));
    return h('span', {class: 'move-space'}, target, button);
  }
}

/** The spaces screen: every space with what it holds; delete one space's data. */
export class SpacesScreen {
  constructor({api, status, root, spaces}) {
    this.api = api;
    this.status = status;
    this.spaces = spaces;
    this.presets = [];
    this.rows = h('tbody');
    this.confirm = h('div', {id: 'space-confirm'});
    root.append(
      h('p', {class: 'hint'},
        'A space is one Discord server, one user\'s direct messages, or a local chat. ',
        'Deleting a space\'s data removes its sessions, notes, knowledge (and files), tags, ',
        'word pool and topic settings; other spaces keep theirs.'),
      h('div', {class: 'table-wrap'},
        this.table = h('table', {id: 'space-table', class: 'stack'},
          h('thead', {}, h('tr', {}, ['Name', 'Id', 'Kind', 'Sessions', 'Notes', 'Knowledge', 'Left',
            'Default model', 'Time zone', 'Actions'].map((name) => h('th', {scope: 'col'}, name)))),
          this.rows)),
      h('datalist', {id: 'space-zones'},
        (Intl.supportedValuesOf?.('timeZone') ?? []).map((name) => h('option', {value: name}))),
      this.confirm);
  }

  async show() {
    fill(this.confirm);
    await this.spaces.load();
    const presets = await this.status.guard(() => this.api.get('/api/models/presets'));
    this.presets = presets?.presets ?? [];
    const list = this.spaces.spaces;
    fill(this.rows, list.length
      ? list.map((space) => this.row(space))
      : h('tr', {}, h('td', {colspan: '10', class: 'empty'}, 'No spaces yet. A space appears ',
        'when the bot is added to a Discord server, when someone sends it a direct message, or ',
        'with the first local chat.')));
    labelCells(this.table);
  }

  row(space) {
    return h('tr', {dataset: {id: space.id}},
      h('td', {}, space.name || '—'),
      h('td', {class: 'mono'}, space.id),
      h('td', {}, space.kind),
      h('td', {class: 'num'}, String(space.sessions)),
      h('td', {class: 'num'}, String(space.notes)),
      h('td', {class: 'num'}, String(space.knowledge)),
      h('td', {}, space.left_at ? when(space.left_at) : '—'),
      h('td', {}, this.modelPick(space)),
      h('td', {}, this.zoneField(space)),
      h('td', {class: 'actions'},
        h('button', {type: 'button', class: 'danger', onclick: () => this.ask(space)},
          'Delete this space\'s data…')));
  }

  /** The space's default model, picked among the model connections (presets). */
  modelPick(space) {
    const current = space.default_model ?? '';
    const options = [h('option', {value: ''}, 'Global model (.env)'),
      this.presets.map((preset) => h('option', {value: preset.value}, `${preset.label} (${preset.value})`))];
    if (current && !this.presets.some((preset) => preset.value === current)) {
      options.push(h('option', {value: current}, `${current} (no connection)`));
    }
    const select = h('select', {'aria-label': `Default model of ${spaceLabel(space)}`}, options);
    select.value = current;
    select.addEventListener('change', async () => {
      select.disabled = true;
      const result = await this.status.guard(() => this.api.patch(
        `/api/spaces/${encodeURIComponent(space.id)}`, {default_model: select.value || null}));
      select.disabled = false;
      if (!result) {
        select.value = space.default_model ?? '';
        return;
      }
      space.default_model = result.default_model;
      this.status.info(`${spaceLabel(space)} now uses ${result.default_model ?? 'the global model'}.`);
    });
    return select;
  }

  /** The space's time zone (its budget days, the times recall shows); empty: UTC. */
  zoneField(space) {
    const input = h('input', {type: 'text', value: space.timezone ?? '', placeholder: 'UTC',
      list: 'space-zones', autocomplete: 'off', 'aria-label': `Time zone of ${spaceLabel(space)}`});
    input.addEventListener('change', async () => {
      input.disabled = true;
      const result = await this.status.guard(() => this.api.patch(
        `/api/spaces/${encodeURIComponent(space.id)}`, {timezone: input.value.trim() || null}));
      input.disabled = false;
      if (!result) {
        input.value = space.timezone ?? '';
        return;
      }
      space.timezone = result.timezone;
      this.status.info(`${spaceLabel(space)} now keeps time in ${result.timezone ?? 'UTC'}.`);
    });
    return input;
  }

  ask(space) {
    const name = spaceLabel(space);
    const titleId = 'space-confirm-title';
    const yes = h('button', {type: 'button', class: 'danger'}, `Delete all data of ${name}`);
    const no = h('button', {type: 'button', class: 'quiet', onclick: () => fill(this.confirm)}, 'Cancel');
    yes.addEventListener('click', () => busy(yes, () => this.purge(space)));
    fill(this.confirm, h('div', {class: 'card confirm', role: 'alertdialog', 'aria-labelledby': titleId},
      h('h3', {id: titleId}, `Delete every record of ${name}?`),
      h('p', {}, `${space.sessions} session(s), ${space.notes} note page(s) and ${space.knowledge} `,
        'knowledge entries (with their files), plus tags, word pool and topic settings. ',
        'This cannot be undone.'),
      h('div', {class: 'actions'}, yes, no)));
    no.focus();
  }

  async purge(space) {
    const result = await this.status.guard(() =>
      this.api.del(`/api/spaces/${encodeURIComponent(space.id)}`));
    if (!result) return;
    this.status.info(`Deleted the data of ${spaceLabel(space)}: ${result.total_rows} row(s), ` +
      `${result.files} file(s).`);
    await this.show();
  }
}
