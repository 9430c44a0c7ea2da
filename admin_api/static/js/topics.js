// Topic posts: per-channel schedule editor, what an idle check would decide now, run-now.

import {busy, clip, field, fill, h, labelCells, when} from './dom.js';
import {directoryChannels} from './words.js';

const NUMBER_FIELDS = {
  idle_minutes: ['Post after idle (minutes)', 1, 10080],
  check_interval_minutes: ['Re-check at least every (minutes)', 1, 1440],
  max_posts_per_day: ['Posts per day at most', 0, 100],
};
const NULLABLE = new Set(['cron', 'language', 'guild_id']);

function same(a, b) {
  if (a === null || a === undefined || b === null || b === undefined) return (a ?? null) === (b ?? null);
  return String(a) === String(b);
}

function hhmm(value) {
  return value ? value.padStart(5, '0') : '';
}

/** The topics screen. */
export class TopicsScreen {
  constructor({api, status, root, spaces}) {
    this.api = api;
    this.status = status;
    this.spaces = spaces;
    this.channels = [];
    this.known = [];
    this.current = null;
    this.rows = h('tbody');
    this.editor = h('div', {class: 'topic-editor', id: 'topic-editor'});
    const channelInput = h('input', {type: 'text', inputmode: 'numeric', pattern: '[0-9]{1,19}',
      required: true, name: 'channel_id'});
    this.channelPick = h('select', {name: 'channel_pick', id: 'topic-channel-pick'});
    const pickForm = h('form', {class: 'inline-fields', 'aria-label': 'Pick a channel'},
      field('Channel', this.channelPick, 'The channels of the bot\'s servers, by name.').row,
      h('button', {type: 'submit'}, 'Open channel'));
    pickForm.addEventListener('submit', (event) => {
      event.preventDefault();
      const channel = this.known.find((item) => item.id === this.channelPick.value);
      if (!channel) return;
      const configured = this.channels.find((c) => String(c.channel_id) === channel.id);
      if (configured) this.open(configured.channel_id);
      else this.renderEditor({channel: null, channelId: channel.id, picked: channel});
    });
    const addForm = h('form', {class: 'inline-fields', 'aria-label': 'Add a channel'},
      field('Discord channel id', channelInput, 'Or by id: right-click the channel in Discord → Copy ID.').row,
      h('button', {type: 'submit'}, 'Add channel'));
    addForm.addEventListener('submit', (event) => {
      event.preventDefault();
      const id = channelInput.value.trim();
      if (!/^[1-9][0-9]{0,18}$/.test(id)) {
        this.status.error(new Error('A channel id is a number, e.g. 123456789012345678.'));
        return;
      }
      addForm.reset();
      const known = this.channels.find((c) => String(c.channel_id) === id);
      if (known) this.open(known.channel_id);
      else this.renderEditor({channel: null, channelId: id});
    });
    root.append(
      h('div', {class: 'card'},
        h('div', {class: 'table-wrap'},
          this.table = h('table', {id: 'topic-table', class: 'stack'},
            h('thead', {}, h('tr', {}, ['Channel', 'Server', 'Enabled', 'Idle', 'Active hours', 'Cron', 'Per day',
              'Next runs', 'Answered', 'Last openers', ''].map((name) => h('th', {scope: 'col'}, name)))),
            this.rows)),
        pickForm, addForm),
      this.editor,
    );
  }

  async show() {
    await Promise.all([this.load(), this.loadDirectory()]);
    if (this.current) await this.open(this.current);
  }

  async loadDirectory() {
    const known = await this.status.guard(() => directoryChannels(this.api, this.spaces.current));
    this.known = known ?? [];
    const servers = new Map();
    for (const channel of this.known) {
      if (!servers.has(channel.space)) servers.set(channel.space, h('optgroup', {label: channel.server}));
      servers.get(channel.space).append(h('option', {value: channel.id}, `#${channel.name}`));
    }
    fill(this.channelPick, servers.size ? [...servers.values()]
      : h('option', {value: ''}, 'No channels known yet (the bot has not connected)'));
    this.channelPick.disabled = !servers.size;
  }

  /** A channel as people know it: its name when the bot has seen it, else its id. */
  channelName(channel) {
    return channel.channel_name ? `#${channel.channel_name}` : `Channel ${channel.channel_id}`;
  }

