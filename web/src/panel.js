// The side panel: the selected pass's hunks, and the selected node's fields and history.

import {counts, h, nodeText} from './util.js';

const STATUS_WORDS = ['unchanged', 'changed', 'rewired', 'added', 'removed'];
const VALUE_CHARS = 4000;

export class Panel {
  constructor(container, data, prov, {onHunk, onGoto, onRoots, onNode}) {
    this.data = data;
    this.prov = prov;
    this.onHunk = onHunk;
    this.onGoto = onGoto;
    this.onRoots = onRoots;
    this.onNode = onNode;
    this.hunks = h('section', {class: 'hunks'});
    this.kernels = h('div', {class: 'kernels'});
    this.node = h('section', {class: 'node'});
    container.append(this.hunks, this.node);
    this.hunks.addEventListener('click', (e) => {
      const item = e.target.closest('[data-group]');
      if (item) this.onHunk(+item.dataset.group);
    });
    this.kernels.addEventListener('click', (e) => {
      const item = e.target.closest('[data-kernel]');
      if (item) this.showKernel(+item.dataset.kernel);
    });
  }

  // What the pass did to each kernel's loop nest: one line each (as `relayviz report` says it);
  // the selected kernel's nest before and after the pass below them.
  setKernels(graph) {
    this.kernelList = (graph && graph.kernels) || [];
    if (!this.kernelList.length) { this.kernels.replaceChildren(); return; }
    const items = this.kernelList.map((k, i) => h('li', {'data-kernel': i, class: `kv-${k.verb}`, title: k.text},
      h('b', {}, k.verb), ' @', k.name));
    this.nestPane = h('div', {class: 'nest-pane'});
    this.kernels.replaceChildren(h('h3', {}, `Kernels (${items.length})`), h('ol', {class: 'kernel-list'}, items),
      this.nestPane);
    this.showKernel(0);
  }

  showKernel(i) {
    const k = this.kernelList[i];
    if (!k) return;
    for (const li of this.kernels.querySelectorAll('li.sel')) li.classList.remove('sel');
    const li = this.kernels.querySelector(`[data-kernel="${i}"]`);
    if (li) li.classList.add('sel');
    const parts = [h('p', {class: `kernel-change kv-${k.verb}`}, h('b', {}, k.verb), k.text.slice(k.verb.length)),
      nestBlock('loop nest before', this.data.nests[k.before]), nestBlock('loop nest after', this.data.nests[k.after])];
    for (const d of k.devices || []) parts.push(nestBlock(`after: device kernel @${d.name}`, this.data.nests[d.nest]));
    this.nestPane.replaceChildren(...parts);
  }

  // Hunks of one kind and label are one group, listed with their count (as `relayviz report`).
  setPass(pass, graph) {
    this.groups = [];
    this.setKernels(graph);
    if (!graph) {
      this.hunks.replaceChildren(h('h2', {}, pass ? pass.name : ''));
      this.node.replaceChildren();
      return;
    }
    const found = new Map();
    graph.hunks.forEach((hunk, i) => {
      const key = hunk.kind + '\u0000' + hunk.label;
      if (!found.has(key)) { found.set(key, this.groups.length); this.groups.push({kind: hunk.kind, label: hunk.label, hunks: []}); }
      this.groups[found.get(key)].hunks.push(i);
    });
    const s = graph.summary;
    const items = this.groups.map((g, i) => h('li', {'data-group': i, class: `hk-${g.kind}`}, h('b', {}, g.kind),
      g.hunks.length > 1 ? [' ', h('i', {}, `×${g.hunks.length}`)] : [], ' ', g.label));
    this.hunks.replaceChildren(
      h('h2', {}, pass.name, ' ', h('small', {}, `#${pass.i}`)),
      h('p', {class: 'counts'}, h('b', {class: 'plus'}, `+${s.added}`), ' ', h('b', {class: 'minus'}, `−${s.removed}`), ' ',
        h('b', {class: 'tilde'}, `~${s.changed + s.rewired}`), ` · ${s.unchanged} unchanged`),
      this.kernelList.length ? this.kernels : '',
      this.kernelList.length ? h('h3', {}, 'Hunks') : '',
      items.length ? h('ol', {class: 'hunk-list'}, items) : h('p', {class: 'dim'}, 'no differences'));
    this.node.replaceChildren(h('p', {class: 'dim'}, 'Click a node for its fields and its history.'));
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
    const parts = [h('h2', {}, nodeText(entry)),
      h('p', {}, h('span', {class: `badge s${status}`}, STATUS_WORDS[status]), ' ', entry.k, entry.t ? [' ', h('code', {}, entry.t)] : []),
      h('p', {class: 'dim'}, a >= 0 ? `before: node ${a}` : 'not in the before snapshot', ' · ',
        b >= 0 ? `after: node ${b}` : 'not in the after snapshot')];
    if (entry.f != null) parts.push(this.callee(graph, entry.f, b >= 0 ? 1 : 0, b >= 0 ? after : before));
    const fields = b >= 0 ? graph.fields[String(b)] : null;
    if (fields && fields.length) {
      parts.push(h('h3', {}, 'Changed fields'), h('table', {class: 'fields'}, fields.map(([f, x, y]) =>
        h('tr', {}, h('th', {}, f), h('td', {class: 'old'}, short(x)), h('td', {class: 'new'}, short(y))))));
    }
    parts.push(...this.history(pass, a, b));
    const raw = b >= 0 ? after.raw[b] : before.raw[a];
    if (raw && raw.node_kind === 'PrimFunc') {  // a kernel the pass changed: its loop nests above
      const k = this.kernelList.findIndex((x) => x.name === raw.name || (x.devices || []).some((d) => d.name === raw.name));
      if (k >= 0) this.showKernel(k);
    }
    parts.push(h('h3', {}, 'Fields'), fieldTable(raw, b >= 0 ? after.raw : before.raw));
    if (a >= 0 && b >= 0 && fields && fields.length) parts.push(h('h3', {}, 'Fields before'), fieldTable(before.raw[a], before.raw));
    this.node.replaceChildren(...parts);
  }

