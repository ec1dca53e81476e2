// The graph of the selected pass: which nodes are visible (collapsed regions and functions),
// their layout, the SVG, zoom and pan, and highlighting.

import {select} from 'd3-selection';
import {zoom, zoomIdentity} from 'd3-zoom';
import {layoutGraph} from './layout.js';
import {nodeText, svg} from './util.js';

const STATUS_WORDS = ['unchanged', 'changed', 'rewired', 'added', 'removed'];
const CHAR_W = 6.4;
const SMALL_KINDS = new Set(['Const', 'Var', 'GlobalVar', 'Op', 'Constructor']);
const LABEL_CHARS = 44;
const FAR = 0.4;
const READABLE = 0.9;
const ARROWS_UP_TO = 400;

export class GraphPane {
  constructor(container, data, {onSelect}) {
    this.data = data;
    this.onSelect = onSelect;
    this.container = container;
    this.message = container.appendChild(document.createElement('div'));
    this.message.className = 'graph-message';
    const markers = [0, 1, 2].map((s) => svg('marker', {id: `arrow${s}`, viewBox: '0 0 8 8', refX: 7, refY: 4,
      markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse'}, svg('path', {d: 'M0,0L8,4L0,8z', class: `arrow${s}`})));
    this.viewportNode = svg('g', {class: 'viewport'});
    this.svgNode = svg('svg', {class: 'graph'}, svg('defs', {}, markers), this.viewportNode);
    container.appendChild(this.svgNode);
    this.svg = select(this.svgNode);
    this.viewport = select(this.viewportNode);
    // Zoomed far out, labels are too small to read: not drawing them halves the paint.
    this.far = null;
    this.zoom = zoom().scaleExtent([0.01, 4]).on('zoom', (e) => {
      this.viewport.attr('transform', e.transform);
      const far = e.transform.k < FAR;
      if (far !== this.far) { this.far = far; this.svgNode.classList.toggle('far', far); }
    });
    this.svg.call(this.zoom).on('dblclick.zoom', null);
    this.svgNode.addEventListener('click', (e) => this.click(e));
    // One tooltip for all boxes, rather than a <title> in each.
    this.tip = container.appendChild(document.createElement('div'));
    this.tip.className = 'tip';
    this.tip.hidden = true;
    this.svgNode.addEventListener('mouseover', (e) => this.hover(e));
    this.svgNode.addEventListener('mouseleave', () => { this.tip.hidden = true; });
    this.states = new Map();
    this.collapseRegions = true;
    this.graph = null;
    this.elements = new Map();
    this.marks = {sel: new Set(), match: new Set(), hunk: new Set(), root: new Set()};
  }

  // -- what is shown ----------------------------------------------------------------------

  setPass(pass) {
    this.pass = pass;
    this.graphIndex = pass && pass.graph != null ? pass.graph : null;
    this.graph = this.graphIndex != null ? this.data.graphs[this.graphIndex] : null;
    for (const set of Object.values(this.marks)) set.clear();
    if (!this.graph) {
      this.viewportNode.replaceChildren();
      this.elements = new Map();
      this.message.textContent = !pass ? 'No pass of this trace changed the module.' : pass.changed ? 'This pass changed the module, but the trace lacks a snapshot to compare.'
        : pass.changed === false ? 'This pass left the module unchanged.' : 'This pass was not compared (TIR only, or left out of the trace).';
      this.message.hidden = false;
      return;
    }
    this.message.hidden = true;
    this.before = this.data.snapshots[this.graph.before].nodes;
    this.after = this.data.snapshots[this.graph.after].nodes;
    if (!this.states.has(this.graphIndex)) this.states.set(this.graphIndex, {expanded: new Set(), collapsed: new Set()});
    this.state = this.states.get(this.graphIndex);
    this.parent = this.graph.nodes.map((x) => x[3]);
    this.render();
    this.fit();
  }

  entry(g) {
    const [a, b] = this.graph.nodes[g];
    return b >= 0 ? this.after[b] : this.before[a];
  }

  big() { return this.collapseRegions && this.graph.nodes.length > this.data.collapse_above; }

  // The visible node standing for graph node g: itself, the collapsed function around it, or
  // the collapsed region it is in.
  rep(g) {
    const memo = this.repMemo;
    if (memo[g] !== undefined) return memo[g];
    let top = -1;
    for (let p = this.parent[g]; p >= 0; p = this.parent[p]) if (this.state.collapsed.has(p)) top = p;
    let out;
    if (top >= 0) out = this.rep(top);
    else {
      const r = this.graph.nodes[g][4];
      out = this.big() && r >= 0 && !this.state.expanded.has(r) ? 'r' + r : 'g' + g;
    }
    memo[g] = out;
    return out;
  }

  visible() {
    const G = this.graph;
    const n = G.nodes.length;
    this.repMemo = new Array(n);
    const nodes = new Map();
    const regionParent = new Map();
    for (let g = 0; g < n; g++) {
      const id = this.rep(g);
      if (id[0] === 'r') {
        const r = G.nodes[g][4], p = this.parent[g];
        if (p < 0 || G.nodes[p][4] !== r) regionParent.set(r, p);
      }
      if (!nodes.has(id)) nodes.set(id, {id, parent: null, kids: 0});
    }
    for (const v of nodes.values()) {
      let p = -1;
      if (v.id[0] === 'g') p = this.parent[+v.id.slice(1)];
      else p = regionParent.has(+v.id.slice(1)) ? regionParent.get(+v.id.slice(1)) : -1;
      if (p >= 0) {
        v.parent = this.rep(p);
        if (v.parent === v.id) v.parent = null; else nodes.get(v.parent).kids++;
      }
    }
    const edges = new Map();
    for (const [u, v, side] of G.edges) {
      const ru = this.rep(u), rv = this.rep(v);
      if (ru === rv) continue;
      const key = ru + '>' + rv;
      const had = edges.get(key);
      edges.set(key, had === undefined || had === side ? side : 0);
    }
    return {nodes, edges};
  }

  // -- drawing ----------------------------------------------------------------------------

  label(v) {
    if (v.id[0] === 'r') {
      const count = this.graph.regions[+v.id.slice(1)];
      return `⋯ ${count} unchanged node${count === 1 ? '' : 's'}`;
    }
    const g = +v.id.slice(1);
    const entry = this.entry(g);
    let text = nodeText(entry);
    if (entry.c) text = (this.state.collapsed.has(g) ? '▸ ' : '▾ ') + text;
    return text.length > LABEL_CHARS ? text.slice(0, LABEL_CHARS - 1) + '…' : text;
  }

  render() {
    const t0 = performance.now();
    const {nodes, edges} = this.visible();
    const list = [...nodes.values()];
    for (const v of list) {
      v.text = this.label(v);
      const small = v.id[0] === 'g' && SMALL_KINDS.has(this.entry(+v.id.slice(1)).k);
      v.small = small;
      v.w = Math.max(small ? 36 : 56, v.text.length * (small ? 5.6 : CHAR_W) + 16);
      v.h = small ? 18 : 24;
      v.minWidth = v.text.length * CHAR_W + 20;
    }
    const edgeList = [...edges.entries()].map(([key, side]) => {
      const i = key.indexOf('>');
      return [key.slice(0, i), key.slice(i + 1), side];
    });
    const t1 = performance.now();
    // An edge only the input had between two nodes the output keeps is drawn, not laid out.
    const kept = (id) => id[0] === 'g' && this.graph.nodes[+id.slice(1)][1] >= 0;
    const layout = layoutGraph(list, edgeList.map(([u, v, side]) => [u, v, side === 1 && kept(u) && kept(v)]));
    this.layout = layout;
    const t2 = performance.now();
    const hunkOf = new Set();
    for (const h of this.graph.hunks) for (const g of h.nodes) hunkOf.add(g);
    const compounds = [], boxes = [], paths = [];
    const depth = (v) => { let d = 0; for (let p = v.parent; p; p = nodes.get(p).parent) d++; return d; };
    for (const v of list) {
      const p = layout.pos.get(v.id);
      const x = p.x - p.w / 2, y = p.y - p.h / 2;
      const g = v.id[0] === 'g' ? +v.id.slice(1) : -1;
      const status = g >= 0 ? this.graph.nodes[g][2] : 0;
      const cls = `s${status}` + (g >= 0 && hunkOf.has(g) ? ' inhunk' : '');
      if (v.kids) {
        compounds.push([depth(v), svg('g', {class: `cmp ${cls}`, 'data-id': v.id},
          svg('rect', {x, y, width: p.w, height: p.h, rx: 8}),
          svg('text', {class: 'cmp-title', x: x + 8, y: y + 14}, v.text))]);
      } else {
        const kind = v.id[0] === 'r' ? 'region' : v.small ? 'small' : '';
        boxes.push(svg('g', {class: `n ${kind} ${cls}`, 'data-id': v.id, transform: `translate(${x},${y})`},
          svg('rect', {width: p.w, height: p.h, rx: v.small ? 9 : 4}),
          svg('text', {x: p.w / 2, y: p.h / 2 + 4}, v.text)));
      }
    }
    // Data flows down the layers, so arrowheads only help on small graphs; on big ones they
    // cost a quarter of the drawing time.
    const arrows = list.length <= ARROWS_UP_TO;
    edgeList.forEach(([, , side], k) => {
      const pts = layout.routes[k];
      if (!pts) return;
      let d = `M${pts[0][0].toFixed(1)},${pts[0][1].toFixed(1)}`;
      for (let i = 1; i < pts.length; i++) {
        const [x0, y0] = pts[i - 1], [x1, y1] = pts[i];
        const dy = (y1 - y0) / 2;
        d += `C${x0.toFixed(1)},${(y0 + dy).toFixed(1)} ${x1.toFixed(1)},${(y1 - dy).toFixed(1)} ${x1.toFixed(1)},${y1.toFixed(1)}`;
      }
      paths.push(svg('path', {class: `e e${side}`, d, 'marker-end': arrows ? `url(#arrow${side})` : null}));
    });
    compounds.sort((a, b) => a[0] - b[0]);
    const t3 = performance.now();
    // One fragment, not spread arguments: a graph may have more elements than a call takes.
    const drawn = document.createDocumentFragment();
    for (const c of compounds) drawn.append(c[1]);
    for (const node of paths) drawn.append(node);
    for (const node of boxes) drawn.append(node);
    this.viewportNode.replaceChildren(drawn);
    this.elements = new Map();
    for (const node of this.viewportNode.querySelectorAll('[data-id]')) this.elements.set(node.getAttribute('data-id'), node);
    for (const [mark, set] of Object.entries(this.marks)) for (const g of set) this.mark(g, mark, true);
    const t4 = performance.now();
    // Where a pass switch spends its time (bench_html.py reads it).
    this.timing = {visible: t1 - t0, layout: t2 - t1, svg: t3 - t2, dom: t4 - t3};
    this.renderMs = t4 - t0;
    this.visibleCount = list.length;
  }

  title(g) {
    const [a, b, status] = this.graph.nodes[g];
    const entry = this.entry(g);
    const ids = [a >= 0 ? `before #${a}` : '', b >= 0 ? `after #${b}` : ''].filter(Boolean).join(', ');
    return `${nodeText(entry)}${entry.t ? '  ' + entry.t : ''}\n${STATUS_WORDS[status]} (${ids})`;
  }

  // -- interaction --------------------------------------------------------------------------

  hover(e) {
    const target = e.target.closest('[data-id]');
    if (!target || !this.graph) { this.tip.hidden = true; return; }
    const id = target.getAttribute('data-id');
    this.tip.textContent = id[0] === 'r' ? 'unchanged nodes: click to show them' : this.title(+id.slice(1));
    const box = this.container.getBoundingClientRect();
    this.tip.style.left = `${e.clientX - box.left + 12}px`;
    this.tip.style.top = `${e.clientY - box.top + 12}px`;
    this.tip.hidden = false;
  }

  click(e) {
    const target = e.target.closest('[data-id]');
    if (!target || !this.graph) return;
    const id = target.getAttribute('data-id');
    if (id[0] === 'r') { this.state.expanded.add(+id.slice(1)); this.redraw(); return; }
    const g = +id.slice(1);
    if (e.target.classList.contains('cmp-title') || (this.entry(g).c && target.classList.contains('n') && this.state.collapsed.has(g))) {
      this.toggle(g);
      return;
    }
    this.onSelect(g);
  }

  toggle(g) {
    if (this.state.collapsed.has(g)) this.state.collapsed.delete(g); else this.state.collapsed.add(g);
    this.redraw();
  }

  collapseAll(on) {
    if (!this.graph) return;
    this.state.collapsed.clear();
    if (on) this.graph.nodes.forEach((x, g) => { if (this.entry(g).c) this.state.collapsed.add(g); });
    this.redraw();
  }

  redraw() {
    const t = this.currentTransform();
    this.render();
    this.svg.call(this.zoom.transform, t);
  }

  currentTransform() {
    return this.svgNode.__zoom || zoomIdentity;
  }

  // Make graph node g visible: open its region and the functions around it.
  reveal(gs) {
    let changed = false;
    for (const g of gs) {
      const r = this.graph.nodes[g][4];
      if (r >= 0 && this.big() && !this.state.expanded.has(r)) { this.state.expanded.add(r); changed = true; }
      for (let p = this.parent[g]; p >= 0; p = this.parent[p]) {
        if (this.state.collapsed.has(p)) { this.state.collapsed.delete(p); changed = true; }
      }
    }
    if (changed) this.redraw();
  }

  mark(g, mark, on) {
    const node = this.elements.get(this.repMemo[g] || 'g' + g);
    if (node) node.classList.toggle(mark, on);
  }

  setMarks(mark, gs) {
    const set = this.marks[mark];
    for (const g of set) this.mark(g, mark, false);
    set.clear();
    for (const g of gs) { set.add(g); this.mark(g, mark, true); }
  }

  fit() { this.focus(null); }

  // Zoom to show the given graph nodes (all when null).
  focus(gs) {
    if (!this.layout) return;
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    const ids = gs == null ? [...this.layout.pos.keys()] : gs.map((g) => this.repMemo[g] || 'g' + g);
    for (const id of ids) {
      const p = this.layout.pos.get(id);
      if (!p) continue;
      x0 = Math.min(x0, p.x - p.w / 2); x1 = Math.max(x1, p.x + p.w / 2);
      y0 = Math.min(y0, p.y - p.h / 2); y1 = Math.max(y1, p.y + p.h / 2);
    }
    if (x0 > x1) return;
    const width = this.svgNode.clientWidth || 800, height = this.svgNode.clientHeight || 600;
    const pad = 30;
    let k = Math.min((width - 2 * pad) / Math.max(x1 - x0, 1), (height - 2 * pad) / Math.max(y1 - y0, 1));
    k = Math.min(k, gs == null ? 1.2 : 1.5);
    // A big graph is not squeezed below the scale where its labels can be read: it is shown
    // from its top (or as wide as the window allows), and pans from there.
    if (gs == null) k = Math.max(k, Math.min(READABLE, (width - 2 * pad) / Math.max(x1 - x0, 1)));
    const tx = width / 2 - k * (x0 + x1) / 2;
    // A tall graph is shown from its top rather than squeezed into the window.
    const ty = gs == null && k * (y1 - y0) > height - 2 * pad ? pad - k * y0 : height / 2 - k * (y0 + y1) / 2;
    this.svg.call(this.zoom.transform, zoomIdentity.translate(tx, ty).scale(k));
  }

  // Graph nodes matching `query` (operator, kind, name, type or #id), in graph order.
  search(query) {
    if (!this.graph || !query) return [];
    const q = query.toLowerCase();
    const byId = q.startsWith('#') ? q.slice(1) : null;
    const out = [];
    this.graph.nodes.forEach(([a, b], g) => {
      const entry = this.entry(g);
      if (byId !== null) {
        if (String(a) === byId || String(b) === byId) out.push(g);
        return;
      }
      const raw = b >= 0 ? this.data.snapshots[this.graph.after].raw[b] : this.data.snapshots[this.graph.before].raw[a];
      const texts = [entry.n, entry.d || '', raw && typeof raw.name === 'string' ? raw.name : '',
                     raw && raw.graph && raw.graph.name ? raw.graph.name : ''];
      if (texts.some((t) => t && t.toLowerCase().includes(q))) out.push(g);
    });
    return out;
  }
}
