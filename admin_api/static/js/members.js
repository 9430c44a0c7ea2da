// Member memory per space: who something is kept about, their facts, forgetting and erasing.

import {confirmButton, fill, h, plural, when} from './dom.js';

const path = (space, member = '') =>
  `/api/memory/members/${encodeURIComponent(space)}${member ? `/${encodeURIComponent(member)}` : ''}`;

/** The Members screen: pick a space, see its members' facts, delete them or erase a member. */
export class MembersScreen {
  constructor({api, status, root, spaces}) {
    this.api = api;
    this.status = status;
    this.spaces = spaces;
    this.pick = h('select', {id: 'members-space', name: 'space'});
    this.pick.addEventListener('change', () => this.load());
    this.body = h('div', {id: 'members-body'});
    root.append(
      h('p', {class: 'hint'}, 'What the bot keeps about each member of a space: the facts they asked it ',
        'to remember (or it saved with its remember tool). Members manage their own with /memory me; ',
        'here an operator can delete facts or erase a member (their messages become a placeholder).'),
      h('div', {class: 'card'},
        h('div', {class: 'field'}, h('label', {for: 'members-space'}, 'Space to show'), this.pick),
        this.body));
  }

  async show() {
    const chosen = this.spaces.current || this.pick.value;
    fill(this.pick, this.spaces.spaces.map((space) =>
      h('option', {value: space.id}, this.spaces.label(space.id))));
    if (chosen && [...this.pick.options].some((option) => option.value === chosen)) {
      this.pick.value = chosen;
    }
    await this.load();
  }

  async load() {
    const space = this.pick.value;
    if (!space) {
      fill(this.body, h('p', {class: 'empty'}, 'No spaces yet.'));
      return;
    }
    const result = await this.status.guard(() => this.api.get(path(space)));
    if (!result) return;
    if (!result.members.length) {
      fill(this.body, h('p', {class: 'empty', id: 'members-empty'}, 'Nothing is kept about any member here.'));
      return;
    }
    const cards = await Promise.all(result.members.map((member) => this.member(space, member)));
    fill(this.body, h('ul', {class: 'plain', id: 'members-list'}, cards));
  }

  async member(space, member) {
    const found = await this.status.guard(() => this.api.get(path(space, member.member_id)));
    const facts = found ? found.facts : [];
    const name = member.member_name || member.member_id;
    return h('li', {class: 'card', 'data-member': member.member_id},
      h('h3', {}, name, h('span', {class: 'meta'}, ` ${member.member_id} · ${plural(member.facts, 'fact')}`,
        member.enabled ? '' : ' · memory off')),
      facts.length
        ? h('ul', {class: 'plain'}, facts.map((fact) => h('li', {'data-fact': String(fact.id)},
          `#${fact.id} ${fact.fact}`,
          h('span', {class: 'meta'}, ` ${fact.shared ? 'shared · ' : ''}${when(fact.created_at)} `),
          confirmButton('Delete', 'Press again to delete', () => this.run(
            () => this.api.del(`${path(space, member.member_id)}/facts/${fact.id}`), 'Fact deleted.'),
          {'aria-label': `Delete fact ${fact.id}`}))))
        : h('p', {class: 'empty'}, 'No facts kept.'),
      h('div', {class: 'actions'},
        confirmButton('Forget all facts', 'Press again to forget all', () => this.run(
          () => this.api.del(`${path(space, member.member_id)}/facts`), `Forgot ${name}'s facts.`),
        {'aria-label': `Forget all facts of ${name}`}),
        confirmButton('Erase member', `Press again to erase ${name}`, () => this.run(
          () => this.api.post(`${path(space, member.member_id)}/erase`),
          `Erased ${name}: their messages are placeholders now.`),
        {'aria-label': `Erase member ${name}`})));
  }

  async run(action, done) {
    if (await this.status.guard(action) === undefined) return;
    this.status.info(done);
    await this.load();
  }
}
