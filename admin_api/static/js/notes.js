// Shared notes: tabs grouped by space and section, editor with a safe Markdown preview,
// drag-and-drop (and keyboard) reordering through POST /api/notes/reorder (within one space),
// moving a page to another space.

import {busy, confirmButton, field, fill, h, plural} from './dom.js';
import {renderMarkdown} from './markdown.js';

const PREVIEW_DELAY_MS = 120;

/** The full id order after moving `dragId` next to `targetId` (after it when moving right). */
export function orderAfterDrop(ids, dragId, targetId) {
  const from = ids.indexOf(dragId);
  const to = ids.indexOf(targetId);
  const order = ids.filter((id) => id !== dragId);
  const at = order.indexOf(targetId) + (from < to ? 1 : 0);
  order.splice(at, 0, dragId);
  return order;
}

/** The full id order after moving `dragId` to the end of `section`. */
export function orderAtSectionEnd(pages, dragId, section) {
  const order = pages.map((page) => page.id).filter((id) => id !== dragId);
  const members = pages.filter((page) => page.section === section && page.id !== dragId);
  const last = members.length ? order.indexOf(members[members.length - 1].id) + 1 : order.length;
  order.splice(last, 0, dragId);
  return order;
}

/** Move one step left (-1) or right (+1): swap within a section, or join the neighbour's. */
export function stepMove(pages, pageId, delta) {
  const index = pages.findIndex((page) => page.id === pageId);
  const neighbour = pages[index + delta];
  if (index < 0 || !neighbour) return null;
  const page = pages[index];
  const order = pages.map((p) => p.id);
  if (neighbour.section !== page.section) return {order, section: neighbour.section};
  [order[index], order[index + delta]] = [order[index + delta], order[index]];
  return {order, section: page.section};
}

function groupBySection(pages) {
  const groups = [];
  for (const page of pages) {
    const last = groups[groups.length - 1];
    if (last && last.section === page.section && last.space === page.space_id) last.pages.push(page);
    else groups.push({section: page.section, space: page.space_id, pages: [page]});
  }
  return groups;
}

/** The notes screen. */
export class NotesScreen {
  constructor({api, status, root, spaces}) {
    this.api = api;
    this.status = status;
    this.spaces = spaces;
    this.pages = [];
    this.selectedId = null;
    this.drafts = new Map();
    this.dragId = null;
    this.previewTimer = null;
    this.tabs = h('div', {class: 'note-tabs', id: 'note-tabs'});
    this.editor = h('div', {class: 'note-editor card'});
    this.sectionList = h('datalist', {id: 'note-sections'});
    root.append(
      h('div', {class: 'toolbar'},
        h('button', {type: 'button', class: 'quiet', onclick: () => this.reload()}, 'Reload')),
      h('p', {class: 'hint'},
        'Drag a tab onto another tab (or onto a section name) to reorder; the editor has ',
        'move buttons for the keyboard.'),
      this.tabs,
      this.createForm(),
      this.editor,
      this.sectionList,
    );
  }

  async show() {
    await this.reload();
  }

  async reload() {
    const result = await this.status.guard(() => this.api.get('/api/notes', this.spaces.query()));
    if (result) this.setPages(result.pages);
  }

  /** The pages of one space, in order: order, sections and moves never cross spaces. */
  spacePages(spaceId) {
    return this.pages.filter((page) => page.space_id === spaceId);
  }

  /** Whether the list mixes spaces (then every section says whose it is). */
  mixed() {
    return new Set(this.pages.map((page) => page.space_id)).size > 1;
  }

  setPages(pages) {
    this.pages = pages;
    const ids = new Set(pages.map((page) => page.id));
    for (const id of this.drafts.keys()) if (!ids.has(id)) this.drafts.delete(id);
    const selectionChanged = !ids.has(this.selectedId);
    if (selectionChanged) this.selectedId = pages.length ? pages[0].id : null;
    fill(this.sectionList, [...new Set(pages.map((p) => p.section))].map((s) => h('option', {value: s})));
    this.renderTabs();
    if (selectionChanged || !this.editor.firstChild) this.renderEditor();
    else this.updateMoveButtons();
  }

