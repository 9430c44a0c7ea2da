// Conversations: spaces → channels → threads → transcript (tool calls, sources, summaries,
// archived messages), with full-text search whose hits open the transcript at the message.

import {busy, fill, h, plural, when} from './dom.js';
import {SearchPanel} from './search.js';
import {spaceLabel} from './spaces.js';

// Messages per page of a transcript (half before and half after a search hit).
const PAGE = 100;

/** A channel as people know it. */
export function channelLabel(channel) {
  if (channel.channel_id === null) return 'Outside Discord (terminal, admin chat, imports)';
  return channel.name ? `#${channel.name}` : `Channel ${channel.channel_id}`;
}

/** A link that opens in a new tab without handing the page over to it. */
export function sourceLink(source) {
  let safe = null;
  try {
    const url = new URL(source.url);
    if (url.protocol === 'http:' || url.protocol === 'https:') safe = url.href;
  } catch {
    safe = null;
  }
  const label = source.title || source.url;
  return safe
    ? h('a', {href: safe, target: '_blank', rel: 'noopener noreferrer'}, label)
    : h('span', {}, label);
}

/** What became of a call that asked its member first (`approval`), with who decided. */
export function approvalText(call) {
  const by = call.approved_by ? ` by ${call.approved_by}` : '';
  switch (call.approval) {
    case 'allowed': return `allowed${by}`;
    case 'denied': return `denied${by}`;
    case 'timeout': return 'no answer in time: not run';
    case 'unasked': return 'nobody could be asked: not run';
    default: return null;
  }
}

/** A tool call as Discord shows it: its name, ✓ or ✗ (with why), and its sources. */
export function toolCallView(call) {
  const approval = approvalText(call);
  const state = call.ok ? h('span', {class: 'ok'}, '✓ ', h('span', {class: 'sr-only'}, 'succeeded'))
    : h('span', {class: 'bad'}, '✗ failed');
  return h('li', {class: 'tool-call', dataset: {ok: String(call.ok), tool: call.tool}},
    h('span', {'aria-hidden': 'true'}, '🔧 '), h('strong', {}, call.tool), ' ', state,
    call.duration_ms !== null && call.duration_ms !== undefined ? h('span', {class: 'meta'}, ` ${call.duration_ms} ms`) : null,
    approval ? h('span', {class: 'meta approval', dataset: {approval: call.approval}}, ` · 🔐 ${approval}`) : null,
    call.ok ? null : h('span', {class: 'bad reason'}, ` — ${call.error ?? 'no reason given'}`),
    h('details', {}, h('summary', {}, 'Arguments'), h('pre', {}, call.arguments)),
    call.sources.length
      ? h('ul', {class: 'sources', 'aria-label': `Sources of ${call.tool}`},
        call.sources.map((source) => h('li', {}, sourceLink(source))))
      : null);
}

/** The conversations screen. */
export class ConversationsScreen {
  constructor({api, status, root, spaces}) {
    this.api = api;
    this.status = status;
    this.spaces = spaces;
    this.space = '';
    this.channel = null;
    this.session = null;
    this.view = null;
    this.search = new SearchPanel({api, status, spaces,
      openMessage: (space, session, message) => this.openMessage(space, session, message)});
    this.spacePick = h('select', {id: 'conv-space', name: 'conv_space'});
    this.spacePick.addEventListener('change', () => this.pickSpace(this.spacePick.value));
    this.channelList = h('ul', {id: 'conv-channels', class: 'pick-list'});
    this.threadList = h('ul', {id: 'conv-threads', class: 'pick-list'});
    this.transcript = h('div', {id: 'conv-transcript'});
    root.append(
      this.search.root,
      h('div', {class: 'conv-browse'},
        h('section', {class: 'card conv-column', 'aria-label': 'Channels'},
          h('div', {class: 'field'}, h('label', {for: 'conv-space'}, 'Server or space'), this.spacePick),
          h('h3', {}, 'Channels'), this.channelList),
        h('section', {class: 'card conv-column', 'aria-label': 'Threads'},
          h('h3', {}, 'Threads'), this.threadList),
        h('section', {class: 'card conv-transcript', 'aria-labelledby': 'conv-transcript-title'},
          h('h3', {id: 'conv-transcript-title'}, 'Transcript'), this.transcript)));
  }

  async show() {
    const list = this.spaces.spaces;
    const wanted = this.spaces.current || this.space || list[0]?.id || '';
    fill(this.spacePick, list.map((space) => h('option', {value: space.id}, spaceLabel(space))));
    if (!list.length) {
      fill(this.channelList, h('li', {class: 'empty'}, 'No conversations yet. They appear here ',
        'once someone talks to the bot in Discord, in the terminal or on the Chat screen.'));
      fill(this.threadList);
      fill(this.transcript);
      return;
    }
    this.spacePick.value = wanted;
    if (wanted !== this.space) await this.pickSpace(wanted);
    else await this.loadChannels();
  }

