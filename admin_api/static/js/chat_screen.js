// Chat with the engine in a chosen space over the SSE stream: streamed text, tool activity
// lines, sources and remembered facts as Discord shows them, and a stop button.

import {ApiError} from './api.js';
import {fill, h} from './dom.js';
import {describe} from './status.js';
import {sourceLink} from './conversations.js';
import {spaceLabel} from './spaces.js';

/** Split a server-sent event stream into the JSON payloads of its `data:` lines. */
export function* ssePayloads(buffer) {
  for (const frame of buffer) {
    const data = frame.split('\n').filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trimStart()).join('\n');
    if (data) yield JSON.parse(data);
  }
}

/** A failed turn as the operator reads it: what failed, where and the fix (the event's
 * `detail`, when the model call failed), with a link to the Status screen. */
export function operatorError(event) {
  return h('p', {class: 'bad turn-error'}, event.detail || event.value, ' ',
    h('a', {href: '#status'}, 'See Status.'));
}

const NOT_REMEMBERED = {
  memory_off: "the member's memory is off here",
  full: 'the member already has the most facts kept',
  invalid: 'the fact is empty or too long',
  failed: 'saving failed',
};

/** The receipt of a fact the turn remembered (its id, for the Members screen) or did not. */
export function rememberedText({fact_id: id, fact, saved, reason}) {
  return saved ? `🧠 Remembered as fact #${id}: ${fact}`
    : `🧠 Not remembered: ${NOT_REMEMBERED[reason] ?? NOT_REMEMBERED.failed}`;
}

