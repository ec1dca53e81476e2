// The pass list: every pass event, filterable by name, runs of unchanged events folded.

import {el, esc, ms} from './util.js';

export class PassList {
  constructor(container, data, {onSelect}) {
    this.data = data;
    this.onSelect = onSelect;
    this.filter = el('input', {type: 'search', class: 'pass-filter', placeholder: 'filter passes (name or regex)',
                               'aria-label': 'filter passes'});
    this.showAll = el('label', {class: 'toggle'}, '<input type="checkbox"> unchanged passes');
    this.table = el('div', {class: 'pass-rows', role: 'listbox', tabindex: '0'});
    const bar = el('div', {class: 'pass-bar'});
    bar.append(this.filter, this.showAll);
    container.append(bar, el('div', {class: 'pass-head'},
      '<span class="c-i">#</span><span class="c-name">pass</span><span class="c-d" title="depth">d</span>' +
      '<span class="c-ms">ms</span><span class="c-ch" title="changed">chg</span><span class="c-n">+ − ~</span>'), this.table);
    this.opened = new Set();  // folded runs opened by a click, by their first event's position
    this.selected = null;
    this.filter.addEventListener('input', () => this.render());
    this.showAll.querySelector('input').addEventListener('change', () => this.render());
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
    const everything = this.showAll.querySelector('input').checked;
    const rows = [];
    let run = [];
    const flush = () => {
      if (!run.length) return;
      if (run.length === 1 || everything || this.opened.has(run[0])) for (const i of run) rows.push(this.row(i));
      else rows.push(`<div class="row fold" data-fold="${run[0]}">⋯ ${run.length.toLocaleString('en-US')} unchanged pass events</div>`);
      run = [];
    };
    this.data.passes.forEach((p, i) => {
      if (match && !match(p.name)) return;
      if (p.changed !== true && p.error == null) { run.push(i); return; }
      flush();
      rows.push(this.row(i));
    });
    flush();
    this.table.innerHTML = rows.join('') || '<div class="row empty">no pass matches</div>';
    this.visible = [...this.table.querySelectorAll('[data-pass]')].map((r) => +r.dataset.pass);
    this.highlight();
  }

  row(i) {
    const p = this.data.passes[i];
    const counts = p.counts ? `<b class="plus">+${p.counts[0]}</b> <b class="minus">−${p.counts[1]}</b> <b class="tilde">~${p.counts[2]}</b>` : '';
    const changed = p.error != null ? '<b class="failed">failed</b>' : p.changed == null ? '-' : p.changed ? 'yes' : 'no';
    const cls = ['row', p.changed ? 'changed' : 'same', p.graph != null ? 'has-graph' : '', p.span ? 'pipeline' : 'off'];
    return `<div class="${cls.join(' ')}" data-pass="${i}" role="option" title="${esc(p.name)} (#${p.i})">` +
      `<span class="c-i">${p.i}</span><span class="c-name" style="padding-left:${(p.depth - 1) * 10}px">${esc(p.name)}</span>` +
      `<span class="c-d">${p.depth}</span><span class="c-ms">${ms(p.ms)}</span><span class="c-ch">${changed}</span>` +
      `<span class="c-n">${counts}</span></div>`;
  }

  select(i) {
    this.selected = i;
    if (!this.visible.includes(i)) {
      // A pass hidden by the filter or a fold: show it.
      const p = this.data.passes[i];
      const match = this.matcher();
      if (match && !match(p.name)) this.filter.value = '';
      this.showAll.querySelector('input').checked = this.showAll.querySelector('input').checked || p.changed !== true;
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
