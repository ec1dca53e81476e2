// The side panel: the selected pass's hunks, and the selected node's fields and history.

import {counts, el, esc, nodeText} from './util.js';

const STATUS_WORDS = ['unchanged', 'changed', 'rewired', 'added', 'removed'];
const VALUE_CHARS = 4000;

export class Panel {
  constructor(container, data, prov, {onHunk, onGoto, onRoots}) {
    this.data = data;
    this.prov = prov;
    this.onHunk = onHunk;
    this.onGoto = onGoto;
    this.onRoots = onRoots;
    this.hunks = el('section', {class: 'hunks'});
    this.node = el('section', {class: 'node'});
    container.append(this.hunks, this.node);
    this.hunks.addEventListener('click', (e) => {
      const item = e.target.closest('[data-group]');
      if (item) this.onHunk(+item.dataset.group);
    });
    this.node.addEventListener('click', (e) => {
      const link = e.target.closest('[data-goto]');
      if (link) { e.preventDefault(); this.onGoto(JSON.parse(link.dataset.goto)); return; }
      const roots = e.target.closest('[data-roots]');
      if (roots) { e.preventDefault(); this.onRoots(JSON.parse(roots.dataset.roots)); }
    });
  }

  // Hunks of one kind and label are one group, listed with their count (as `relayviz report`).
  setPass(pass, graph) {
    this.groups = [];
    if (!graph) {
      this.hunks.innerHTML = `<h2>${esc(pass ? pass.name : '')}</h2>`;
      this.node.innerHTML = '';
      return;
    }
    const found = new Map();
    graph.hunks.forEach((h, i) => {
      const key = h.kind + '\u0000' + h.label;
      if (!found.has(key)) { found.set(key, this.groups.length); this.groups.push({kind: h.kind, label: h.label, hunks: []}); }
      this.groups[found.get(key)].hunks.push(i);
    });
    const s = graph.summary;
    const items = this.groups.map((g, i) => `<li data-group="${i}" class="hk-${g.kind}"><b>${g.kind}</b>` +
      `${g.hunks.length > 1 ? ` <i>×${g.hunks.length}</i>` : ''} ${esc(g.label)}</li>`).join('');
    this.hunks.innerHTML = `<h2>${esc(pass.name)} <small>#${pass.i}</small></h2>` +
      `<p class="counts"><b class="plus">+${s.added}</b> <b class="minus">−${s.removed}</b> ` +
      `<b class="tilde">~${s.changed + s.rewired}</b> · ${s.unchanged} unchanged</p>` +
      (items ? `<ol class="hunk-list">${items}</ol>` : '<p class="dim">no differences</p>');
    this.node.innerHTML = '<p class="dim">Click a node for its fields and its history.</p>';
  }

  markGroup(i) {
    for (const li of this.hunks.querySelectorAll('li.sel')) li.classList.remove('sel');
    const li = this.hunks.querySelector(`[data-group="${i}"]`);
    if (li) { li.classList.add('sel'); li.scrollIntoView({block: 'nearest'}); }
  }

  // Graph node g of `pass`'s graph.
  showNode(pass, graph, g) {
    const [a, b, status] = graph.nodes[g];
    const before = this.data.snapshots[graph.before], after = this.data.snapshots[graph.after];
    const entry = b >= 0 ? after.nodes[b] : before.nodes[a];
    const parts = [`<h2>${esc(nodeText(entry))}</h2>`,
      `<p><span class="badge s${status}">${STATUS_WORDS[status]}</span> ${esc(entry.k)}` +
      `${entry.t ? ` <code>${esc(entry.t)}</code>` : ''}</p>`,
      `<p class="dim">${a >= 0 ? `before: node ${a}` : 'not in the before snapshot'} · ` +
      `${b >= 0 ? `after: node ${b}` : 'not in the after snapshot'}</p>`];
    const fields = b >= 0 ? graph.fields[String(b)] : null;
    if (fields && fields.length) {
      parts.push('<h3>Changed fields</h3><table class="fields">' + fields.map(([f, x, y]) =>
        `<tr><th>${esc(f)}</th><td class="old">${esc(short(x))}</td><td class="new">${esc(short(y))}</td></tr>`).join('') + '</table>');
    }
    parts.push(this.history(pass, a, b));
    const raw = b >= 0 ? after.raw[b] : before.raw[a];
    parts.push('<h3>Fields</h3>' + fieldTable(raw, b >= 0 ? after.raw : before.raw));
    if (a >= 0 && b >= 0 && fields && fields.length) parts.push('<h3>Fields before</h3>' + fieldTable(before.raw[a], before.raw));
    this.node.innerHTML = parts.join('');
  }

