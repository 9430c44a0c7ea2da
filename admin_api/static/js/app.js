// The page: login, navigation between sections and their screens, the space selector, logout.

import {ActivityScreen} from './activity.js';
import {Api} from './api.js';
import {LiveLogScreen} from './live_log_screen.js';
import {ChatScreen} from './chat_screen.js';
import {ConnectionsScreen} from './connections.js';
import {ConversationsScreen} from './conversations.js';
import {LogsScreen} from './logs.js';
import {MemoryScreen} from './memory.js';
import {withModelChoice} from './model_choice.js';
import {Navigation} from './navigation.js';
import {NotesScreen} from './notes.js';
import {SettingsScreen} from './settings.js';
import {SpaceChoice, SpacesScreen} from './spaces.js';
import {Status, clearFieldErrors} from './status.js';
import {StatusScreen} from './status_screen.js';
import {ToolsScreen} from './tools.js';
import {TopicsScreen} from './topics.js';
import {MembersScreen} from './members.js';
import {WordsScreen} from './words.js';

const SCREENS = {
  status: StatusScreen,
  activity: ActivityScreen,
  notes: NotesScreen,
  logs: LogsScreen,
  settings: SettingsScreen,
  memory: MemoryScreen,
  topics: TopicsScreen,
  spaces: SpacesScreen,
  tools: ToolsScreen,
  'live-log': LiveLogScreen,
  conversations: ConversationsScreen,
  chat: ChatScreen,
  words: WordsScreen,
  members: MembersScreen,
  connections: withModelChoice(ConnectionsScreen),
};
const DEFAULT_SCREEN = 'status';

/** Owns the screens and decides which one shows. */
class App {
  constructor(doc) {
    this.doc = doc;
    this.status = new Status(doc.getElementById('status'));
    this.api = new Api({onUnauthorized: () => this.showLogin('Your session ended; log in again.')});
    this.navigation = new Navigation(doc);
    this.login = doc.getElementById('screen-login');
    this.spaces = new SpaceChoice({api: this.api, status: this.status,
      select: doc.getElementById('space-select')});
    // Every screen shows the chosen space only: show it again when the choice changes.
    this.spaces.onChange(() => this.route(false));
    this.screens = new Map();
    for (const [name, Screen] of Object.entries(SCREENS)) {
      const root = doc.getElementById(`screen-${name}`);
      const screen = new Screen({api: this.api, status: this.status, root, spaces: this.spaces});
      this.screens.set(name, {root, screen});
    }
    this.loggedIn = false;
    this.current = null;
  }

  async start() {
    this.doc.getElementById('login-form').addEventListener('submit', (event) => {
      event.preventDefault();
      this.logIn(event.target);
    });
    this.doc.getElementById('logout').addEventListener('click', () => this.logOut());
    // A link to the screen already on view changes no hash: still take the reader to its heading.
    for (const bar of [this.doc.getElementById('nav'), this.doc.getElementById('tabs')]) {
      bar.addEventListener('click', (event) => {
        const link = event.target.closest('a[href^="#"]');
        if (link && link.hash === location.hash && this.current === link.hash.slice(1)) {
          event.preventDefault();
          this.focusTitle();
        }
      });
    }
    window.addEventListener('hashchange', () => {
      // Other fragments (the skip link's #main) are in-page jumps, not screens.
      if (this.screens.has(location.hash.slice(1))) this.route(true);
    });
    try {
      await this.api.get('/api/auth/session');
      this.enter(false);
    } catch (error) {
      this.showLogin();
      if (error.code !== 'unauthorized') this.status.error(error);
    }
  }

  /** Let the screen on view stop what runs only while it shows (live streams). */
  leave() {
    if (this.current !== null) this.screens.get(this.current).screen.hide?.();
  }

  hideAll() {
    this.login.hidden = true;
    for (const {root} of this.screens.values()) root.hidden = true;
  }

  showLogin(message) {
    this.leave();
    this.loggedIn = false;
    this.current = null;
    this.hideAll();
    this.navigation.setShown(false);
    this.login.hidden = false;
    document.title = 'Log in · PlayChat admin';
    if (message) this.status.note(message);
    this.doc.getElementById('login-password').focus();
  }

  async logIn(form) {
    const password = form.elements.password;
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      await this.api.post('/api/auth/login', {password: password.value});
      password.value = '';
      this.status.info('Logged in.');
      this.enter(true);
    } catch (error) {
      this.status.error(error);
      password.select();
    } finally {
      button.disabled = false;
    }
  }

  async logOut() {
    const done = await this.status.guard(() => this.api.post('/api/auth/logout'));
    if (done) this.showLogin('Logged out.');
  }

  async enter(moveFocus) {
    this.loggedIn = true;
    this.navigation.setShown(true);
    await this.spaces.load();
    this.route(moveFocus);
  }

  /** Put the focus on the heading of the screen on view (where a screen reader starts). */
  focusTitle() {
    const title = this.screens.get(this.current).root.querySelector('h2');
    title.tabIndex = -1;
    title.focus();
  }

  route(moveFocus) {
    if (!this.loggedIn) return;
    const wanted = location.hash.slice(1);
    const name = this.screens.has(wanted) ? wanted : DEFAULT_SCREEN;
    if (this.current !== null && this.current !== name) {
      // What was said about the last screen no longer applies to this one.
      this.status.clear();
      clearFieldErrors(this.screens.get(this.current).root);
      this.leave();
    }
    this.current = name;
    this.hideAll();
    const {root, screen} = this.screens.get(name);
    root.hidden = false;
    const section = this.navigation.mark(name);
    const title = root.querySelector('h2');
    document.title = title.textContent === section.label
      ? `${section.label} · PlayChat admin`
      : `${title.textContent} · ${section.label} · PlayChat admin`;
    if (moveFocus) this.focusTitle();
    this.doc.body.dataset.screen = name;
    root.dataset.loading = 'true';
    screen.show().finally(() => {
      delete root.dataset.loading;
    });
  }
}

new App(document).start();
