// The viewer of `relayviz report --html`: reads the data the page embeds and wires the pass
// list, the graph and the side panel together. Keys: ↓/j and ↑/k the next and previous pass,
// n/p the next and previous hunk, / the search box, f fit, Esc clear.

import {GraphPane} from './graphpane.js';
import {Panel} from './panel.js';
import {PassList} from './passlist.js';
import {Provenance} from './provenance.js';
import {h, nodeText} from './util.js';

const FORMAT = 'relayviz-html/1';

function start() {
  const script = document.getElementById('relayviz-data');
  const data = JSON.parse(script.textContent);
  if (data.format !== FORMAT) throw new Error(`this viewer reads ${FORMAT}, the page holds ${data.format}`);
  const app = document.getElementById('app');
  const changed = data.passes.filter((p) => p.changed).length;
  const header = h('header', {}, h('h1', {}, 'relayviz ', h('span', {}, data.trace.name)),
    h('span', {class: 'summary'}, `${data.passes.length.toLocaleString('en-US')} pass events, ${changed} changed the module`),
    data.trace.complete ? '' : h('span', {class: 'warn', title: data.trace.problems.join('\n')}, 'incomplete trace'));
  const search = h('input', {type: 'search', class: 'search', placeholder: 'search operator or name ( / )', 'aria-label': 'search nodes'});
  const results = h('div', {class: 'results', hidden: true});
  const searchBox = h('div', {class: 'search-box'}, search, results);
  const regionsBox = h('input', {type: 'checkbox', checked: true});
  const regions = h('label', {class: 'toggle', title: `graphs of more than ${data.collapse_above} nodes`},
    regionsBox, ' collapse unchanged regions');
  const functionsBox = h('input', {type: 'checkbox'});
  const functions = h('label', {class: 'toggle'}, functionsBox, ' collapse functions');
  const fit = h('button', {type: 'button', title: 'f'}, 'fit');
  const legend = h('span', {class: 'legend'}, data.statuses.map((s, i) => h('i', {class: `s${i}`}, s)));
  const keys = h('span', {class: 'keys'}, '↑↓ passes · n/p hunks · / search · f fit');
  header.append(searchBox, regions, functions, fit, legend, keys);
  const passes = h('nav', {class: 'passes'});
  const graph = h('main', {class: 'graph-pane'});
  const side = h('aside', {class: 'panel'});
  app.append(header, passes, graph, side);

  const prov = new Provenance(data);
  const state = {pass: null, group: -1, hunk: -1};
  const pane = new GraphPane(graph, data, {onSelect: (g) => selectNode(g)});
  const panel = new Panel(side, data, prov, {
    onHunk: (i) => showGroup(i),
    onGoto: (target) => goto(target),
    onRoots: (roots) => showRoots(roots),
    onNode: (g) => { pane.reveal([g]); selectNode(g); pane.focus([g]); },
  });
  const list = new PassList(passes, data, {onSelect: (i) => selectPass(i)});

  function selectPass(i) {
    const t0 = performance.now();
    state.pass = i;
    state.group = -1;
    state.hunk = -1;
    const pass = data.passes[i];
    list.select(i);
    pane.setPass(pass);
    panel.setPass(pass, pane.graph);
    if (functionsBox.checked) pane.collapseAll(true);
    runSearch(false);
    history.replaceState(null, '', '#pass=' + pass.i);
    window.relayvizViewer.lastSwitchMs = performance.now() - t0;
    return pass;
  }

  function selectNode(g) {
    pane.setMarks('sel', [g]);
    panel.showNode(data.passes[state.pass], pane.graph, g);
  }

  // Clicking a group steps through its hunks.
  function showGroup(i) {
    const group = panel.groups[i];
    if (group) showHunk(i, state.group === i ? (state.hunk + 1) % group.hunks.length : 0);
  }

  function showHunk(gi, hi) {
    state.group = gi;
    state.hunk = hi;
    panel.markGroup(gi);
    const members = pane.graph.hunks[panel.groups[gi].hunks[hi]].nodes;
    pane.reveal(members);
    pane.setMarks('hunk', members);
    pane.focus(members);
  }

  function stepHunk(step) {
    if (!panel.groups || !panel.groups.length) return;
    const flat = [];
    panel.groups.forEach((g, gi) => g.hunks.forEach((h, hi) => flat.push([gi, hi])));
    let at = flat.findIndex(([gi, hi]) => gi === state.group && hi === state.hunk);
    at = at < 0 ? (step > 0 ? 0 : flat.length - 1) : (at + step + flat.length) % flat.length;
    showHunk(...flat[at]);
  }

  // Select the pass of a history event and the node there.
  function goto({pass, pos, id}) {
    const index = data.passes.findIndex((p) => p.i === pass);
    if (index < 0) return;
    selectPass(index);
    const p = data.passes[index];
    const G = pane.graph;
    if (!G || !p.span) return;
    const side = data.chain[pos] === G.after && pos === p.span[1] ? 1 : data.chain[pos] === G.before ? 0 : -1;
    if (side < 0) return;
    const g = G.nodes.findIndex((n) => n[side] === id);
    if (g < 0) return;
    pane.reveal([g]);
    selectNode(g);
    pane.focus([g]);
  }

  // The input module's nodes a node stems from, shown in the first step's graph.
  function showRoots(roots) {
    const step = data.steps[0];
    if (!step || step.pass == null) return;
    const index = data.passes.findIndex((p) => p.i === step.pass);
    selectPass(index);
    const G = pane.graph;
    const set = new Set(roots);
    const gs = [];
    G.nodes.forEach((n, g) => { if (n[0] >= 0 && set.has(n[0])) gs.push(g); });
    pane.reveal(gs);
    pane.setMarks('root', gs);
    pane.focus(gs);
  }

  function runSearch(jump) {
    const query = search.value.trim();
    const found = pane.search(query);
    pane.setMarks('match', found);
    if (!query) { results.hidden = true; results.replaceChildren(); return found; }
    results.hidden = false;
    const shown = found.slice(0, 50).map((g) => {
      const entry = pane.entry(g);
      return h('li', {'data-g': g}, nodeText(entry), ' ', h('span', {class: 'dim'}, entry.t || ''));
    });
    results.replaceChildren(h('p', {}, `${found.length} match${found.length === 1 ? '' : 'es'} in this pass`),
      shown.length ? h('ol', {}, shown) : '');
    if (jump && found.length) pick(found[0]);
    return found;
  }

  function pick(g) {
    pane.reveal([g]);
    selectNode(g);
    pane.focus([g]);
  }

  search.addEventListener('input', () => runSearch(false));
  search.addEventListener('keydown', (e) => { if (e.key === 'Enter') runSearch(true); });
  results.addEventListener('click', (e) => {
    const li = e.target.closest('[data-g]');
    if (li) pick(+li.dataset.g);
  });
  regionsBox.addEventListener('change', (e) => { pane.collapseRegions = e.target.checked; if (pane.graph) { pane.render(); pane.fit(); } });
  functionsBox.addEventListener('change', (e) => pane.collapseAll(e.target.checked));
  fit.addEventListener('click', () => pane.fit());

  document.addEventListener('keydown', (e) => {
    if (e.target.tagName === 'INPUT') {
      if (e.key === 'Escape') e.target.blur();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    let next = null;
    switch (e.key) {
      case 'ArrowDown': case 'j': next = list.neighbour(1); break;
      case 'ArrowUp': case 'k': next = list.neighbour(-1); break;
      case 'n': stepHunk(1); break;
      case 'p': stepHunk(-1); break;
      case 'f': pane.fit(); break;
      case '/': search.focus(); break;
      case 'Escape': pane.setMarks('sel', []); pane.setMarks('hunk', []); pane.setMarks('root', []); break;
      default: return;
    }
    e.preventDefault();
    if (next != null) selectPass(next);
  });

  window.relayvizViewer = {data, pane, list, panel, prov, selectPass, lastSwitchMs: 0};
  const fromHash = /#pass=(\d+)/.exec(location.hash);
  const wanted = fromHash ? +fromHash[1] : data.start;
  let first = data.passes.findIndex((p) => p.i === wanted);
  if (first < 0) first = data.passes.findIndex((p) => p.graph != null);
  if (first >= 0) selectPass(first); else pane.setPass(null);
  document.body.dataset.ready = '1';
}

start();