  // What a call runs (a PrimFunc for call_tir, a function of the module), as a link to it.
  callee(graph, id, side, snapshot) {
    const target = snapshot.nodes[id];
    const name = target ? nodeText(target) : `node ${id}`;
    const g = graph.nodes.findIndex((n) => n[side] === id);
    return h('p', {class: 'callee'}, 'runs ',
      g >= 0 ? this.link(() => this.onNode(g), h('code', {}, name)) : h('code', {}, name));
  }

  // A link that runs `action` when clicked.
  link(action, ...children) {
    const a = h('a', {href: '#'}, ...children);
    a.addEventListener('click', (e) => { e.preventDefault(); action(); });
    return a;
  }

  history(pass, a, b) {
    if (!pass.span) {
      return [h('h3', {}, 'History'), h('p', {class: 'dim'}, 'This pass worked on a module that is not the pipeline\'s ' +
        '(a temporary module, or one a pass was still rewriting), so its nodes have no history.')];
    }
    const key = b >= 0 ? [pass.span[1], b] : [pass.span[0], a];
    const hist = this.prov.history(...key);
    const names = (pos, ids) => counts(ids.map((id) => nodeText(this.data.snapshots[this.data.chain[pos]].nodes[id])));
    const rootNames = hist.roots.length ? names(0, hist.roots) : '';
    const first = hist.lineage[0];
    const out = [h('h3', {}, 'History')];
    if (first[0] === 0 && hist.roots.length === 1 && hist.roots[0] === first[1]) {
      out.push(h('p', {class: 'stems'}, `In the input module as node ${first[1]}.`));
    } else {
      const roots = hist.roots;
      out.push(h('p', {class: 'stems'}, 'Stems from ',
        this.link(() => this.onRoots(roots), `${roots.length} node${roots.length === 1 ? '' : 's'} of the input module`),
        rootNames ? ': ' + rootNames : '', '.'));
    }
    if (key[0] < this.prov.last) {  // and forward: what it became in the last snapshot
      const below = this.prov.descendants(...key);
      out.push(h('p', {class: 'becomes'}, below.length
        ? `Becomes ${below.length} node${below.length === 1 ? '' : 's'} of the last snapshot: ${names(this.prov.last, below)}.`
        : 'Becomes no node of the last snapshot.'));
    }
    const items = [];
    for (const e of [...hist.events].reverse()) {
      const step = this.data.steps[e.step];
      const graph = this.data.graphs[step.graph];
      const hunk = e.hunk !== undefined ? graph.hunks[e.hunk] : null;
      const target = {pass: step.pass, pos: e.node[0], id: e.node[1]};
      const name = step.pass != null ? this.link(() => this.onGoto(target), `${step.name} #${step.pass}`) : step.name;
      const text = [h('b', {class: `ev-${e.kind}`}, e.kind), ' by ', name];
      if (e.kind === 'changed' && e.fields.length) text.push(': ' + e.fields.map((f) => f[0]).join(', '));
      else if (hunk && e.kind !== 'rewired') text.push(' ', h('span', {class: 'dim'}, `(${hunk.kind}: ${hunk.label})`));
      if (e.kind === 'created') text.push(e.origins.length ? ` from ${names(e.step, e.origins.map((o) => o[1]))}` : ', from no former node');
      if (e.kind === 'removed' && e.successors.length) text.push(`, replaced by ${names(e.step + 1, e.successors.map((s) => s[1]))}`);
      items.push(h('li', {}, text));
    }
    if (first[0] === 0) items.push(h('li', {class: 'dim'}, `in the input module as node ${first[1]}`));
    out.push(h('ol', {class: 'events'}, items));
    return out;
  }
}

// A loop nest as indented lines: a loop bound to a thread, a thread launch, an allocation and
// a barrier each marked by its kind (class nk-bound, nk-launch, nk-alloc, nk-sync, ...).
function nestBlock(title, lines) {
  const rows = (lines || []).map(([depth, text, kind]) => {
    const row = h('div', {class: `nl nk-${kind}`}, text);
    row.style.paddingLeft = `${depth * 0.9}em`;  // CSSOM: the page's policy refuses style attributes
    return row;
  });
  return h('div', {class: 'nest'}, h('h4', {}, title), h('div', {class: 'nest-lines'}, rows));
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
    return h('tr', {}, h('th', {}, k), h('td', {}, h('pre', {}, text)));
  });
  if (raw.node_kind === 'Call' && nodes[raw.op] && nodes[raw.op].node_kind === 'Op' && nodes[raw.op].attrs) {
    rows.push(h('tr', {}, h('th', {}, 'op attrs'), h('td', {}, h('pre', {}, JSON.stringify(nodes[raw.op].attrs, null, 1)))));
  }
  return h('table', {class: 'fields'}, rows);
}
