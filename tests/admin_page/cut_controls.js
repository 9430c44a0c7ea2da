(root) => {
  // Evaluated by conftest.py: every visible control in `root` whose box is cut by an ancestor
  // that clips or scrolls (or by the window), and every control whose own text overflows it.
  const cut = [];
  const controls = root.querySelectorAll('button, a, select, input, textarea, summary');
  for (const el of controls) {
    const box = el.getBoundingClientRect();
    if (!box.width || !box.height) continue;
    if (el.closest('[hidden], [aria-hidden="true"], .sr-only')) continue;
    const name = el.textContent || el.getAttribute('aria-label') || el.name || '';
    const text = name.trim().slice(0, 40);
    if (el.scrollWidth > el.clientWidth + 1 && el.tagName !== 'SELECT' && el.tagName !== 'INPUT'
        && el.tagName !== 'TEXTAREA') {
      cut.push({text, why: `its text is ${el.scrollWidth}px in a ${el.clientWidth}px box`});
      continue;
    }
    if (box.right > document.documentElement.clientWidth + 1 || box.left < -1) {
      cut.push({text, why: 'it is outside the window'});
      continue;
    }
    for (let up = el.parentElement; up; up = up.parentElement) {
      const style = getComputedStyle(up);
      if (style.overflowX === 'visible' && style.overflowY === 'visible') continue;
      const clip = up.getBoundingClientRect();
      if (box.left < clip.left - 1 || box.right > clip.right + 1) {
        cut.push({text, why: `a ${up.tagName.toLowerCase()}.${up.className} cuts it`});
        break;
      }
    }
  }
  return cut;
}
