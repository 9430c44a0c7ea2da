// A small Markdown subset rendered straight to DOM nodes. Nothing is ever parsed as HTML:
// text stays text, only whitelisted elements are created, and the only data-derived
// attribute written is an href whose protocol is http, https or mailto.

const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);
const MAX_DEPTH = 6;
const MAX_LINK_SPAN = 2048;

const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$/;
const BLANK = /^[ \t]*$/;
const ESCAPABLE = /[\\`*_{}[\]()#+\-.!~>|<]/;
const BARE_URL = /https?:\/\/[^\s<>]+/y;
const WORD_CHAR = /[\p{L}\p{N}]/u;

/** The URL as an href if its protocol is http, https or mailto; otherwise null. */
export function safeUrl(raw) {
  if (typeof raw !== 'string') return null;
  let url;
  try {
    url = new URL(raw.trim());
  } catch {
    return null;
  }
  return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
}

function element(tag, children = []) {
  const el = document.createElement(tag);
  el.append(...children);
  return el;
}

function link(href, children) {
  const a = element('a', children);
  a.setAttribute('href', href);
  a.setAttribute('rel', 'noopener noreferrer nofollow');
  a.setAttribute('target', '_blank');
  return a;
}

function textNodes(text) {
  const nodes = [];
  text.split('\n').forEach((part, index) => {
    if (index > 0) nodes.push(document.createElement('br'));
    if (part) nodes.push(document.createTextNode(part));
  });
  return nodes;
}

/**
 * Matching pairs of `opener`/`closer` (backslash escapes skipped; a newline ends every open
 * pair when `sameLine`), found in one pass so hostile inputs stay linear.
 */
function pairs(text, opener, closer, sameLine) {
  const found = new Map();
  const stack = [];
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '\\') i += 1;
    else if (c === opener) stack.push(i);
    else if (c === closer && stack.length) found.set(stack.pop(), i);
    else if (c === '\n' && sameLine) stack.length = 0;
  }
  return found;
}

function trimUrl(url) {
  let end = url.length;
  while (end > 0 && '.,;:!?\'"'.includes(url[end - 1])) end -= 1;
  let trimmed = url.slice(0, end);
  while (trimmed.endsWith(')') && (trimmed.match(/\(/g) ?? []).length < (trimmed.match(/\)/g) ?? []).length) {
    trimmed = trimmed.slice(0, -1);
  }
  return trimmed;
}

/** Inline Markdown (code, links, emphasis, line breaks) as a list of nodes. */
function inline(text, depth, inLink = false) {
  const out = [];
  let buffer = '';
  const flush = () => {
    if (buffer) out.push(...textNodes(buffer));
    buffer = '';
  };
  if (depth >= MAX_DEPTH) return textNodes(text);
  // Searching forward from a position where a delimiter was already missing cannot succeed:
  // remembering that keeps hostile inputs (thousands of unmatched `*`) linear.
  const misses = new Map();
  let brackets = null;
  let parens = null;
  const closing = (open, kind) => {
    if (kind === '[') brackets ??= pairs(text, '[', ']', false);
    else parens ??= pairs(text, '(', ')', true);
    const close = (kind === '[' ? brackets : parens).get(open) ?? -1;
    return close - open < MAX_LINK_SPAN ? close : -1;
  };
  const find = (delimiter, from) => {
    const miss = misses.get(delimiter);
    if (miss !== undefined && from >= miss) return -1;
    const at = text.indexOf(delimiter, from);
    if (at < 0) misses.set(delimiter, Math.min(from, miss ?? Infinity));
    return at;
  };

  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\' && ESCAPABLE.test(text[i + 1] ?? '')) {
      buffer += text[i + 1];
      i += 2;
      continue;
    }
    if (c === '`') {
      let run = 1;
      while (text[i + run] === '`') run += 1;
      const ticks = '`'.repeat(run);
      const close = find(ticks, i + run);
      if (close >= 0 && text[close + run] !== '`') {
        flush();
        out.push(element('code', [text.slice(i + run, close).replace(/\n/g, ' ')]));
        i = close + run;
        continue;
      }
      buffer += ticks;
      i += run;
      continue;
    }
    if (!inLink && (c === '[' || (c === '!' && text[i + 1] === '['))) {
      const image = c === '!';
      const open = image ? i + 1 : i;
      const close = closing(open, '[');
      const paren = close > 0 && text[close + 1] === '(' ? closing(close + 1, '(') : -1;
      if (paren > 0) {
        const target = text.slice(close + 2, paren).trim();
        const url = target.startsWith('<') ? target.slice(1, target.indexOf('>') >>> 0) : target.split(/\s+/)[0];
        const label = text.slice(open + 1, close);
        const href = safeUrl(url);
        flush();
        const content = image ? textNodes(label || url) : inline(label, depth + 1, true);
        out.push(href ? link(href, content) : element('span', content));
        i = paren + 1;
        continue;
      }
      buffer += c;
      i += 1;
      continue;
    }
    if (!inLink && c === '<') {
      const end = find('>', i);
      const inner = end > 0 && end - i < MAX_LINK_SPAN ? text.slice(i + 1, end) : '';
      const href = /^(https?:\/\/|mailto:)\S+$/i.test(inner) ? safeUrl(inner) : null;
      if (href) {
        flush();
        out.push(link(href, [inner]));
        i = end + 1;
        continue;
      }
      buffer += c;
      i += 1;
      continue;
    }
    if (!inLink && c === 'h' && !WORD_CHAR.test(text[i - 1] ?? '')) {
      BARE_URL.lastIndex = i;
      const match = BARE_URL.exec(text);
      const url = match ? trimUrl(match[0]) : '';
      const href = url ? safeUrl(url) : null;
      if (href) {
        flush();
        out.push(link(href, [url]));
        i += url.length;
        continue;
      }
    }
    if (c === '*' || c === '_' || c === '~') {
      let run = 1;
      while (text[i + run] === c) run += 1;
      const size = c === '~' ? 2 : Math.min(run, 3);
      const opensWord = c === '_' && WORD_CHAR.test(text[i - 1] ?? '');
      const next = text[i + size];
      if (run >= size && next !== undefined && !/\s/.test(next) && !opensWord) {
        const delimiter = c.repeat(size);
        const close = find(delimiter, i + size);
        const closesWord = c === '_' && WORD_CHAR.test(text[close + size] ?? '');
        if (close > i + size && !/\s/.test(text[close - 1]) && !closesWord) {
          flush();
          let node;
          const inner = inline(text.slice(i + size, close), depth + 1, inLink);
          if (c === '~') node = element('del', inner);
          else if (size === 1) node = element('em', inner);
          else if (size === 2) node = element('strong', inner);
          else node = element('strong', [element('em', inner)]);
          out.push(node);
          i = close + size;
          continue;
        }
      }
      buffer += text.slice(i, i + run);
      i += run;
      continue;
    }
    buffer += c;
    i += 1;
  }
  flush();
  return out;
}

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line)
    || ITEM.test(line);
}

