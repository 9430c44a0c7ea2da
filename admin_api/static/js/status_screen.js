// Status, the landing screen: every part of the bot (Discord, model, embeddings, database, MCP,
// scheduler), the database size and last backup, version and uptime — live over server-sent
// events (GET /api/status/stream), with "Check now" to run every check at once.

import {busy, fill, h, when} from './dom.js';

const STREAM = '/api/status/stream';
const TITLES = {
  discord: 'Discord',
  model: 'Model',
  connections: 'Model connections',
  embeddings: 'Embeddings',
  database: 'Database',
  mcp: 'MCP servers',
  scheduler: 'Topic scheduler',
};
const STATE_WORDS = {
  ok: 'Working',
  degraded: 'Degraded',
  down: 'Down',
  disabled: 'Off',
  unknown: 'Unknown',
};
const OVERALL_WORDS = {
  ok: 'Every part works.',
  degraded: 'PlayChat answers, but some parts have trouble.',
  down: 'PlayChat cannot answer: an essential part is down.',
};
const FACT_NAMES = {
  servers: 'Servers',
  latency_ms: 'Latency',
  models: 'Models on the server',
  tools: 'Tool calls',
  jobs: 'Jobs',
  next_run: 'Next run',
  reachable: 'Reachable',
  shards_connected: 'Shards connected',
  connections: 'Connections',
};

