// The pass list: every pass event, filterable by name, runs of unchanged events folded.

import {h, ms} from './util.js';

export class PassList {
  constructor(container, data, {onSelect}) {
    this.data = data;
    this.onSelect = onSelect;
    this.filter = h('input', {type: 'search', class: 'pass-filter', placeholder: 'filter passes (name or regex)',
                              'aria-label': 'filter passes'});
    this.showAllBox = h('input', {type: 'checkbox'});
    this.showAll = h('label', {class: 'toggle'}, this.showAllBox, ' unchanged passes');
    this.table = h('div', {class: 'pass-rows', role: 'listbox', tabindex: '0'});
    const bar = h('div', {class: 'pass-bar'}, this.filter, this.showAll);
    const head = h('div', {class: 'pass-head'},
      h('span', {class: 'c-i'}, '#'), h('span', {class: 'c-name'}, 'pass'), h('span', {class: 'c-d', title: 'depth'}, 'd'),
      h('span', {class: 'c-ms'}, 'ms'), h('span', {class: 'c-ch', title: 'changed'}, 'chg'), h('span', {class: 'c-n'}, '+ − ~'));
    container.append(bar, head, this.table);
    this.opened = new Set();  // folded runs opened by a click, by their first event's position
    this.selected = null;
    this.filter.addEventListener('input', () => this.render());
    this.showAllBox.addEventListener('change', () => this.render());
    this.table.addEventListener('click', (e) => {
      const row = e.target.closest('[data-pass], [data-fold]');
      if (!row) return;
      if (row.dataset.fold !== undefined) { this.opened.add(+row.dataset.fold); this.render(); return; }
      this.onSelect(+row.dataset.pass);
    });
    this.render();
  }

  matcher() {
    const text = this.filter.value.trim();
    if (!text) return null;
    try { const re = new RegExp(text, 'i'); return (name) => re.test(name); }
    catch (_) { const low = text.toLowerCase(); return (name) => name.toLowerCase().includes(low); }
  }

  render() {
    const match = this.matcher();
    const everything = this.showAllBox.checked;
    const rows = [];
    let run = [];
    const flush = () => {
      if (!run.length) return;
      if (run.length === 1 || everything || this.opened.has(run[0])) for (const i of run) rows.push(this.row(i));
      else rows.push(h('div', {class: 'row fold', 'data-fold': run[0]}, `⋯ ${run.length.toLocaleString('en-US')} unchanged pass events`));
      run = [];
    };
    this.data.passes.forEach((p, i) => {
      if (match && !match(p.name)) return;
      if (p.changed !== true && p.error == null) { run.push(i); return; }
      flush();
      rows.push(this.row(i));
    });
    flush();
    if (!rows.length) rows.push(h('div', {class: 'row empty'}, 'no pass matches'));
    const shown = document.createDocumentFragment();  // not spread arguments: a trace may have more rows than a call takes
    for (const row of rows) shown.append(row);
    this.table.replaceChildren(shown);
    this.visible = [...this.table.querySelectorAll('[data-pass]')].map((r) => +r.dataset.pass);
    this.highlight();
  }

  row(i) {
    const p = this.data.passes[i];
    const counts = p.counts ? [h('b', {class: 'plus'}, `+${p.counts[0]}`), ' ', h('b', {class: 'minus'}, `−${p.counts[1]}`), ' ',
                               h('b', {class: 'tilde'}, `~${p.counts[2]}`)] : [];
    const changed = p.error != null ? h('b', {class: 'failed'}, 'failed') : p.changed == null ? '-' : p.changed ? 'yes' : 'no';
    const cls = ['row', p.changed ? 'changed' : 'same', p.graph != null ? 'has-graph' : '', p.span ? 'pipeline' : 'off'];
    const name = h('span', {class: 'c-name'}, p.name);
    name.style.paddingLeft = `${(p.depth - 1) * 10}px`;
    return h('div', {class: cls.join(' '), 'data-pass': i, role: 'option', title: `${p.name} (#${p.i})`},
      h('span', {class: 'c-i'}, p.i), name, h('span', {class: 'c-d'}, p.depth), h('span', {class: 'c-ms'}, ms(p.ms)),
      h('span', {class: 'c-ch'}, changed), h('span', {class: 'c-n'}, counts));
  }

  select(i) {
    this.selected = i;
    if (!this.visible.includes(i)) {
      // A pass hidden by the filter or a fold: show it.
      const p = this.data.passes[i];
      const match = this.matcher();
      if (match && !match(p.name)) this.filter.value = '';
      this.showAllBox.checked = this.showAllBox.checked || p.changed !== true;
      this.render();
    }
    this.highlight();
  }

  highlight() {
    for (const row of this.table.querySelectorAll('.row.sel')) row.classList.remove('sel');
    const row = this.selected != null ? this.table.querySelector(`[data-pass="${this.selected}"]`) : null;
    if (row) {
      row.classList.add('sel');
      row.scrollIntoView({block: 'nearest'});
    }
  }

  // The next (step 1) or previous (-1) pass that has a graph, in the list as shown.
  neighbour(step) {
    const withGraph = this.visible.filter((i) => this.data.passes[i].graph != null);
    if (!withGraph.length) return null;
    const at = withGraph.indexOf(this.selected);
    if (at < 0) return withGraph[step > 0 ? 0 : withGraph.length - 1];
    const next = at + step;
    return next >= 0 && next < withGraph.length ? withGraph[next] : null;
  }
}