  async load() {
    const result = await this.status.guard(() => this.api.get('/api/topics', this.spaces.query()));
    if (!result) return;
    this.channels = result.channels;
    fill(this.rows, this.channels.length
      ? this.channels.map((channel) => h('tr', {dataset: {id: String(channel.channel_id)}},
        h('td', {}, channel.channel_name ? `#${channel.channel_name}` : '',
          h('div', {class: 'meta mono'}, String(channel.channel_id))),
        h('td', {class: 'server'}, this.spaces.label(channel.space_id)),
        h('td', {}, channel.enabled ? 'yes' : 'no'),
        h('td', {}, `${channel.idle_minutes} min`),
        h('td', {}, `${channel.active_start}–${channel.active_end} ${channel.timezone}`),
        h('td', {class: 'mono'}, channel.cron ?? '—'),
        h('td', {class: 'num'}, String(channel.max_posts_per_day)),
        h('td', {}, this.nextRuns(channel)),
        h('td', {class: 'answers'}, this.answers(channel.answers)),
        h('td', {}, channel.last_openers.length
          ? h('ul', {class: 'openers'}, channel.last_openers.slice(0, 3).map((post) =>
            h('li', {}, h('span', {class: 'meta'}, when(post.posted_at), ' · '), clip(post.content, 80))))
          : h('span', {class: 'meta'}, 'none yet')),
        h('td', {}, h('button', {type: 'button', onclick: () => this.open(channel.channel_id),
          'aria-label': `Edit channel ${channel.channel_id}`}, 'Edit'))))
      : h('tr', {}, h('td', {colspan: '11', class: 'empty'}, 'No channel has a topic schedule ',
        'yet. In Discord, run /topic enable in the channel where the bot should start ',
        'conversations when it is quiet, or pick the channel below.')));
    labelCells(this.table);
  }

  /** Openers answered of those sent; the rate counts only openers whose reply window is over. */
  answers({sent, answered, waiting}) {
    if (!sent) return h('span', {class: 'meta'}, 'no openers yet');
    const decided = sent - waiting;
    const parts = [];
    if (decided) parts.push(`${Math.round((100 * answered) / decided)} %`);
    if (waiting) parts.push(`${waiting} waiting`);
    return [h('div', {class: 'num'}, `${answered}/${sent}`),
      parts.length ? h('div', {class: 'meta'}, parts.join(' · ')) : null];
  }

  nextRuns(channel) {
    const lines = [];
    if (channel.next_idle_check) lines.push(h('div', {}, 'Idle check: ', when(channel.next_idle_check)));
    if (channel.next_cron_post) lines.push(h('div', {}, 'Cron post: ', when(channel.next_cron_post)));
    return lines.length ? lines : h('span', {class: 'meta'}, channel.enabled ? 'not scheduled' : 'disabled');
  }

  async open(channelId) {
    const result = await this.status.guard(() => this.api.get(`/api/topics/${channelId}`));
    if (result) this.renderEditor({status: result, channel: result.channel, channelId: String(channelId)});
  }