  page(id) {
    return this.pages.find((page) => page.id === id) ?? null;
  }

  // ---------------------------------------------------------------- tabs

  renderTabs() {
    if (!this.pages.length) {
      fill(this.tabs, h('p', {class: 'empty'}, 'No note pages yet. Type a title under “New page ',
        'title” below and press Create page; in Discord, /note write creates one too.'));
      return;
    }
    fill(this.tabs, groupBySection(this.pages).map((group) => this.sectionGroup(group)));
  }

  sectionGroup({section, space, pages}) {
    const name = section || 'No section';
    const head = h('div', {class: 'note-section-head', dataset: {section, space}},
      h('h3', {}, name,
        this.mixed() ? h('span', {class: 'space-name'}, this.spaces.label(space)) : null),
      section ? h('button', {type: 'button', class: 'quiet small',
        'aria-label': `Rename section ${name}`, onclick: () => this.renameForm(head, section, space)}, 'Rename') : null);
    this.dropZone(head, () => this.dropAtSectionEnd(section, space), () => this.dragSpace() === space);
    const row = h('div', {class: 'note-tab-row', role: 'group', 'aria-label': `Section ${name}`},
      pages.map((page) => this.tab(page)));
    return h('div', {class: 'note-section', dataset: {section}}, head, row);
  }

  tab(page) {
    const draft = this.drafts.get(page.id);
    const dirty = draft && this.isDirty(page, draft);
    const tab = h('button', {
      type: 'button',
      class: 'note-tab',
      draggable: 'true',
      dataset: {id: String(page.id)},
      'aria-current': page.id === this.selectedId ? 'true' : null,
      title: dirty ? 'Unsaved changes' : null,
      onclick: () => this.select(page.id),
    }, page.title, dirty ? [h('span', {class: 'dirty', 'aria-hidden': 'true'}, ' •'),
      h('span', {class: 'sr-only'}, ' (unsaved)')] : null);
    tab.addEventListener('dragstart', (event) => {
      this.dragId = page.id;
      event.dataTransfer.effectAllowed = 'move';
      event.dataTransfer.setData('text/plain', String(page.id));
      tab.classList.add('dragging');
    });
    tab.addEventListener('dragend', () => {
      this.dragId = null;
      tab.classList.remove('dragging');
    });
    this.dropZone(tab, () => this.dropOn(page.id),
      () => this.dragId !== page.id && this.dragSpace() === page.space_id);
    return tab;
  }

  dragSpace() {
    return this.page(this.dragId)?.space_id ?? null;
  }

  dropZone(el, onDrop, accepts = () => true) {
    el.addEventListener('dragover', (event) => {
      if (this.dragId === null || !accepts()) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = 'move';
      el.classList.add('drop-target');
    });
    el.addEventListener('dragleave', () => el.classList.remove('drop-target'));
    el.addEventListener('drop', (event) => {
      event.preventDefault();
      el.classList.remove('drop-target');
      if (this.dragId !== null && accepts()) onDrop();
    });
  }

  async dropOn(targetId) {
    const dragId = this.dragId;
    const target = this.page(targetId);
    if (dragId === null || !target) return;
    const ids = this.spacePages(target.space_id).map((p) => p.id);
    await this.reorder(dragId, target.section, orderAfterDrop(ids, dragId, targetId));
  }

  async dropAtSectionEnd(section, space) {
    const dragId = this.dragId;
    if (dragId === null) return;
    await this.reorder(dragId, section, orderAtSectionEnd(this.spacePages(space), dragId, section));
  }