/** A byte count as KB / MB / GB. */
export function bytes(count) {
  if (count < 1024) return `${count} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = count / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** A duration in seconds as "3 d 4 h", "5 h 12 min", "7 min 3 s". */
export function duration(seconds) {
  const d = Math.floor(seconds / 86400);
  const hours = Math.floor((seconds % 86400) / 3600);
  const min = Math.floor((seconds % 3600) / 60);
  const s = Math.floor(seconds % 60);
  if (d) return `${d} d ${hours} h`;
  if (hours) return `${hours} h ${min} min`;
  if (min) return `${min} min ${s} s`;
  return `${s} s`;
}

function factValue(name, value) {
  if (value === null || value === undefined) return '—';
  if (name === 'latency_ms') return `${value} ms`;
  if (name === 'next_run') return when(String(value));
  if (typeof value === 'boolean') {
    if (name === 'tools') return value ? 'supported' : 'not supported';
    return value ? 'yes' : 'no';
  }
  return String(value);
}

function stateBadge(state) {
  return h('span', {class: `state state-${state}`}, STATE_WORDS[state] ?? state);
}

/** The status screen. */
export class StatusScreen {
  constructor({api, status, root}) {
    this.api = api;
    this.status = status;
    this.root = root;
    this.source = null;
    this.last = null;
    this.overall = h('p', {class: 'overall', id: 'status-overall'});
    this.live = h('span', {class: 'meta', id: 'status-live'});
    this.checkButton = h('button', {type: 'button', class: 'primary', id: 'status-check',
      onclick: () => this.checkNow()}, 'Check now');
    this.cards = h('div', {class: 'status-grid', id: 'status-components'});
    this.about = h('dl', {class: 'facts', id: 'status-about'});
    root.append(
      h('div', {class: 'toolbar status-head'}, this.overall,
        h('div', {class: 'actions'}, this.live, this.checkButton)),
      this.cards,
      h('section', {class: 'card', 'aria-labelledby': 'status-about-title'},
        h('h3', {id: 'status-about-title'}, 'This PlayChat'), this.about,
        h('div', {class: 'actions'},
          h('a', {class: 'button', href: '/api/backup', download: '', id: 'status-backup-download'},
            'Download a backup of the database'))),
    );
  }

  async show() {
    const snapshot = await this.status.guard(() => this.api.get('/api/status'));
    if (snapshot) this.render(snapshot);
    this.connect();
  }

  hide() {
    this.source?.close();
    this.source = null;
  }

  connect() {
    if (this.source) return;
    const source = new EventSource(STREAM);
    this.source = source;
    source.addEventListener('open', () => this.setLive('Live: updates as parts change.'));
    source.addEventListener('message', (event) => {
      try {
        this.render(JSON.parse(event.data));
      } catch (error) {
        this.status.error(error);
      }
    });
    source.addEventListener('error', () => {
      if (source !== this.source) return;
      if (source.readyState === EventSource.CLOSED) {
        // The stream was refused (a 401 after the login expired, or the API went away):
        // an ordinary request says which, and the login form takes over on a 401.
        this.source = null;
        this.setLive('Not live: the status stream stopped.');
        this.status.guard(() => this.api.get('/api/auth/session'));
      } else {
        this.setLive('Reconnecting…');
      }
    });
  }

  setLive(text) {
    this.live.textContent = text;
  }

  async checkNow() {
    const result = await busy(this.checkButton,
      () => this.status.guard(() => this.api.post('/api/readiness/check')));
    if (!result || !this.last) return;
    this.render({...this.last, status: result.status, components: result.components});
    this.status.info('Every part was checked just now.');
  }

  render(snapshot) {
    this.last = snapshot;
    this.root.dataset.overall = snapshot.status;
    fill(this.overall, stateBadge(snapshot.status), ' ', OVERALL_WORDS[snapshot.status] ?? '',
      h('span', {class: 'meta'}, ` As of ${when(snapshot.sent_at)}.`));
    fill(this.cards, snapshot.components.map((component) => this.card(component, snapshot)));
    const backup = snapshot.last_backup;
    const shards = snapshot.shards;
    fill(this.about,
      h('dt', {}, 'Version'), h('dd', {}, snapshot.version),
      h('dt', {}, 'Up for'), h('dd', {id: 'status-uptime'}, duration(snapshot.uptime_seconds)),
      h('dt', {}, 'Started'), h('dd', {}, when(snapshot.started_at)),
      h('dt', {}, 'Discord shards'),
      h('dd', {}, shards ? `${shards.ids.join(', ')} of ${shards.count}` : 'one connection (not sharded)'),
      h('dt', {}, 'Database size'), h('dd', {id: 'status-db-size'}, bytes(snapshot.db_bytes)),
      h('dt', {}, 'Last backup'),
      h('dd', {id: 'status-backup'}, backup
        ? `${when(backup.at)} (${backup.how === 'api' ? 'downloaded here' : 'python -m bot backup'}: ${backup.target})`
        : 'None recorded yet: download one below, or run python -m bot backup PATH.'));
  }

  card(component, snapshot) {
    const titleId = `status-${component.name}-title`;
    const facts = Object.entries(component.facts ?? {})
      .map(([name, value]) => [FACT_NAMES[name] ?? name.replaceAll('_', ' '), factValue(name, value)]);
    if (component.name === 'database') {
      facts.push(['Size', bytes(snapshot.db_bytes)]);
      facts.push(['Last backup', snapshot.last_backup ? when(snapshot.last_backup.at) : 'none recorded']);
    }
    if (component.name === 'discord' && snapshot.shards) {
      facts.push(['Shards', `${snapshot.shards.ids.join(', ')} of ${snapshot.shards.count}`]);
    }
    return h('section', {class: `card status-card is-${component.state}`, 'aria-labelledby': titleId,
      dataset: {component: component.name, state: component.state}},
    h('h3', {id: titleId}, TITLES[component.name] ?? component.name, ' ', stateBadge(component.state)),
    h('p', {class: 'status-detail'}, component.detail),
    component.last_error && component.state !== 'ok'
      ? h('p', {class: 'status-error'}, h('strong', {}, 'Last error: '), component.last_error)
      : null,
    facts.length
      ? h('dl', {class: 'facts'}, facts.map(([name, value]) => [h('dt', {}, name), h('dd', {}, value)]))
      : null,
    component.parts?.length
      ? h('ul', {class: 'status-parts'}, component.parts.map((part) => h('li', {dataset: {state: part.state, part: part.name}},
        h('strong', {}, part.name), ' ', stateBadge(part.state), ' ', part.detail,
        part.last_error ? h('span', {class: 'bad'}, ` — ${part.last_error}`) : null)))
      : null,
    h('p', {class: 'meta'}, component.checked_at ? `Checked ${when(component.checked_at)}` : 'Not checked yet'));
  }
}
