// Live log: the application log as it is written (GET /api/logs/live, server-sent events; the API
// masks secrets), filtered by level, text and logger, with pause / resume; the page keeps the
// newest MAX_LINES.

import {fill, h, plural} from './dom.js';

export const MAX_LINES = 500;
const BACKLOG = 200;
const LEVELS = ['DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'];

function clock(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleTimeString();
}

/** The live log screen. */
export class LiveLogScreen {
  constructor({api, status, root}) {
    this.api = api;
    this.status = status;
    this.source = null;
    this.paused = false;
    this.held = [];
    this.level = h('select', {id: 'live-level', name: 'level'},
      LEVELS.map((level) => h('option', {value: level, selected: level === 'INFO'}, level)));
    this.level.addEventListener('change', () => this.restart());
    // Text and logger filters run on the server (GET /api/logs/live?text=&logger=).
    this.text = h('input', {type: 'search', id: 'live-text', name: 'text', maxlength: '200',
      placeholder: 'e.g. timeout'});
    this.logger = h('input', {type: 'search', id: 'live-logger', name: 'logger', maxlength: '500',
      placeholder: 'e.g. bot.llm,-discord'});
    for (const input of [this.text, this.logger]) {
      input.addEventListener('change', () => this.restart());
    }
    this.pauseButton = h('button', {type: 'button', id: 'live-pause', 'aria-pressed': 'false',
      onclick: () => this.togglePause()}, 'Pause');
    this.clearButton = h('button', {type: 'button', class: 'quiet', id: 'live-clear',
      onclick: () => this.clearLines()}, 'Clear');
    this.state = h('span', {class: 'meta', id: 'live-state'});
    this.lines = h('ol', {class: 'live-lines', id: 'live-lines', dataset: {lines: '0'},
      'aria-label': 'Application log, newest last', tabindex: '0'});
    this.empty = h('p', {class: 'empty', id: 'live-empty'},
      'Nothing logged at this level yet. Lines appear here as PlayChat writes them.');
    root.append(
      h('div', {class: 'card inline-fields'},
        h('div', {class: 'field'}, h('label', {for: 'live-level'}, 'Level and above'), this.level),
        h('div', {class: 'field'}, h('label', {for: 'live-text'}, 'Text contains'), this.text),
        h('div', {class: 'field'}, h('label', {for: 'live-logger'},
          'Loggers (comma-separated; -name leaves one out)'), this.logger),
        h('div', {class: 'actions'}, this.pauseButton, this.clearButton, this.state)),
      h('p', {class: 'hint'}, `The newest ${MAX_LINES} lines are kept here; secrets are masked.`),
      h('div', {class: 'card'}, this.empty, this.lines),
    );
  }

  async show() {
    this.restart();
  }

  hide() {
    this.source?.close();
    this.source = null;
  }

  restart() {
    this.hide();
    this.held = [];
    this.clearLines();
    const query = new URLSearchParams({level: this.level.value, backlog: String(BACKLOG)});
    if (this.text.value.trim()) query.set('text', this.text.value.trim());
    if (this.logger.value.trim()) query.set('logger', this.logger.value.trim());
    const url = `/api/logs/live?${query}`;
    const source = new EventSource(url);
    this.source = source;
    source.addEventListener('open', () => this.setState(this.paused ? 'Paused.' : 'Live.'));
    source.addEventListener('message', (event) => {
      let entry;
      try {
        entry = JSON.parse(event.data);
      } catch {
        return;
      }
      if (this.paused) {
        this.held.push(entry);
        if (this.held.length > MAX_LINES) this.held.splice(0, this.held.length - MAX_LINES);
        this.setState(`Paused; ${plural(this.held.length, 'new line')} waiting.`);
      } else {
        this.add([entry]);
      }
    });
    source.addEventListener('error', () => {
      if (source !== this.source) return;
      if (source.readyState === EventSource.CLOSED) {
        this.source = null;
        this.setState('Stopped: the log stream was refused.');
        // A 401 (the login expired) hands over to the login form; anything else is reported.
        this.status.guard(() => this.api.get('/api/auth/session'));
      } else {
        this.setState('Reconnecting…');
      }
    });
  }

  setState(text) {
    this.state.textContent = text;
  }

  togglePause() {
    this.paused = !this.paused;
    this.pauseButton.textContent = this.paused ? 'Resume' : 'Pause';
    this.pauseButton.setAttribute('aria-pressed', String(this.paused));
    if (!this.paused) {
      const held = this.held;
      this.held = [];
      this.add(held);
      this.setState('Live.');
    } else {
      this.setState('Paused.');
    }
  }

  clearLines() {
    fill(this.lines);
    this.lines.dataset.lines = '0';
    this.empty.hidden = false;
  }

  add(entries) {
    if (!entries.length) return;
    const box = this.lines;
    const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 24;
    for (const entry of entries) box.append(this.line(entry));
    while (box.childElementCount > MAX_LINES) box.firstElementChild.remove();
    box.dataset.lines = String(box.childElementCount);
    this.empty.hidden = box.childElementCount > 0;
    if (atEnd) box.scrollTop = box.scrollHeight;
  }

  line(entry) {
    if (entry.type === 'dropped') {
      return h('li', {class: 'live-dropped'},
        `${plural(entry.count, 'line')} skipped: the page read more slowly than PlayChat logged.`);
    }
    return h('li', {class: `live-line level-${entry.level.toLowerCase()}`, dataset: {id: String(entry.id)}},
      h('time', {datetime: entry.time}, clock(entry.time)), ' ',
      h('span', {class: 'live-level'}, entry.level), ' ',
      h('span', {class: 'live-logger'}, entry.logger), ' ',
      h('span', {class: 'live-message'}, entry.message));
  }
}