  async pickSpace(space) {
    this.space = space;
    this.spacePick.value = space;
    this.channel = null;
    this.session = null;
    fill(this.threadList, h('li', {class: 'empty'}, 'Pick a channel to see its threads.'));
    fill(this.transcript, h('p', {class: 'empty'}, 'Pick a thread to read it.'));
    await this.loadChannels();
  }

  async loadChannels() {
    const page = await this.status.guard(() =>
      this.api.get('/api/conversations/channels', {space: this.space, limit: 200}));
    if (!page) return;
    fill(this.channelList, page.items.length
      ? page.items.map((channel) => {
        const key = channel.channel_id ?? '0';
        return h('li', {}, h('button', {type: 'button', class: 'pick', dataset: {channel: key},
          'aria-current': this.channel === key ? 'true' : null,
          onclick: () => this.pickChannel(key)},
        h('span', {class: 'pick-name'}, channelLabel(channel)),
        h('span', {class: 'meta'}, `${plural(channel.threads, 'thread')} · ${when(channel.last_activity)}`)));
      })
      : h('li', {class: 'empty'}, 'No conversations in this space yet. They appear once ',
        'someone talks to the bot here; to start one yourself, use the Chat screen.'));
  }

  mark(list, attribute, value) {
    for (const button of list.querySelectorAll('button.pick')) {
      if (button.dataset[attribute] === value) button.setAttribute('aria-current', 'true');
      else button.removeAttribute('aria-current');
    }
  }

  async pickChannel(key) {
    this.channel = key;
    this.mark(this.channelList, 'channel', key);
    const page = await this.status.guard(() =>
      this.api.get('/api/conversations/threads', {space: this.space, channel: key, limit: 200}));
    if (!page) return;
    fill(this.threadList, page.items.length
      ? page.items.map((thread) => h('li', {}, h('button', {type: 'button', class: 'pick',
        dataset: {session: thread.session_id}, onclick: () => this.openSession(thread.session_id)},
      h('span', {class: 'pick-name'}, thread.title || 'Untitled'),
      h('span', {class: 'meta'}, plural(thread.messages, 'message'),
        thread.archived_messages ? `, ${thread.archived_messages} archived` : '',
        ` · ${when(thread.updated_at)}`, thread.closed_at ? ' · closed' : ''))))
      : h('li', {class: 'empty'}, 'No threads in this channel yet. Mention the bot there in ',
        'Discord to open one.'));
  }

  /** One page of a transcript (`params`: latest, before or cursor, with limit). */
  page(sessionId, params) {
    return this.status.guard(() => this.api.get(
      `/api/conversations/${encodeURIComponent(sessionId)}/transcript`, {limit: PAGE, ...params}));
  }

  /** Keep a page's messages and summaries (earlier pages go first, later ones last). */
  take(page, where) {
    this.view.session = page.session;
    if (where === 'earlier') this.view.items.unshift(...page.items);
    else this.view.items.push(...page.items);
    for (const summary of page.summaries) this.view.summaries.set(summary.id, summary);
  }

  /**
   * Show a session's transcript from its newest messages ("Load earlier messages" pages back);
   * with `messageId`, the messages around it, scrolled to it and focused.
   */
  async openSession(sessionId, messageId = null) {
    this.session = sessionId;
    this.mark(this.threadList, 'session', sessionId);
    this.view = {session: null, items: [], summaries: new Map(), earlier: null, later: null};
    const around = messageId !== null;
    const head = await this.page(sessionId, around
      ? {before: messageId + 1, limit: PAGE / 2} : {latest: true});
    if (!head || this.session !== sessionId) return;
    this.take(head, 'later');
    this.view.earlier = head.earlier_cursor ?? null;
    this.view.later = head.next_cursor ?? null;
    if (around && this.view.later !== null) {
      const tail = await this.page(sessionId, {cursor: messageId, limit: PAGE / 2});
      if (!tail || this.session !== sessionId) return;
      this.take(tail, 'later');
      this.view.later = tail.next_cursor ?? null;
    }
    this.render();
    if (around) {
      const target = this.transcript.querySelector(`[data-message-id="${messageId}"]`);
      if (target) {
        target.classList.add('found');
        target.scrollIntoView({block: 'center'});
        target.focus({preventScroll: true});
      }
    } else {
      this.transcript.querySelector('h4')?.focus({preventScroll: false});
    }
  }

