async () => {
  // Evaluated in the page by test_notes.py: exercises static/js/markdown.js in the real browser.
  const md = await import('/static/js/markdown.js');
  const ALLOWED = new Set(['P', 'BR', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'STRONG', 'EM', 'DEL',
    'CODE', 'PRE', 'BLOCKQUOTE', 'UL', 'OL', 'LI', 'HR', 'A', 'SPAN']);
  const PIECES = ['*', '**', '_', '~~', '`', '```\n', '[', ']', '(', ')', '<', '>', '!', '\\',
    '\n', '\n\n', '# ', '> ', '- ', '1. ', '   ', 'text', 'https://ok.example/p', 'javascript:x',
    'data:text/html,x', '<script>alert(1)</script>', '<img src=x onerror="alert(1)">',
    '" onclick="alert(1)', '](javascript:alert(1))', '](https://ok.example)', '&amp;'];
  const URLS = ['javascript:alert(1)', ' JaVaScRiPt:alert(1)', 'java\tscript:alert(1)',
    'data:text/html,x', 'vbscript:x', '//evil.example/', '/relative', 'file:///etc/passwd',
    'https://ok.example/a?b=c', 'mailto:someone@example.com', 'http://ok.example'];

  const render = (text) => {
    const box = document.createElement('div');
    box.append(md.renderMarkdown(text));
    return box;
  };
  const attributeOk = (el, attr) => el.tagName === 'A' && (
    (attr.name === 'href' && md.safeUrl(attr.value) === attr.value)
    || (attr.name === 'rel' && attr.value === 'noopener noreferrer nofollow')
    || (attr.name === 'target' && attr.value === '_blank'));

  // Random documents from Markdown-significant pieces, from a fixed-seed generator.
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const problems = [];
  for (let n = 0; n < 400; n += 1) {
    let text = '';
    const length = 1 + Math.floor(next() * 40);
    for (let k = 0; k < length; k += 1) text += PIECES[Math.floor(next() * PIECES.length)];
    for (const el of render(text).querySelectorAll('*')) {
      if (!ALLOWED.has(el.tagName)) problems.push(`tag ${el.tagName} from ${JSON.stringify(text)}`);
      for (const attr of el.attributes) {
        if (!attributeOk(el, attr)) problems.push(`${el.tagName} ${attr.name}=${attr.value}`);
      }
    }
  }

  const sample = render(
    '> quote\n\n1. one\n2. two\n   - nested\n\n```\n<b>x</b>\n```\n---\n~~gone~~ *em* a\\*b');
  return {
    safe: URLS.map((url) => md.safeUrl(url)),
    problems: problems.slice(0, 10),
    tags: [...sample.querySelectorAll('*')].map((el) => el.tagName.toLowerCase()),
    code: sample.querySelector('pre').textContent,
    last: sample.lastElementChild.textContent,
  };
}