/** The chat screen. */
export class ChatScreen {
  constructor({api, status, root, spaces}) {
    this.api = api;
    this.status = status;
    this.spaces = spaces;
    this.sessionId = null;
    this.controller = null;
    this.spacePick = h('select', {id: 'chat-space', name: 'space_id'});
    this.modelPick = h('select', {id: 'chat-model', name: 'model'});
    this.input = h('textarea', {id: 'chat-input', name: 'message', rows: '3', maxlength: '32000',
      required: true, placeholder: 'Ask something…'});
    this.log = h('ol', {id: 'chat-log', class: 'chat-log', 'aria-live': 'polite'});
    this.send = h('button', {type: 'submit', class: 'primary'}, 'Send');
    this.stop = h('button', {type: 'button', class: 'danger', disabled: true,
      onclick: () => this.controller?.abort()}, 'Stop');
    this.fresh = h('button', {type: 'button', class: 'quiet', onclick: () => this.reset()},
      'New conversation');
    this.where = h('p', {class: 'meta', id: 'chat-session'});
    const form = h('form', {class: 'card', 'aria-label': 'Chat'},
      h('div', {class: 'inline-fields'},
        h('div', {class: 'field'}, h('label', {for: 'chat-space'}, 'Chat in space'), this.spacePick),
        h('div', {class: 'field'}, h('label', {for: 'chat-model'}, 'Model'), this.modelPick)),
      h('div', {class: 'field'}, h('label', {for: 'chat-input'}, 'Message'), this.input),
      h('div', {class: 'actions'}, this.send, this.stop, this.fresh),
      this.where);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.ask();
    });
    this.input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    this.spacePick.addEventListener('change', () => this.reset());
    root.append(
      h('p', {class: 'hint'}, 'Talk to the bot as people do in Discord, in the space you choose ',
        '(its notes, knowledge and persona apply). Ctrl+Enter sends.'),
      h('div', {class: 'card chat-card'}, this.log), form);
    this.reset();
  }

  reset() {
    this.controller?.abort();
    this.sessionId = null;
    fill(this.log, h('li', {class: 'empty'}, 'No messages yet. Write one below and press Send.'));
    this.where.textContent = 'A new conversation starts with your first message.';
  }

  async show() {
    const list = this.spaces.spaces;
    const chosen = this.spacePick.value || this.spaces.current
      || list.find((space) => space.kind === 'local')?.id || '';
    fill(this.spacePick, list.length
      ? list.map((space) => h('option', {value: space.id}, spaceLabel(space)))
      : h('option', {value: ''}, 'Local chat'));
    this.spacePick.value = chosen;
    const result = await this.status.guard(() => this.api.get('/api/models/presets'));
    const presets = result?.presets ?? [];
    const model = this.modelPick.value;
    fill(this.modelPick, h('option', {value: ''}, 'The space\'s default'),
      // The API lists the configured model first, then working connections, then the rest.
      presets.map((preset) => h('option', {value: preset.value}, `${preset.label} (${preset.value})`
        + (preset.configured ? ' — configured' : preset.state === 'down' ? ' — not answering' : ''))));
    this.modelPick.value = presets.some((preset) => preset.value === model) ? model : '';
  }

  bubble(role, text) {
    if (this.log.querySelector('.empty')) fill(this.log);
    const body = h('p', {class: 'text'}, text);
    const item = h('li', {class: `msg msg-${role}`}, h('div', {class: 'meta'},
      h('strong', {}, role === 'user' ? 'You' : 'Bot')), body);
    this.log.append(item);
    this.toEnd();
    return {item, body};
  }

  /** True while the newest line is in view (the reader has not scrolled back to read). */
  atEnd() {
    const log = this.log;
    return log.scrollHeight - log.scrollTop - log.clientHeight < 48;
  }

  /** Show the newest line: the log scrolls to its end and the page to the log's end. */
  toEnd() {
    this.log.scrollTop = this.log.scrollHeight;
    const last = this.log.lastElementChild;
    if (last) last.scrollIntoView({block: 'nearest'});
  }

  async ask() {
    const message = this.input.value.trim();
    if (!message || this.controller) return;
    this.bubble('user', message);
    this.input.value = '';
    const answer = this.bubble('assistant', '');
    answer.item.setAttribute('aria-busy', 'true');
    const tools = h('ul', {class: 'tool-calls', 'aria-label': 'Tool activity'});
    answer.body.before(tools);
    const body = {message};
    if (this.sessionId) body.session_id = this.sessionId;
    else if (this.spacePick.value) body.space_id = this.spacePick.value;
    if (this.modelPick.value) body.model = this.modelPick.value;
    this.controller = new AbortController();
    this.send.disabled = true;
    this.stop.disabled = false;
    try {
      await this.stream(body, answer, tools, this.controller.signal);
    } catch (error) {
      if (error.name === 'AbortError') {
        answer.item.append(h('p', {class: 'meta stopped'},
          'Stopped. The bot still finishes this answer and stores it in the conversation.'));
      } else {
        answer.item.append(h('p', {class: 'bad'}, describe(error)));
        this.status.error(error);
      }
    } finally {
      answer.item.removeAttribute('aria-busy');
      this.controller = null;
      this.send.disabled = false;
      this.stop.disabled = true;
      this.input.focus();
    }
  }

  async stream(body, answer, tools, signal) {
    let response;
    try {
      response = await fetch('/api/chat/stream', {method: 'POST', credentials: 'same-origin', signal,
        headers: {'Content-Type': 'application/json', Accept: 'text/event-stream'},
        body: JSON.stringify(body)});
    } catch (error) {
      if (error.name === 'AbortError') throw error;
      throw new ApiError(0, 'network_error', error.message);
    }
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      throw new ApiError(response.status, data.error ?? 'http_error',
        data.detail ?? `HTTP ${response.status}`);
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += value;
      const frames = buffer.split('\n\n');
      buffer = frames.pop();
      for (const event of ssePayloads(frames)) {
        const following = this.atEnd();
        this.handle(event, answer, tools);
        if (following) this.toEnd();
      }
    }
  }

  handle(event, answer, tools) {
    switch (event.type) {
      case 'session_id':
        this.sessionId = event.value;
        this.where.textContent = `Conversation ${event.value} in ${this.spaces.label(this.spacePick.value)}.`;
        break;
      case 'chunk':
        answer.body.append(event.value);
        break;
      case 'tool': {
        const {id, name, status, icon, label, detail, result} = event.value;
        let line = tools.querySelector(`[data-call="${CSS.escape(id)}"]`);
        if (!line) {
          line = h('li', {class: 'tool-call', dataset: {call: id, tool: name}});
          tools.append(line);
        }
        line.dataset.status = status;
        // Only the start carries the label ("Searching the web…"); the end keeps showing it.
        if (label) line.dataset.label = label;
        const mark = status === 'running' ? '…' : status === 'done' ? '✓' : '✗';
        fill(line, h('span', {'aria-hidden': 'true'}, `${icon} `), line.dataset.label || name, ' ',
          h('span', {class: status === 'error' ? 'bad' : 'meta'}, mark,
            status === 'error' && result ? ` ${result}` : ''),
          detail ? h('span', {class: 'meta'}, ` ${detail}`) : null);
        break;
      }
      case 'sources':
        if (event.value.length) {
          answer.item.append(h('ul', {class: 'sources', 'aria-label': 'Sources'},
            event.value.map((source) => h('li', {}, sourceLink(source)))));
        }
        break;
      case 'notes_updated':
        answer.item.append(h('p', {class: 'meta'}, 'The bot updated a shared note.'));
        break;
      case 'remembered':
        answer.item.append(h('p', {class: 'meta remembered'}, rememberedText(event.value)));
        break;
      case 'done':
        answer.item.dataset.messageId = String(event.message_id);
        break;
      case 'error':
        answer.item.append(operatorError(event));
        break;
      default:
        break;
    }
  }
}