  /** Load the page before the first message shown, keeping the reader's place. */
  async loadEarlier() {
    const sessionId = this.session;
    const page = await this.page(sessionId, {before: this.view.earlier});
    if (!page || this.session !== sessionId) return;
    const firstShown = this.view.items[0]?.id;
    this.take(page, 'earlier');
    this.view.earlier = page.earlier_cursor ?? null;
    this.render();
    // Focus stays where the reader was: the button if there is more, else the first message.
    const next = this.transcript.querySelector('#conv-earlier')
      ?? this.transcript.querySelector(`[data-message-id="${firstShown}"]`);
    next?.focus();
  }

  /** Load the page after the last message shown. */
  async loadLater() {
    const sessionId = this.session;
    const page = await this.page(sessionId, {cursor: this.view.later});
    if (!page || this.session !== sessionId) return;
    const lastShown = this.view.items[this.view.items.length - 1]?.id;
    this.take(page, 'later');
    this.view.later = page.next_cursor ?? null;
    this.render();
    (this.transcript.querySelector('#conv-later')
      ?? this.transcript.querySelector(`[data-message-id="${lastShown}"]`))?.focus();
  }

  /** Follow a search hit: its space, its channel's threads, its transcript at the message. */
  async openMessage(spaceId, sessionId, messageId) {
    if (spaceId !== this.space) await this.pickSpace(spaceId);
    await this.openSession(sessionId, messageId);
  }

  render() {
    const {session, items, earlier, later} = this.view;
    const summaries = [...this.view.summaries.values()];
    const starts = new Map();
    for (const summary of summaries) {
      if (summary.first_message_id === null) continue;
      const list = starts.get(summary.first_message_id) ?? [];
      list.push(summary);
      starts.set(summary.first_message_id, list);
    }
    const parts = [h('h4', {tabindex: '-1'}, session.title || 'Untitled',
      h('span', {class: 'meta'}, ` · ${session.source}`, session.model ? ` · ${session.model}` : ''))];
    if (!items.length) {
      parts.push(h('p', {class: 'empty'}, 'This conversation has no messages yet. Messages ',
        'appear here as soon as someone writes in its thread.'));
    }
    if (earlier !== null) {
      parts.push(h('button', {type: 'button', id: 'conv-earlier', class: 'quiet',
        onclick: (event) => busy(event.currentTarget, () => this.loadEarlier())},
      'Load earlier messages'));
    }
    const list = h('ol', {class: 'transcript'});
    for (const item of items) {
      for (const summary of starts.get(item.id) ?? []) list.append(this.summary(summary));
      list.append(this.message(item));
    }
    parts.push(list);
    const loose = summaries.filter((summary) => summary.first_message_id === null);
    if (loose.length) parts.push(h('h4', {}, 'Older summaries'), h('ol', {class: 'transcript'}, loose.map((s) => this.summary(s))));
    if (later !== null) {
      parts.push(h('button', {type: 'button', id: 'conv-later', class: 'quiet',
        onclick: (event) => busy(event.currentTarget, () => this.loadLater())},
      'Load later messages'));
    }
    fill(this.transcript, parts);
  }

  summary(summary) {
    const covers = summary.messages
      ? `covers ${plural(summary.messages, 'message')}, #${summary.first_message_id}–#${summary.last_message_id}`
      : 'covers older summaries';
    return h('li', {class: 'summary', dataset: {summaryId: String(summary.id)}},
      h('div', {class: 'meta'}, `Summary ${summary.id}`, summary.level ? ` (level ${summary.level})` : '',
        ` · ${covers} · ${when(summary.created_at)}`,
        summary.condensed_into ? ` · condensed into summary ${summary.condensed_into}` : ''),
      h('p', {class: 'text'}, summary.summary));
  }

  message(item) {
    const who = item.role === 'assistant' ? 'Bot' : (item.author_name || item.role);
    return h('li', {class: `msg msg-${item.role}${item.archived ? ' archived' : ''}`, tabindex: '-1',
      id: `msg-${item.id}`, dataset: {messageId: String(item.id)}},
    h('div', {class: 'meta'}, h('strong', {}, who), ` · #${item.id} · ${when(item.created_at)}`,
      item.archived ? h('span', {class: 'badge'}, `Archived — in summary ${item.memory_id ?? '?'}`) : null),
    item.tool_calls.length
      ? h('ul', {class: 'tool-calls', 'aria-label': 'Tool calls'}, item.tool_calls.map(toolCallView))
      : null,
    h('p', {class: 'text'}, item.content));
  }
}