  renderEditor({status, channel, channelId, picked = null}) {
    this.current = channel ? channelId : null;
    const value = (key, fallback = '') => (channel ? channel[key] ?? fallback : fallback);
    // A channel picked by name brings its server: the guild id need not be typed.
    const guild = picked && picked.space.startsWith('guild:') ? picked.space.slice(6) : '';
    const name = channel?.channel_name ?? picked?.name ?? null;
    const inputs = {
      enabled: h('input', {type: 'checkbox', name: 'enabled', checked: channel ? channel.enabled : true}),
      active_start: h('input', {type: 'time', name: 'active_start', value: hhmm(value('active_start'))}),
      active_end: h('input', {type: 'time', name: 'active_end', value: hhmm(value('active_end'))}),
      timezone: h('input', {type: 'text', name: 'timezone', value: value('timezone'),
        placeholder: 'Asia/Tokyo', maxlength: '64'}),
      cron: h('input', {type: 'text', name: 'cron', value: value('cron'), placeholder: '0 9 * * *',
        maxlength: '100'}),
      language: h('select', {name: 'language'}, [['', 'Bot default'], ['ja', 'ja'], ['en', 'en']]
        .map(([code, text]) => h('option', {value: code, selected: value('language') === code}, text))),
      guild_id: h('input', {type: 'text', inputmode: 'numeric', name: 'guild_id',
        value: String(value('guild_id', guild))}),
      persona: h('textarea', {name: 'persona', rows: '3', maxlength: '2000', value: value('persona')}),
    };
    for (const [key, [, min, max]] of Object.entries(NUMBER_FIELDS)) {
      inputs[key] = h('input', {type: 'number', name: key, min: String(min), max: String(max), step: '1',
        value: String(value(key))});
    }
    inputs.enabled.id = 'topic-enabled';
    const save = h('button', {type: 'submit', class: 'primary'}, channel ? 'Save schedule' : 'Create schedule');
    const form = h('form', {class: 'card', 'aria-label': `Schedule of channel ${channelId}`},
      h('h3', {}, name ? `#${name} (Channel ${channelId})` : `Channel ${channelId}`),
      h('div', {class: 'field check'}, inputs.enabled, h('label', {for: 'topic-enabled'}, 'Enabled')),
      h('div', {class: 'grid'},
        Object.entries(NUMBER_FIELDS).map(([key, [label]]) => field(label, inputs[key]).row),
        field('Active from', inputs.active_start).row,
        field('Active until', inputs.active_end).row,
        field('Time zone', inputs.timezone).row,
        field('Cron (periodic posts)', inputs.cron, 'Five fields; empty for none.').row,
        field('Language', inputs.language).row,
        field('Guild id', inputs.guild_id).row),
      field('Persona', inputs.persona).row,
      h('div', {class: 'actions'}, save));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      busy(save, () => this.save(channelId, channel, inputs, form));
    });
    const parts = [form];
    if (status) parts.push(this.statusCard(status, channelId));
    fill(this.editor, parts);
  }

  changes(channel, inputs) {
    const changes = {};
    for (const [key, input] of Object.entries(inputs)) {
      let next;
      if (input.type === 'checkbox') next = input.checked;
      else if (input.type === 'number') next = input.value === '' ? undefined : Number(input.value);
      else if (key === 'guild_id') {
        // Sent as text: Discord ids do not fit a JavaScript number; the API parses the digits.
        next = input.value.trim();
        if (next && !/^[0-9]{1,19}$/.test(next)) throw new Error('The guild id must be a number.');
      } else next = input.value;
      if (next === '' && NULLABLE.has(key)) next = null;
      if (next === undefined || (!channel && (next === null || next === ''))) continue;
      const before = channel ? channel[key] : undefined;
      if (key.startsWith('active_') && before !== undefined && hhmm(before) === next) continue;
      if (!same(next, before)) changes[key] = next;
    }
    return changes;
  }

  async save(channelId, channel, inputs, form) {
    let changes;
    try {
      changes = this.changes(channel, inputs);
    } catch (error) {
      this.status.error(error);
      return;
    }
    if (!Object.keys(changes).length) {
      this.status.info('Nothing changed.');
      return;
    }
    const result = await this.status.guard(() => this.api.put(`/api/topics/${channelId}`, changes),
      {form});
    if (!result) return;
    this.status.info(`Schedule of channel ${channelId} saved.`);
    await this.load();
    this.renderEditor({status: result, channel: result.channel, channelId});
  }

  statusCard(status, channelId) {
    const result = h('output', {class: 'result', id: 'topic-run-result', 'aria-live': 'polite'});
    const run = h('button', {type: 'button', id: 'topic-run'}, 'Run now');
    run.addEventListener('click', () => busy(run, async () => {
      const outcome = await this.status.guard(() => this.api.post(`/api/topics/${channelId}/run`));
      if (!outcome) return;
      result.dataset.ok = String(outcome.posted);
      result.textContent = outcome.posted
        ? `Posted (${outcome.topic}): ${clip(outcome.text, 300)}`
        : `Not posted: ${outcome.reason}`;
      this.status.info(outcome.posted ? 'Opener posted.' : `Not posted: ${outcome.reason}`);
    }));
    return h('div', {class: 'card', id: 'topic-status'},
      h('h3', {}, 'Status'),
      h('p', {}, status.would_post ? 'An idle check now would post: ' : 'An idle check now would not post: ',
        h('em', {}, status.reason)),
      h('p', {}, 'Last human message: ', when(status.channel.last_human_at)),
      h('div', {class: 'actions'}, run), result,
      h('h4', {}, 'Recent posts'),
      status.recent_posts.length
        ? h('ul', {class: 'memory-list'}, status.recent_posts.map((post) => h('li', {},
          h('div', {class: 'meta'}, when(post.posted_at), ' · ', post.kind, ' · ', post.topic, ' · ',
            post.answered_at ? h('span', {class: 'answered'}, 'answered') : 'no reply yet'),
          h('p', {class: 'text'}, post.content))))
        : h('p', {class: 'empty'}, 'Nothing posted yet. Press Run now to try one, or wait for ',
          'the channel to be quiet within its active hours.'));
  }
}