function isClosingFence(line, fence) {
  const match = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(line);
  return match !== null && match[1][0] === fence[0] && match[1].length >= fence.length;
}

function dedent(line, width) {
  const expanded = line.replace(/^\t+/, (tabs) => '    '.repeat(tabs.length));
  let cut = 0;
  while (cut < width && expanded[cut] === ' ') cut += 1;
  return expanded.slice(cut);
}

function paragraph(lines, depth) {
  return element('p', inline(lines.join('\n'), depth));
}

function isOrdered(marker) {
  return /\d/.test(marker);
}

/** Render the list starting at `start` into `out`; returns the index after it. */
function list(lines, start, depth, out) {
  const ordered = isOrdered(ITEM.exec(lines[start])[2]);
  const listEl = document.createElement(ordered ? 'ol' : 'ul');
  let i = start;
  while (i < lines.length) {
    const match = ITEM.exec(lines[i]);
    if (!match || RULE.test(lines[i]) || isOrdered(match[2]) !== ordered) break;
    const width = match[1].length + match[2].length + 1;
    const body = [match[3] ?? ''];
    i += 1;
    while (i < lines.length) {
      const next = lines[i];
      if (BLANK.test(next)) {
        if (i + 1 < lines.length && /^( {2,}|\t)\S/.test(lines[i + 1])) {
          body.push('');
          i += 1;
          continue;
        }
        break;
      }
      if (/^( {2,}|\t)/.test(next)) body.push(dedent(next, width));
      else if (startsBlock(next)) break;
      else body.push(next);
      i += 1;
    }
    listEl.append(element('li', [depth < MAX_DEPTH ? blocks(body, depth + 1) : paragraph(body, depth)]));
    let after = i;
    while (after < lines.length && BLANK.test(lines[after])) after += 1;
    const following = after < lines.length ? ITEM.exec(lines[after]) : null;
    if (after > i && following && !RULE.test(lines[after]) && isOrdered(following[2]) === ordered) {
      i = after;
    }
  }
  out.append(listEl);
  return i;
}

function blocks(lines, depth) {
  const out = document.createDocumentFragment();
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let match;
    if (BLANK.test(line)) {
      i += 1;
    } else if ((match = FENCE.exec(line))) {
      const body = [];
      i += 1;
      while (i < lines.length && !isClosingFence(lines[i], match[1])) body.push(lines[i++]);
      i += 1;
      out.append(element('pre', [element('code', [body.join('\n')])]));
    } else if ((match = HEADING.exec(line))) {
      out.append(element(`h${match[1].length}`, inline(match[2] ?? '', depth)));
      i += 1;
    } else if (RULE.test(line)) {
      out.append(document.createElement('hr'));
      i += 1;
    } else if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && (match = QUOTE.exec(lines[i]))) {
        body.push(match[1]);
        i += 1;
      }
      out.append(depth < MAX_DEPTH ? element('blockquote', [blocks(body, depth + 1)]) : paragraph(body, depth));
    } else if (ITEM.test(line)) {
      i = list(lines, i, depth, out);
    } else {
      const body = [line];
      i += 1;
      while (i < lines.length && !BLANK.test(lines[i]) && !startsBlock(lines[i])) body.push(lines[i++]);
      out.append(paragraph(body, depth));
    }
  }
  return out;
}

/** Markdown text as a DocumentFragment that cannot run anything. */
export function renderMarkdown(text) {
  const source = typeof text === 'string' ? text : '';
  return blocks(source.replace(/\r\n?/g, '\n').split('\n'), 0);
}
