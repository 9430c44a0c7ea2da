// Sessions: list (paged), export as a JSON download, import from a file, delete.

import {busy, clip, confirmButton, field, fill, h, labelCells, when} from './dom.js';

const PAGE_SIZE = 50;

/** The sessions panel; `onSelect(session)` shows a session's memory. */
export class SessionsPanel {
  constructor({api, status, spaces, onSelect}) {
    this.api = api;
    this.status = status;
    this.spaces = spaces;
    this.onSelect = onSelect;
    this.sessions = [];
    this.nextCursor = null;
    this.rows = h('tbody');
    this.more = h('button', {type: 'button', onclick: () => this.load(true)}, 'More sessions');
    this.element = h('div', {class: 'card sessions'},
      h('h3', {}, 'Sessions'),
      h('div', {class: 'table-wrap'},
        this.table = h('table', {id: 'session-table', class: 'stack'},
          h('thead', {}, h('tr', {}, ['Title', 'Space', 'Id', 'Source', 'Model', 'Last active', 'Actions']
            .map((name) => h('th', {scope: 'col'}, name)))),
          this.rows)),
      h('div', {class: 'pager'}, this.more),
      this.importForm());
  }

  async show() {
    await this.load(false);
  }

  async load(more) {
    const query = this.spaces.query({limit: PAGE_SIZE, before: more ? this.nextCursor : undefined});
    const result = await this.status.guard(() => this.api.get('/api/sessions', query));
    if (!result) return;
    this.sessions = more ? [...this.sessions, ...result.items] : result.items;
    this.nextCursor = result.next_cursor;
    this.more.hidden = this.nextCursor === null;
    fill(this.rows, this.sessions.length
      ? this.sessions.map((session) => this.row(session))
      : h('tr', {}, h('td', {colspan: '7', class: 'empty'}, 'No sessions yet. One starts when ',
        'someone mentions the bot in Discord (it answers in a thread) or chats with it locally ',
        '(python -m bot chat); a session exported with /export can be imported below.')));
    labelCells(this.table);
  }

  row(session) {
    const id = encodeURIComponent(session.id);
    return h('tr', {dataset: {id: session.id}},
      h('td', {}, clip(session.title || '(untitled)', 60), session.closed_at ? h('span', {class: 'badge'}, 'closed') : null),
      h('td', {}, this.spaces.label(session.space_id)),
      h('td', {class: 'mono', title: session.id}, clip(session.id, 10)),
      h('td', {}, session.source),
      h('td', {}, session.model ?? 'default'),
      h('td', {}, when(session.updated_at)),
      h('td', {class: 'actions'},
        h('button', {type: 'button', onclick: () => this.onSelect(session)}, 'Memory'),
        h('a', {class: 'button', href: `/api/sessions/${id}/export`,
          download: `playchat-session-${session.id}.json`}, 'Export'),
        confirmButton('Delete', 'Really delete?', () => this.remove(session))));
  }

  async remove(session) {
    const result = await this.status.guard(() =>
      this.api.del(`/api/sessions/${encodeURIComponent(session.id)}`));
    if (!result) return;
    this.status.info(`Session "${session.title || session.id}" deleted.`);
    await this.load(false);
  }

  importForm() {
    const file = h('input', {type: 'file', accept: '.json,application/json', required: true, name: 'file'});
    const asNew = h('input', {type: 'checkbox', name: 'as_new', id: 'import-as-new'});
    const submit = h('button', {type: 'submit'}, 'Import');
    const form = h('form', {class: 'inline-fields', 'aria-label': 'Import a session'},
      field('Exported session (.json)', file).row,
      h('div', {class: 'field check'}, asNew,
        h('label', {for: 'import-as-new'}, 'Import as a new copy (when the id exists)')),
      submit);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const chosen = file.files?.[0];
      if (!chosen) return;
      await busy(submit, async () => {
        const text = await chosen.text();
        try {
          JSON.parse(text);
        } catch {
          this.status.error(new Error(`${chosen.name} is not a JSON file.`));
          return;
        }
        const result = await this.status.guard(() =>
          this.api.post('/api/sessions/import', text,
            this.spaces.query({as_new: asNew.checked ? 'true' : undefined})));
        if (!result) return;
        form.reset();
        this.status.info(`Imported as session ${result.session_id}.`);
        await this.load(false);
      });
    });
    return form;
  }
}
