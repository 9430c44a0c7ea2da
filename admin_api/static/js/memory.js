// Sessions & memory: summaries and saved knowledge, for every session or one, with delete;
// the sessions panel sits on the same screen and picks the session.

import {confirmButton, fill, h, when} from './dom.js';
import {safeUrl} from './markdown.js';
import {SessionsPanel} from './sessions.js';

const PAGE_SIZE = 50;
// The knowledge API has no session filter: for one session, scan this many entries at most.
const SCAN_PAGES = 10;
const SCAN_PAGE_SIZE = 200;

function source(item) {
  const href = safeUrl(item.url);
  const text = item.title || item.url;
  return h('li', {}, href ? h('a', {href, rel: 'noopener noreferrer nofollow', target: '_blank'}, text) : text);
}

/** The memory & sessions screen. */
export class MemoryScreen {
  constructor({api, status, root, spaces}) {
    this.api = api;
    this.status = status;
    this.spaces = spaces;
    this.session = null;
    this.summaryCursor = null;
    this.knowledgeCursor = null;
    this.sessions = new SessionsPanel({api, status, spaces,
      onSelect: (session) => this.select(session)});
    this.scope = h('p', {class: 'scope', id: 'memory-scope'});
    this.showAll = h('button', {type: 'button', class: 'quiet', onclick: () => this.select(null)},
      'Show every session');
    this.summaries = h('ul', {class: 'memory-list', id: 'summary-list'});
    this.knowledge = h('ul', {class: 'memory-list', id: 'knowledge-list'});
    this.moreSummaries = h('button', {type: 'button', onclick: () => this.loadSummaries(true)}, 'More summaries');
    this.moreKnowledge = h('button', {type: 'button', onclick: () => this.loadKnowledge(true)}, 'More knowledge');
    this.heading = h('h3', {id: 'memory-heading', tabindex: '-1'}, 'Memory');
    root.append(
      h('div', {class: 'columns'},
        this.sessions.element,
        h('div', {class: 'card memory'},
          this.heading,
          h('div', {class: 'toolbar'}, this.scope, this.showAll),
          h('h4', {}, 'Summaries'), this.summaries, this.moreSummaries,
          h('h4', {}, 'Saved knowledge'), this.knowledge, this.moreKnowledge)));
  }

  async show() {
    // A session of another space is no longer in view once the space changes.
    if (this.session && this.spaces.current && this.session.space_id !== this.spaces.current) {
      this.session = null;
    }
    await Promise.all([this.sessions.show(), this.reload()]);
  }

  async select(session) {
    this.session = session;
    await this.reload();
    this.heading.focus();
  }

  async reload() {
    this.scope.textContent = this.session
      ? `Session: ${this.session.title || '(untitled)'} (${this.session.id})`
      : `All sessions of ${this.spaces.current ? this.spaces.label(this.spaces.current) : 'every space'}`;
    this.showAll.hidden = this.session === null;
    await Promise.all([this.loadSummaries(false), this.loadKnowledge(false)]);
  }

  async loadSummaries(more) {
    const query = this.session
      ? {session_id: this.session.id}
      : this.spaces.query({limit: PAGE_SIZE, cursor: more ? this.summaryCursor : undefined});
    const result = await this.status.guard(() => this.api.get('/api/memory/summaries', query));
    if (!result) return;
    this.summaryCursor = result.next_cursor;
    this.moreSummaries.hidden = result.next_cursor === null;
    const items = result.items.map((item) => this.summaryItem(item));
    if (more) this.summaries.append(...items);
    else {
      fill(this.summaries, items.length ? items : h('li', {class: 'empty'}, 'No summaries yet. ',
        'When a conversation grows long (20 live messages by default), the bot summarises its ',
        'oldest messages here.'));
    }
  }

  summaryItem(item) {
    return h('li', {dataset: {id: String(item.id)}},
      h('div', {class: 'meta'},
        h('span', {class: 'badge'}, `level ${item.level}`), ' ', when(item.created_at),
        this.session ? null : [' · session ', h('code', {}, item.session_id)],
        item.condensed_into ? ` · condensed into #${item.condensed_into}` : null),
      h('p', {class: 'text'}, item.summary),
      confirmButton('Delete summary', 'Really delete?', () => this.deleteSummary(item.id)));
  }

  async knowledgePage(cursor, limit) {
    return this.api.get('/api/memory/knowledge',
      this.spaces.query({limit, cursor: cursor ?? undefined}));
  }

  async loadKnowledge(more) {
    const result = await this.status.guard(async () => {
      if (!this.session) return this.knowledgePage(more ? this.knowledgeCursor : null, PAGE_SIZE);
      const items = [];
      let cursor = null;
      for (let page = 0; page < SCAN_PAGES; page += 1) {
        const chunk = await this.knowledgePage(cursor, SCAN_PAGE_SIZE);
        items.push(...chunk.items.filter((item) => item.session_id === this.session.id));
        cursor = chunk.next_cursor;
        if (cursor === null) break;
      }
      return {items, next_cursor: null};
    });
    if (result === undefined) return;
    this.knowledgeCursor = result.next_cursor;
    this.moreKnowledge.hidden = result.next_cursor === null;
    const items = result.items.map((item) => this.knowledgeItem(item));
    if (more) this.knowledge.append(...items);
    else {
      fill(this.knowledge, items.length ? items : h('li', {class: 'empty'}, 'No saved knowledge ',
        'yet. Each web search the bot makes while answering is summarised into an entry here.'));
    }
  }

  knowledgeItem(item) {
    return h('li', {dataset: {id: String(item.id)}},
      h('div', {class: 'meta'}, when(item.created_at), ' · ', this.spaces.label(item.space_id),
        ' · query ', h('q', {}, item.query),
        item.session_id && !this.session ? [' · session ', h('code', {}, item.session_id)] : null),
      h('strong', {}, item.title),
      h('p', {class: 'text'}, item.summary),
      item.sources.length ? h('ul', {class: 'sources'}, item.sources.map(source)) : null,
      h('div', {class: 'actions'},
        confirmButton('Delete entry', 'Really delete?', () => this.deleteKnowledge(item.id)),
        this.spaces.moveControl(item.space_id, item.title, (to) => this.moveKnowledge(item, to))));
  }

  async moveKnowledge(item, to) {
    const moved = await this.status.guard(() =>
      this.api.post(`/api/memory/knowledge/${item.id}/move`, {space_id: to}));
    if (!moved) return;
    this.status.info(`Moved "${moved.title}" to ${this.spaces.label(to)}.`);
    await this.spaces.load();
    await this.loadKnowledge(false);
  }

  async deleteSummary(id) {
    if (await this.status.guard(() => this.api.del(`/api/memory/summaries/${id}`))) {
      this.status.info('Summary deleted.');
      await this.loadSummaries(false);
    }
  }

  async deleteKnowledge(id) {
    if (await this.status.guard(() => this.api.del(`/api/memory/knowledge/${id}`))) {
      this.status.info('Knowledge entry deleted.');
      await this.loadKnowledge(false);
    }
  }
}