  history(pass, a, b) {
    if (!pass.span) {
      return '<h3>History</h3><p class="dim">This pass worked on a module that is not the pipeline\'s ' +
        '(a temporary module, or one a pass was still rewriting), so its nodes have no history.</p>';
    }
    const key = b >= 0 ? [pass.span[1], b] : [pass.span[0], a];
    const h = this.prov.history(...key);
    const names = (pos, ids) => counts(ids.map((id) => nodeText(this.data.snapshots[this.data.chain[pos]].nodes[id])));
    const rootNames = h.roots.length ? names(0, h.roots) : '';
    const first = h.lineage[0];
    const out = ['<h3>History</h3>'];
    if (first[0] === 0 && h.roots.length === 1 && h.roots[0] === first[1]) {
      out.push(`<p class="stems">In the input module as node ${first[1]}.</p>`);
    } else {
      out.push(`<p class="stems">Stems from <a href="#" data-roots='${esc(JSON.stringify(h.roots))}'>` +
        `${h.roots.length} node${h.roots.length === 1 ? '' : 's'} of the input module</a>` +
        `${rootNames ? ': ' + esc(rootNames) : ''}.</p>`);
    }
    const items = [];
    for (const e of [...h.events].reverse()) {
      const step = this.data.steps[e.step];
      const graph = this.data.graphs[step.graph];
      const hunk = e.hunk !== undefined ? graph.hunks[e.hunk] : null;
      const goto = esc(JSON.stringify({pass: step.pass, pos: e.node[0], id: e.node[1]}));
      const name = step.pass != null ? `<a href="#" data-goto='${goto}'>${esc(step.name)} #${step.pass}</a>` : esc(step.name);
      let text = `<b class="ev-${e.kind}">${e.kind}</b> by ${name}`;
      if (e.kind === 'changed' && e.fields.length) text += ': ' + esc(e.fields.map((f) => f[0]).join(', '));
      else if (hunk && e.kind !== 'rewired') text += ` <span class="dim">(${esc(hunk.kind)}: ${esc(hunk.label)})</span>`;
      if (e.kind === 'created') text += e.origins.length ? ` from ${esc(names(e.step, e.origins.map((o) => o[1])))}` : ', from no former node';
      if (e.kind === 'removed' && e.successors.length) text += `, replaced by ${esc(names(e.step + 1, e.successors.map((s) => s[1])))}`;
      items.push(`<li>${text}</li>`);
    }
    if (first[0] === 0) items.push(`<li class="dim">in the input module as node ${first[1]}</li>`);
    out.push(`<ol class="events">${items.join('')}</ol>`);
    return out.join('');
  }
}

function short(value) {
  const text = value === undefined || value === null ? 'none' : typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > 120 ? text.slice(0, 119) + '…' : text;
}

// A node's fields; a call of an Op also shows the Op's attributes, where they are stored.
function fieldTable(raw, nodes) {
  if (!raw) return '';
  const rows = Object.entries(raw).map(([k, v]) => {
    let text = typeof v === 'string' ? v : JSON.stringify(v, null, 1);
    if (text.length > VALUE_CHARS) text = text.slice(0, VALUE_CHARS - 1) + '…';
    return `<tr><th>${esc(k)}</th><td><pre>${esc(text)}</pre></td></tr>`;
  });
  if (raw.node_kind === 'Call' && nodes[raw.op] && nodes[raw.op].node_kind === 'Op' && nodes[raw.op].attrs) {
    rows.push(`<tr><th>op attrs</th><td><pre>${esc(JSON.stringify(nodes[raw.op].attrs, null, 1))}</pre></td></tr>`);
  }
  return `<table class="fields">${rows.join('')}</table>`;
}
