// Word pool and tags per channel: the nouns topic openers draw on, and the recent tags.

import {fill, h, when} from './dom.js';
import {spaceLabel} from './spaces.js';

/** Channels a person can pick, by name: the bot's channel directory (grouped by server). */
export async function directoryChannels(api, space) {
  const result = await api.get('/api/directory', space ? {space} : {});
  const out = [];
  for (const server of result.servers) {
    for (const channel of server.channels) {
      if (channel.kind === 'category' || channel.kind === 'voice') continue;
      out.push({id: String(channel.channel_id), name: channel.name, space: server.space_id,
        server: server.name});
    }
  }
  return out;
}

/** The word pool and tags screen. */
export class WordsScreen {
  constructor({api, status, root, spaces}) {
    this.api = api;
    this.status = status;
    this.spaces = spaces;
    this.channels = [];
    this.pick = h('select', {id: 'words-channel', name: 'channel'});
    this.pick.addEventListener('change', () => this.load());
    this.body = h('div', {id: 'words-body'});
    root.append(
      h('p', {class: 'hint'}, 'A channel\'s word pool holds the nouns people used there lately; ',
        'topic openers draw on it. Tags are what its messages and summaries were about.'),
      h('div', {class: 'card'},
        h('div', {class: 'field'}, h('label', {for: 'words-channel'}, 'Channel'), this.pick),
        this.body));
  }

  async show() {
    const space = this.spaces.current;
    const known = await this.status.guard(() => directoryChannels(this.api, space));
    if (!known) return;
    this.channels = known;
    const chosen = this.pick.value;
    if (!known.length) {
      fill(this.pick);
      this.pick.disabled = true;
      fill(this.body, h('p', {class: 'empty'}, 'No channels known yet. Channels appear once the bot ',
        'is connected to a Discord server; then pick one here to see its word pool and tags.'));
      return;
    }
    this.pick.disabled = false;
    const servers = new Map();
    for (const channel of known) {
      const key = channel.space;
      if (!servers.has(key)) servers.set(key, h('optgroup', {label: channel.server || this.spaces.label(key)}));
      servers.get(key).append(h('option', {value: `${channel.space}|${channel.id}`}, `#${channel.name}`));
    }
    fill(this.pick, [...servers.values()]);
    if ([...this.pick.options].some((option) => option.value === chosen)) this.pick.value = chosen;
    await this.load();
  }

  async load() {
    const [space, channel] = this.pick.value.split('|');
    if (!channel) return;
    const result = await this.status.guard(() =>
      this.api.get('/api/system/channel-words', {space, channel, limit: 200}));
    if (!result) return;
    const name = this.pick.selectedOptions[0]?.textContent ?? channel;
    const label = spaceLabel(this.spaces.spaces.find((item) => item.id === space) ?? {id: space});
    fill(this.body,
      h('h3', {}, `${name} — ${label}`),
      h('h4', {}, `Word pool (${result.words.length})`),
      result.words.length
        ? h('ul', {class: 'word-cloud', id: 'word-pool'}, result.words.map((word) =>
          h('li', {title: `seen ${word.count}×, last ${when(word.last_seen)}`},
            word.word, h('span', {class: 'count'}, ` ${word.count}`))))
        : h('p', {class: 'empty'}, 'The pool is empty. It fills as people talk in this channel ',
          'while topics are enabled there (/topic enable).'),
      h('h4', {}, `Recent tags (${result.tags.length})`),
      result.tags.length
        ? h('ul', {class: 'word-cloud', id: 'channel-tags'}, result.tags.map((tag) => h('li', {}, tag)))
        : h('p', {class: 'empty'}, 'No tags yet. Messages and summaries are tagged in the ',
          'background as conversations happen here.'));
  }
}
