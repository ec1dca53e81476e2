// Small helpers shared by the viewer's parts.

const ESCAPES = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'};

// Text from the trace (names, labels, values) goes through this before it reaches HTML.
export function esc(value) {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

export function el(tag, attrs = {}, html = '') {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v; else node.setAttribute(k, v);
  }
  if (html) node.innerHTML = html;
  return node;
}

export function ms(value) {
  return value.toLocaleString('en-US', {minimumFractionDigits: 1, maximumFractionDigits: 1});
}

// "nn.conv2d×3, add" from a list of names, most frequent first, at most `limit` names.
export function counts(names, limit = 8) {
  const tally = new Map();
  for (const n of names) tally.set(n, (tally.get(n) || 0) + 1);
  const parts = [...tally].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([n, c]) => (c === 1 ? n : `${n}×${c}`));
  return parts.length > limit ? parts.slice(0, limit).join(', ') + `, … ${parts.length - limit} more` : parts.join(', ');
}

// How a node of a snapshot is named in lists: operator, or kind and detail.
export function nodeText(entry) {
  if (!entry) return '?';
  if (entry.k === 'Call' && entry.n !== 'Call') return entry.n;
  if (entry.c) return 'fn ' + (entry.d || '');
  if (entry.k === 'Var' || entry.k === 'GlobalVar' || entry.k === 'PrimFunc') return entry.d || entry.n;
  return entry.d ? `${entry.n} ${entry.d}` : entry.n;
}