  async move(delta) {
    const page = this.page(this.selectedId);
    if (!page) return;
    const move = stepMove(this.spacePages(page.space_id), page.id, delta);
    if (move) await this.reorder(page.id, move.section, move.order);
  }

  async reorder(pageId, section, order) {
    try {
      const result = await this.api.post('/api/notes/reorder', {page_id: pageId, section, order});
      this.setPages(result.pages);
      this.syncSectionInput(pageId);
      this.status.info('New order saved.');
    } catch (error) {
      this.status.error(error);
      await this.reload();
    }
  }

  syncSectionInput(pageId) {
    // A move can change the page's section: keep the editor's field in step unless edited.
    if (pageId !== this.selectedId || !this.form) return;
    const page = this.page(pageId);
    const draft = this.drafts.get(pageId);
    if (page && (!draft || draft.section === this.form.sectionBefore)) {
      this.form.section.value = page.section;
      this.form.sectionBefore = page.section;
      if (draft) draft.section = page.section;
    }
  }

  renameForm(head, section, space) {
    const input = h('input', {type: 'text', value: section, maxlength: '100', required: true,
      'aria-label': `New name for section ${section}`});
    const cancel = () => this.renderTabs();
    const form = h('form', {class: 'inline-form'}, input,
      h('button', {type: 'submit'}, 'Save name'),
      h('button', {type: 'button', class: 'quiet', onclick: cancel}, 'Cancel'));
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') cancel();
    });
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const result = await this.status.guard(() =>
        this.api.post('/api/notes/sections/rename', {old: section, new: input.value, space_id: space}));
      if (result) {
        this.status.info(`Section renamed on ${plural(result.renamed, 'page')}.`);
        for (const draft of this.drafts.values()) {
          if (draft.section === section) draft.section = input.value.trim();
        }
        await this.reload();
        this.renderEditor();
      }
    });
    fill(head, form);
    input.focus();
    input.select();
  }

  // ---------------------------------------------------------------- create

  createForm() {
    const title = h('input', {type: 'text', required: true, maxlength: '100', name: 'title'});
    const section = h('input', {type: 'text', maxlength: '100', name: 'section', list: 'note-sections'});
    const submit = h('button', {type: 'submit'}, 'Create page');
    const form = h('form', {class: 'card inline-fields', 'aria-label': 'New note page'},
      field('New page title', title).row,
      field('Section', section).row,
      submit);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const created = await busy(submit, () => this.status.guard(() =>
        this.api.post('/api/notes', {title: title.value, content: '', section: section.value,
          space_id: this.spaces.current || undefined}), {form}));
      if (!created) return;
      title.value = '';
      this.status.info(`Created page "${created.title}".`);
      this.selectedId = created.id;
      await this.reload();
      this.renderEditor();
      this.form?.content.focus();
    });
    return form;
  }

  // ---------------------------------------------------------------- editor

  select(id) {
    if (id === this.selectedId) return;
    this.selectedId = id;
    this.renderTabs();
    this.renderEditor();
  }

  isDirty(page, draft) {
    return draft.title !== page.title || draft.content !== page.content
      || draft.section !== page.section;
  }

  renderEditor() {
    const page = this.page(this.selectedId);
    if (!page) {
      this.form = null;
      fill(this.editor, h('p', {class: 'empty'}, this.pages.length
        ? 'Pick a page above to edit it.'
        : 'The editor opens here once a page exists.'));
      return;
    }
    const draft = this.drafts.get(page.id) ?? {title: page.title, content: page.content, section: page.section};
    const title = h('input', {type: 'text', required: true, maxlength: '100', value: draft.title,
      name: 'title'});
    const section = h('input', {type: 'text', maxlength: '100', list: 'note-sections',
      value: draft.section, name: 'section'});
    const content = h('textarea', {rows: '16', spellcheck: 'true', value: draft.content,
      name: 'content'});
    const preview = h('div', {class: 'markdown preview', id: 'note-preview'});
    const left = h('button', {type: 'button', onclick: () => this.move(-1)}, '← Move left');
    const right = h('button', {type: 'button', onclick: () => this.move(1)}, 'Move right →');
    const save = h('button', {type: 'submit', class: 'primary'}, 'Save');
    const form = h('form', {class: 'note-form', 'aria-label': `Edit ${page.title}`},
      h('div', {class: 'inline-fields'}, field('Title', title).row,
        field('Section', section, 'Changing it moves the page to the end of that section.').row),
      h('div', {class: 'split'},
        field('Content (Markdown)', content).row,
        h('div', {class: 'field'}, h('span', {class: 'label', id: 'preview-label'}, 'Preview'), preview)),
      h('div', {class: 'actions'}, save,
        h('button', {type: 'button', class: 'quiet', onclick: () => this.revert()}, 'Revert'),
        left, right,
        confirmButton('Delete page', 'Really delete?', () => this.remove(page.id)),
        this.spaces.moveControl(page.space_id, page.title, (to) => this.moveToSpace(page, to))));
    preview.setAttribute('aria-labelledby', 'preview-label');
    this.form = {element: form, title, section, content, preview, left, right,
      sectionBefore: draft.section};
    const changed = () => {
      this.drafts.set(page.id, {title: title.value, content: content.value, section: section.value});
      this.renderTabs();
    };
    title.addEventListener('input', changed);
    section.addEventListener('input', changed);
    content.addEventListener('input', () => {
      changed();
      clearTimeout(this.previewTimer);
      this.previewTimer = setTimeout(() => fill(preview, renderMarkdown(content.value)), PREVIEW_DELAY_MS);
    });
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      busy(save, () => this.save(page.id));
    });
    fill(preview, renderMarkdown(draft.content));
    fill(this.editor, form);
    this.updateMoveButtons();
  }

  updateMoveButtons() {
    if (!this.form) return;
    const page = this.page(this.selectedId);
    const pages = page ? this.spacePages(page.space_id) : [];
    const index = pages.findIndex((item) => item.id === this.selectedId);
    this.form.left.disabled = index <= 0;
    this.form.right.disabled = index < 0 || index >= pages.length - 1;
  }

  async moveToSpace(page, to) {
    const moved = await this.status.guard(() =>
      this.api.post(`/api/notes/${page.id}/move`, {space_id: to}));
    if (!moved) return;
    this.drafts.delete(page.id);
    this.status.info(`Moved "${moved.title}" to ${this.spaces.label(to)}.`);
    await this.spaces.load();
    await this.reload();
    this.renderEditor();
  }

  revert() {
    this.drafts.delete(this.selectedId);
    this.renderTabs();
    this.renderEditor();
  }

  async save(pageId) {
    const page = this.page(pageId);
    const form = this.form;
    if (!page || !form) return;
    const changes = {};
    if (form.title.value !== page.title) changes.title = form.title.value;
    if (form.content.value !== page.content) changes.content = form.content.value;
    if (form.section.value !== page.section) changes.section = form.section.value;
    if (!Object.keys(changes).length) {
      this.status.info('Nothing to save.');
      return;
    }
    const saved = await this.status.guard(() => this.api.patch(`/api/notes/${pageId}`, changes),
      {form: form.element});
    if (!saved) return;
    this.drafts.delete(pageId);
    this.status.info(`Saved "${saved.title}".`);
    await this.reload();
    this.renderEditor();
  }

  async remove(pageId) {
    const index = this.pages.findIndex((page) => page.id === pageId);
    const result = await this.status.guard(() => this.api.del(`/api/notes/${pageId}`));
    if (!result) return;
    this.drafts.delete(pageId);
    const next = this.pages[index + 1] ?? this.pages[index - 1];
    this.selectedId = next ? next.id : null;
    this.status.info('Page deleted.');
    await this.reload();
    this.renderEditor();
  }
}
