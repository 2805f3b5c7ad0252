// The layout problems a reader would see on the current page (tests/test_book.py): an element under
// the right-hand Contents panel or past the window, a table wider than its column or clipped.
const out = [];
const panel = document.querySelector('.bd-sidebar-secondary');
const cs = panel && getComputedStyle(panel);
const shown = panel && cs.display !== 'none' && cs.visibility !== 'hidden' && panel.getBoundingClientRect().width > 0;
const p = shown ? panel.getBoundingClientRect() : null;
const article = document.querySelector('article.bd-article') || document.querySelector('article');
const a = article.getBoundingClientRect();
const right = document.documentElement.clientWidth;
function visible(el) {  // the element's box as clipped by the ancestors that scroll or hide overflow
  let r = el.getBoundingClientRect(); let [l, rr] = [r.left, r.right];
  for (let e = el.parentElement; e && e !== document.body; e = e.parentElement) {
    if (getComputedStyle(e).overflowX !== 'visible') { const q = e.getBoundingClientRect(); l = Math.max(l, q.left); rr = Math.min(rr, q.right); }
  }
  return [l, rr, r.width, r.height];
}
for (const el of article.querySelectorAll('img, figure, table, .full-width, .cell_output, pre, .admonition, h1, h2, h3, p')) {
  const [l, r, w, h] = visible(el);
  if (!w || !h || r <= l) continue;
  const name = el.tagName + '.' + (el.className || '').toString().split(' ').slice(0, 2).join('.');
  if (p && r > p.left + 1 && l < p.right - 1) out.push('under the Contents panel: ' + name + ' ' + Math.round(l) + '-' + Math.round(r));
  if (r > right + 1) out.push('past the window: ' + name + ' ' + Math.round(l) + '-' + Math.round(r));
}
for (const t of article.querySelectorAll('table')) {
  let box = null;
  for (let e = t.parentElement; e && e !== article; e = e.parentElement) { const o = getComputedStyle(e).overflowX; if (o === 'auto' || o === 'scroll') { box = e; break; } if (o === 'hidden' || o === 'clip') { if (t.scrollWidth > e.clientWidth + 1) out.push('table clipped by ' + e.className); break; } }
  const column = t.closest('.full-width, .tag_full-width') || article;
  const c = column.getBoundingClientRect(); const r = (box || t).getBoundingClientRect();
  if (r.width > 0 && r.right > c.right + 1) out.push('table wider than its column: ' + Math.round(r.width) + ' px in ' + Math.round(c.width));
}
return out;
