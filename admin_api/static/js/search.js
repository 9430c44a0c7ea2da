// Full-text search over messages, notes and knowledge; a message hit opens its transcript.

import {fill, h, when} from './dom.js';

const KINDS = [['', 'Everything'], ['messages', 'Messages'], ['notes', 'Notes'], ['knowledge', 'Knowledge']];
const KIND_LABEL = {messages: 'Message', notes: 'Note', knowledge: 'Knowledge'};

/**
 * A snippet as text with <mark> around the matches. `matches` are [start, end) offsets in
 * Unicode code points, so the text is indexed as an array of code points, not UTF-16 units.
 */
export function highlighted(snippet) {
  const chars = Array.from(snippet.text ?? '');
  const parts = [];
  let at = 0;
  const spans = [...(snippet.matches ?? [])].sort((a, b) => a.start - b.start);
  for (const {start, end} of spans) {
    if (start < at || end <= start) continue;
    if (start > at) parts.push(chars.slice(at, start).join(''));
    parts.push(h('mark', {}, chars.slice(start, end).join('')));
    at = end;
  }
  if (at < chars.length) parts.push(chars.slice(at).join(''));
  return h('span', {class: 'snippet'}, parts);
}

/** The search form and its results; `openMessage(spaceId, sessionId, messageId)` follows a hit. */
export class SearchPanel {
  constructor({api, status, spaces, openMessage}) {
    this.api = api;
    this.status = status;
    this.spaces = spaces;
    this.openMessage = openMessage;
    this.query = null;
    this.input = h('input', {type: 'search', name: 'q', id: 'search-q', maxlength: '200', required: true,
      placeholder: 'e.g. 東京タワー', autocomplete: 'off'});
    this.kind = h('select', {name: 'kind', id: 'search-kind'},
      KINDS.map(([value, label]) => h('option', {value}, label)));
    this.results = h('div', {id: 'search-results', 'aria-live': 'polite'});
    this.more = h('button', {type: 'button', hidden: true, onclick: () => this.run(true)}, 'More results');
    const form = h('form', {class: 'inline-fields search-form', role: 'search', 'aria-label': 'Search'},
      h('div', {class: 'field'}, h('label', {for: 'search-q'}, 'Search messages, notes and knowledge'),
        this.input),
      h('div', {class: 'field narrow-field'}, h('label', {for: 'search-kind'}, 'In'), this.kind),
      h('button', {type: 'submit', class: 'primary'}, 'Search'));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.run(false);
    });
    this.root = h('div', {class: 'card', id: 'search'}, form,
      h('p', {class: 'hint'}, 'Every word must occur; Japanese works without spaces. ',
        'The space chosen at the top limits the search.'),
      this.results, this.more);
  }

  async run(more) {
    const q = this.input.value.trim();
    if (!q) return;
    if (!more) this.query = {q, kind: this.kind.value, cursor: null, hits: []};
    const query = this.spaces.query({q, kind: this.query.kind, limit: 20, cursor: this.query.cursor});
    const page = await this.status.guard(() => this.api.get('/api/search', query));
    if (!page) return;
    this.query.hits.push(...page.items);
    this.query.cursor = page.next_cursor;
    this.render();
  }

  render() {
    const {hits, cursor} = this.query;
    this.more.hidden = cursor === null || cursor === undefined;
    fill(this.results, hits.length
      ? [h('p', {class: 'meta'}, `${hits.length} result(s)`),
        h('ol', {class: 'search-hits'}, hits.map((hit) => this.hit(hit)))]
      : h('p', {class: 'empty'}, 'Nothing found. Try another word, a longer one (3 or more ',
        'characters search the whole history), or All spaces.'));
  }

  hit(hit) {
    const where = [KIND_LABEL[hit.kind] ?? hit.kind, this.spaces.label(hit.space_id), when(hit.created_at)];
    if (hit.role) where.splice(1, 0, hit.author ? `${hit.role} · ${hit.author}` : hit.role);
    const heading = hit.title ?? (hit.kind === 'messages' ? 'Message' : `#${hit.id}`);
    let open = null;
    if (hit.kind === 'messages' && hit.session_id) {
      open = h('a', {href: '#conversations', class: 'open-hit',
        onclick: (event) => {
          event.preventDefault();
          this.openMessage(hit.space_id, hit.session_id, hit.message_id);
        }}, `Open in transcript`);
    } else if (hit.kind === 'notes') {
      open = h('a', {href: '#notes'}, 'Open notes');
    } else if (hit.kind === 'knowledge' && hit.session_id) {
      open = h('a', {href: '#conversations', class: 'open-hit',
        onclick: (event) => {
          event.preventDefault();
          this.openMessage(hit.space_id, hit.session_id, null);
        }}, 'Open its conversation');
    }
    return h('li', {class: 'search-hit', dataset: {kind: hit.kind}},
      h('div', {class: 'meta'}, where.join(' · ')),
      h('strong', {}, heading), ' ',
      h('p', {class: 'text'}, highlighted(hit.snippet)),
      open);
  }
}
