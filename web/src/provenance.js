// A node's history, followed through the pipeline's steps as the report's data gives them.
// The rules (what a step's node continues, which nodes a hunk's new nodes come from) are
// decided in Python (relayviz_instrument/provenance.py) and shipped as data: each step's
// pass graph pairs the nodes, and `origins` lists each hunk's sources. This only walks them.

export class Provenance {
  constructor(data) {
    this.data = data;
    this.maps = [];
    this.memos = new Map();  // position -> (lineage start -> roots at that position)
    this.below = new Map();  // position -> (node id there -> ids of the last snapshot it became)
  }

  get last() { return this.data.chain.length - 1; }

  step(i) {
    let m = this.maps[i];
    if (m) return m;
    const step = this.data.steps[i];
    const graph = this.data.graphs[step.graph];
    const fwd = new Map(), back = new Map();
    for (let k = 0; k < graph.pairs.length; k += 2) {
      fwd.set(graph.pairs[k], graph.pairs[k + 1]);
      back.set(graph.pairs[k + 1], graph.pairs[k]);
    }
    const created = new Map(), removed = new Map(), matched = new Map();
    graph.hunks.forEach((h, i) => {
      for (const b of h.added) if (!created.has(b)) created.set(b, i);
      for (const a of h.removed) if (!removed.has(a)) removed.set(a, i);
      for (const [, b] of h.matched) if (!matched.has(b)) matched.set(b, i);
    });
    const status = new Map();
    for (const node of graph.nodes) if (node[1] >= 0 && (node[2] === 1 || node[2] === 2)) status.set(node[1], node[2]);
    m = this.maps[i] = {step, graph, fwd, back, created, removed, matched, status};
    return m;
  }

  // The start of a node's lineage, going back no further than position `at`.
  first(pos, id, at = 0) {
    while (pos > at) {
      const before = this.step(pos - 1).back.get(id);
      if (before === undefined) break;
      pos -= 1;
      id = before;
    }
    return [pos, id];
  }

  created(pos, id) {
    const s = this.step(pos - 1);
    const hunk = s.created.get(id);
    const origins = hunk === undefined ? [] : s.step.origins[hunk].map((a) => [pos - 1, a]);
    return {kind: 'created', step: pos - 1, node: [pos, id], hunk, origins};
  }

  // {lineage: [[pos, id]] oldest first, events: [...] oldest first, roots: [ids at position 0]}
  history(pos, id) {
    const lineage = [this.first(pos, id)];
    for (;;) {
      const [p, x] = lineage[lineage.length - 1];
      if (p >= this.last) break;
      const next = this.step(p).fwd.get(x);
      if (next === undefined) break;
      lineage.push([p + 1, next]);
    }
    const events = [];
    if (lineage[0][0] > 0) events.push(this.created(...lineage[0]));
    for (const [p, x] of lineage.slice(1)) {
      const s = this.step(p - 1);
      const status = s.status.get(x);
      if (status) {
        events.push({kind: status === 1 ? 'changed' : 'rewired', step: p - 1, node: [p, x],
                     hunk: s.matched.get(x), fields: s.graph.fields[String(x)] || []});
      }
    }
    const [p, x] = lineage[lineage.length - 1];
    if (p < this.last) {
      const s = this.step(p);
      const hunk = s.removed.get(x);
      const successors = hunk === undefined ? [] : s.graph.hunks[hunk].added.map((b) => [p + 1, b]);
      events.push({kind: 'removed', step: p, node: [p, x], hunk, successors});
    }
    return {lineage, events, roots: this.roots(pos, id)};
  }

  // The ids of the nodes at position `at` (the input module by default) that (pos, id) stems
  // from, sorted.
  roots(pos, id, at = 0) {
    let memo = this.memos.get(at);
    if (!memo) this.memos.set(at, memo = new Map());
    const start = this.first(pos, id, at);
    const key = (k) => k[0] + ':' + k[1];
    if (memo.has(key(start))) return memo.get(key(start));
    const order = [], pending = [start], seen = new Set([key(start)]);
    while (pending.length) {
      const k = pending.pop();
      order.push(k);
      if (k[0] === at) continue;
      for (const o of this.created(...k).origins) {
        const f = this.first(...o, at);
        if (!seen.has(key(f)) && !memo.has(key(f))) { seen.add(key(f)); pending.push(f); }
      }
    }
    order.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const k of order) {
      if (k[0] === at) { memo.set(key(k), [k[1]]); continue; }
      const acc = new Set();
      for (const o of this.created(...k).origins) for (const r of memo.get(key(this.first(...o, at)))) acc.add(r);
      memo.set(key(k), [...acc].sort((a, b) => a - b));
    }
    return memo.get(key(start));
  }

  // The ids of the last snapshot's nodes that stem from (pos, id): what it became, down to the
  // kernels that compute it (as analysis/provenance.py's descendants).
  descendants(pos, id) {
    if (pos === this.last) return [id];
    let found = this.below.get(pos);
    if (!found) {
      found = new Map();
      const count = this.data.snapshots[this.data.chain[this.last]].nodes.length;
      for (let i = 0; i < count; i++) {
        for (const r of this.roots(this.last, i, pos)) {
          if (!found.has(r)) found.set(r, []);
          found.get(r).push(i);
        }
      }
      this.below.set(pos, found);
    }
    return found.get(id) || [];
  }
}
