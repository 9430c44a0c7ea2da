// Building DOM from data without ever parsing strings as HTML.

const PROPERTIES = new Set(['value', 'checked', 'selected', 'indeterminate']);

/** Append children: strings and numbers become text nodes; null/false are skipped. */
export function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** Create an element: h('button', {type: 'button', onclick: fn}, 'Save'). */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (PROPERTIES.has(key)) el[key] = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  return append(el, children);
}

/** Replace an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A labelled form control: returns {row, input}. */
export function field(label, input, hint) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 10)}`;
  input.id = id;
  const row = h('div', {class: 'field'}, h('label', {for: id}, label), input);
  if (hint) {
    const hintId = `${id}-hint`;
    input.setAttribute('aria-describedby', hintId);
    row.append(h('small', {id: hintId, class: 'hint'}, hint));
  }
  return {row, input};
}

/**
 * A button that needs a second press to act (no blocking confirm() dialogs).
 * The first press arms it for a few seconds; losing focus disarms it.
 */
export function confirmButton(label, confirmLabel, action, props = {}) {
  const button = h('button', {type: 'button', class: 'danger', ...props}, label);
  let timer = null;
  const disarm = () => {
    clearTimeout(timer);
    timer = null;
    button.textContent = label;
    button.classList.remove('armed');
  };
  button.addEventListener('click', async () => {
    if (timer === null) {
      button.textContent = confirmLabel;
      button.classList.add('armed');
      timer = setTimeout(disarm, 6000);
      return;
    }
    disarm();
    button.disabled = true;
    try {
      await action();
    } finally {
      button.disabled = false;
    }
  });
  button.addEventListener('blur', disarm);
  return button;
}

/** Run an async action with its button disabled meanwhile. */
export async function busy(button, action) {
  button.disabled = true;
  try {
    return await action();
  } finally {
    button.disabled = false;
  }
}

/** A stored ISO-8601 time as local, readable text. */
/** "1 thread", "2 threads": a count with its noun. */
export function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

export function when(iso) {
  if (!iso) return '—';
  const date = new Date(iso.endsWith('Z') || /[+-]\d\d:\d\d$/.test(iso) ? iso : `${iso}Z`);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/**
 * Give each body cell its column's header text and fit the table to its container: a table
 * wider than its container shows its rows as cards (labelled cells), so no column, and never
 * the actions column, is cut off or scrolled out of sight.
 */
export function labelCells(table) {
  const names = [...table.querySelectorAll('thead th')].map((th) => th.textContent);
  for (const row of table.tBodies[0]?.rows ?? []) {
    [...row.cells].forEach((cell, index) => {
      if (names[index] && cell.colSpan === 1) cell.dataset.label = names[index];
    });
  }
  fitTable(table);
}

/** Show `table` as cards while it is wider than its container; check again on every resize. */
export function fitTable(table) {
  const box = table.parentElement;
  const measure = () => {
    const width = box.clientWidth;
    if (!width) return; // a hidden screen: measured when it shows
    table.classList.remove('cards');
    table.classList.toggle('cards', table.scrollWidth > width + 1);
    box.dataset.fittedWidth = String(width);
  };
  measure();
  if (box.dataset.fitObserved) return;
  box.dataset.fitObserved = 'true';
  // Only a change of width can change the answer (cards change the height, not the width).
  new ResizeObserver(() => {
    if (String(box.clientWidth) !== box.dataset.fittedWidth) measure();
  }).observe(box);
}

/** Shorten long text for a table cell. */
export function clip(text, max = 80) {
  if (text === null || text === undefined) return '';
  const value = String(text);
  return value.length > max ? `${value.slice(0, max - 1)}…` : value;
}
