// Tools & MCP: every tool the model can use (description, source, state), the MCP servers with
// their state and last error, reconnecting one, and re-reading MCP_CONFIG without a restart.

import {busy, clip, fill, h, labelCells} from './dom.js';

const TOOL_STATES = {
  enabled: 'Offered to the model',
  server_down: 'Its MCP server is not connected',
  disabled: 'Its MCP server is disabled',
};
const SERVER_STATES = {
  connected: 'Connected',
  connecting: 'Connecting…',
  down: 'Down',
  disabled: 'Disabled',
};

function names(list) {
  return list.length ? list.join(', ') : 'none';
}

/** The tools and MCP screen. */
export class ToolsScreen {
  constructor({api, status, root}) {
    this.api = api;
    this.status = status;
    this.reloadButton = h('button', {type: 'button', class: 'primary', id: 'mcp-reload',
      onclick: () => this.reload()}, 'Reload MCP configuration');
    this.reloadResult = h('output', {class: 'result', id: 'mcp-reload-result'});
    this.configError = h('p', {class: 'bad', id: 'mcp-config-error', hidden: true});
    // Kept across loads (fitTable watches them); only their rows are replaced.
    this.servers = h('table', {id: 'mcp-servers', class: 'stack'},
      h('caption', {class: 'sr-only'}, 'MCP servers'),
      h('thead', {}, h('tr', {}, ['Server', 'Address', 'State', 'Tools', 'Last error', 'Actions']
        .map((name) => h('th', {scope: 'col'}, name)))),
      h('tbody'));
    this.tools = h('table', {id: 'tool-list', class: 'stack'},
      h('caption', {class: 'sr-only'}, 'Tools the model can use'),
      h('thead', {}, h('tr', {}, ['Tool', 'Description', 'Source', 'State']
        .map((name) => h('th', {scope: 'col'}, name)))),
      h('tbody'));
    root.append(
      h('section', {class: 'card', 'aria-labelledby': 'mcp-title'},
        h('div', {class: 'toolbar'}, h('h3', {id: 'mcp-title'}, 'MCP servers'), this.reloadButton),
        h('p', {class: 'hint'}, 'Reloading re-reads the file MCP_CONFIG names: new servers start, ',
          'removed ones stop, changed ones restart, the others stay connected.'),
        this.configError, this.reloadResult, h('div', {class: 'table-wrap'}, this.servers)),
      h('section', {class: 'card', 'aria-labelledby': 'tools-title'},
        h('h3', {id: 'tools-title'}, 'Tools'), h('div', {class: 'table-wrap'}, this.tools)),
    );
  }

  async show() {
    await this.load();
  }

  async load() {
    const listing = await this.status.guard(() => this.api.get('/api/tools'));
    if (!listing) return;
    this.renderServers(listing.mcp_servers, listing.mcp_config_error);
    this.renderTools(listing.tools);
  }

  renderServers(servers, configError) {
    this.configError.hidden = !configError;
    this.configError.textContent = configError ? `MCP is off: ${configError}` : '';
    const rows = servers.map((server) => {
      const button = h('button', {type: 'button', class: 'small',
        'aria-label': `Reconnect ${server.name}`}, 'Reconnect');
      button.addEventListener('click', () => this.reconnect(server.name, button));
      return h('tr', {dataset: {server: server.name, state: server.state},
        class: server.state === 'down' ? 'is-error' : null},
      h('td', {}, h('strong', {}, server.name)),
      h('td', {class: 'mono'}, `${server.transport} ${clip(server.target, 60)}`),
      h('td', {}, SERVER_STATES[server.state] ?? server.state),
      h('td', {class: 'num'}, String(server.tools.length)),
      h('td', {}, server.error ? h('span', {class: 'bad'}, server.error) : '—'),
      h('td', {class: 'actions'}, button));
    });
    fill(this.servers.tBodies[0], rows.length ? rows : h('tr', {}, h('td', {colspan: '6', class: 'empty'},
      'No MCP servers are configured. Name a JSON file in MCP_CONFIG (see the README) ',
      'and press Reload MCP configuration.')));
    labelCells(this.servers);
  }

  renderTools(tools) {
    fill(this.tools.tBodies[0], tools.length
        ? tools.map((tool) => h('tr', {dataset: {tool: tool.name, state: tool.state}},
          h('td', {class: 'mono'}, tool.name),
          h('td', {}, tool.description || '—'),
          h('td', {}, tool.server ? `MCP: ${tool.server}` : tool.source),
          h('td', {class: tool.state === 'enabled' ? null : 'bad'}, TOOL_STATES[tool.state] ?? tool.state)))
        : h('tr', {}, h('td', {colspan: '4', class: 'empty'},
          'No tools. The built-in tools are off and no MCP server offers any.')));
    labelCells(this.tools);
  }

  async reload() {
    const report = await busy(this.reloadButton,
      () => this.status.guard(() => this.api.post('/api/mcp/reload')));
    if (!report) return;
    if (report.error) {
      this.reloadResult.dataset.ok = 'false';
      this.reloadResult.textContent = `Nothing changed: ${report.error}`;
    } else {
      this.reloadResult.dataset.ok = 'true';
      this.reloadResult.textContent = `Reloaded. Added: ${names(report.added)}; removed: ${names(report.removed)}; ` +
        `restarted: ${names(report.restarted)}; unchanged: ${names(report.unchanged)}.`;
      this.status.info('MCP configuration reloaded.');
    }
    await this.load();
  }

  async reconnect(name, button) {
    const server = await busy(button,
      () => this.status.guard(() => this.api.post(`/api/mcp/servers/${encodeURIComponent(name)}/reconnect`)));
    if (!server) return;
    this.status.info(`${name}: ${SERVER_STATES[server.state] ?? server.state}.`);
    await this.load();
  }
}
