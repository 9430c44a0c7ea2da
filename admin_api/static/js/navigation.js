// The seven sections of the bar, the tabs inside each (one tab per screen), and the phone menu.

import {fill, h} from './dom.js';

/** Each section of the bar with its screens as tabs (the first tab opens with the section). */
export const SECTIONS = [
  {name: 'status', label: 'Status', tabs: [['status', 'Overview'], ['activity', 'Activity'],
    ['logs', 'LLM calls'], ['live-log', 'Live log']]},
  {name: 'conversations', label: 'Conversations', tabs: [['conversations', 'Browse & search'],
    ['memory', 'Sessions & memory']]},
  {name: 'chat', label: 'Chat', tabs: [['chat', 'Chat']]},
  {name: 'memory', label: 'Memory', tabs: [['notes', 'Notes'], ['words', 'Words & tags'], ['members', 'Members']]},
  {name: 'topics', label: 'Topics', tabs: [['topics', 'Topics']]},
  {name: 'models', label: 'Models', tabs: [['connections', 'Connections'], ['tools', 'Tools & MCP']]},
  {name: 'settings', label: 'Settings', tabs: [['settings', 'Settings'], ['spaces', 'Spaces']]},
];

/** The section a screen belongs to. */
export function sectionOf(screen) {
  return SECTIONS.find((section) => section.tabs.some(([name]) => name === screen));
}

/** The bar (sections), the tab strip of the section on view, and the menu button on phones. */
export class Navigation {
  constructor(doc) {
    this.doc = doc;
    this.top = doc.getElementById('top');
    this.nav = doc.getElementById('nav');
    this.tabs = doc.getElementById('tabs');
    this.toggle = doc.getElementById('menu-toggle');
    this.toggle.addEventListener('click', () => this.setOpen(!this.isOpen()));
    // A choice in the menu closes it (on a phone the menu would cover the screen chosen).
    this.nav.addEventListener('click', (event) => {
      if (event.target.closest('a')) this.setOpen(false);
    });
    this.top.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && this.isOpen()) {
        this.setOpen(false);
        this.toggle.focus();
      }
    });
  }

  isOpen() {
    return this.toggle.getAttribute('aria-expanded') === 'true';
  }

  /** Open or close the menu (it only collapses at phone width; CSS decides). */
  setOpen(open) {
    this.toggle.setAttribute('aria-expanded', String(open));
    this.top.classList.toggle('nav-open', open);
  }

  /** Show or hide the bar (hidden while logged out). */
  setShown(shown) {
    this.nav.hidden = !shown;
    this.toggle.hidden = !shown;
    if (!shown) {
      this.tabs.hidden = true;
      this.setOpen(false);
    }
  }

  /** Mark `screen`'s section in the bar and show that section's tabs. */
  mark(screen) {
    const section = sectionOf(screen);
    for (const link of this.nav.querySelectorAll('a[data-section]')) {
      if (link.dataset.section === section.name) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    this.tabs.hidden = section.tabs.length < 2;
    this.tabs.setAttribute('aria-label', `${section.label} tabs`);
    // A section of one screen has no tab strip.
    fill(this.tabs, section.tabs.length < 2 ? [] : section.tabs.map(([name, label]) => h('a',
      {href: `#${name}`, dataset: {screen: name}, 'aria-current': name === screen ? 'page' : null},
      label)));
    return section;
  }
}
