// Small helpers shared by the viewer's parts.
//
// Every element is built here, as DOM nodes: text from the trace (names, labels, values,
// numbers) becomes text nodes and attribute values, never markup. The viewer sets no
// innerHTML, and the page's Content-Security-Policy (require-trusted-types-for 'script')
// makes the browser refuse any that a change would add.

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(node, attrs, children) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false || child === '') continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// An HTML element: h('li', {class: 'x', 'data-g': 3}, 'text', h('b', {}, name), ...).
export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// An SVG element, built the same way.
export function svg(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
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
  if (entry.k === 'Call' && entry.n !== 'Call') return entry.d ? `${entry.n} ${entry.d}` : entry.n;
  if (entry.c) return (entry.k === 'PrimFunc' ? 'PrimFunc ' : 'fn ') + (entry.d || '');
  if (entry.k === 'Var' || entry.k === 'GlobalVar' || entry.k === 'PrimFunc') return entry.d || entry.n;
  return entry.d ? `${entry.n} ${entry.d}` : entry.n;
}
