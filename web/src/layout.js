// A layered (Sugiyama-style) layout for data-flow graphs with compound nodes.
//
// Why not dagre or ELK: measured in headless Chromium on this project's graphs, dagre takes
// ~0.8 s for 1,000 nodes and overflows the stack on chains of 2,000 (its recursive DFS), and
// elkjs takes ~1 s for 1,000 and 2.4 s for 2,000 nodes. A pass switch must stay under 200 ms
// on ResNet-50, so this module does the few steps such graphs need, each linear or n log n:
//
//   1. cycles broken by reversing the back edges of a DFS;
//   2. layers by longest path from the inputs, then each node pulled down to just above its
//      first user (a weight sits next to its convolution, not at the top);
//   3. edges longer than one layer get dummy nodes, so that they bend around boxes;
//   4. order in each layer by barycentre sweeps, down and up;
//   5. x by isotonic regression (pool adjacent violators): each node as close as it can be
//      to the mean of its neighbours' x without overlapping, which keeps chains straight.
//
// Compounds (primitive functions) are laid out bottom-up: their children first, then the
// compound as one box of that size in its parent's layout.

const GAP_X = 24;      // between boxes in a layer
const GAP_Y = 34;      // between layers
const DUMMY_W = 8;     // the width a long edge takes in a layer
const PAD = 10;        // inside a compound
const HEADER = 20;     // a compound's title
const MAX_SPAN = 60;   // longer edges are drawn straight, without dummies
const SWEEPS = 4;

// nodes: [{id, w, h, parent}] (parent: an id or null; a node that is some node's parent is a
// compound, whose w and h are ignored); edges: [[from, to, free]] by id. A free edge does not
// place its ends (it is drawn straight between them where the others put them): a diff's
// edge that only the input had, between two nodes the output keeps, would otherwise pull a
// fused function shared by several layers out of its place to every layer that called it.
// Returns {pos: Map id -> {x, y, w, h} (centre, size), routes: [[x, y]...] per edge, width, height}.
export function layoutGraph(nodes, edges) {
  const byId = new Map();
  for (const n of nodes) byId.set(n.id, {...n, kids: []});
  const roots = [];
  for (const n of byId.values()) {
    const p = n.parent != null ? byId.get(n.parent) : null;
    if (p) p.kids.push(n); else roots.push(n);
  }
  const depth = new Map();
  const depthOf = (n) => {
    let d = depth.get(n.id);
    if (d === undefined) {
      const p = n.parent != null ? byId.get(n.parent) : null;
      d = p ? depthOf(p) + 1 : 0;
      depth.set(n.id, d);
    }
    return d;
  };
  // Each edge is laid out in the container that holds both ends: lift its ends to the
  // children of their lowest common ancestor.
  const levelEdges = new Map(); // container id (or null) -> [[u, v, edge index]]
  edges.forEach(([s, t, free], k) => {
    if (free) return;
    let u = byId.get(s), v = byId.get(t);
    if (!u || !v) return;
    while (depthOf(u) > depthOf(v)) u = byId.get(u.parent);
    while (depthOf(v) > depthOf(u)) v = byId.get(v.parent);
    while (u.parent !== v.parent) { u = byId.get(u.parent); v = byId.get(v.parent); }
    if (u === v) return;
    const key = u.parent != null ? u.parent : null;
    if (!levelEdges.has(key)) levelEdges.set(key, []);
    levelEdges.get(key).push([u.id, v.id, k]);
  });
  const rel = new Map();      // id -> centre relative to its container's top-left
  const bends = new Map();    // edge index -> [[x, y] relative to container, container id]
  const place = (container, kids) => {
    for (const k of kids) {
      if (k.kids.length) {
        const inner = place(k.id, k.kids);
        k.w = Math.max(inner.width + 2 * PAD, k.minWidth || 0);
        k.h = inner.height + 2 * PAD + HEADER;
      }
    }
    const result = layoutLevel(kids, levelEdges.get(container) || []);
    let dx = 0, dy = 0;
    if (container != null) {
      // Children sit below the compound's title, centred in its width.
      const w = Math.max(result.width + 2 * PAD, byId.get(container).minWidth || 0);
      dx = (w - result.width) / 2;
      dy = PAD + HEADER;
    }
    for (const [id, p] of result.pos) rel.set(id, {x: p.x + dx, y: p.y + dy});
    for (const [k, pts] of result.bends) bends.set(k, [pts.map(([x, y]) => [x + dx, y + dy]), container]);
    return result;
  };
  const top = place(null, roots);
  // Absolute positions, containers first.
  const pos = new Map();
  const absolute = (n, ox, oy) => {
    const r = rel.get(n.id);
    const p = {x: ox + r.x, y: oy + r.y, w: n.w, h: n.h};
    pos.set(n.id, p);
    for (const k of n.kids) absolute(k, p.x - n.w / 2, p.y - n.h / 2);
  };
  for (const n of roots) absolute(n, 0, 0);
  const routes = edges.map(([s, t], k) => {
    const a = pos.get(s), b = pos.get(t);
    if (!a || !b) return null;
    const pts = [[a.x, a.y + a.h / 2]];
    const bend = bends.get(k);
    if (bend) {
      const [inner, container] = bend;
      let ox = 0, oy = 0;
      if (container != null) { const c = pos.get(container); ox = c.x - c.w / 2; oy = c.y - c.h / 2; }
      for (const [x, y] of inner) pts.push([ox + x, oy + y]);
    }
    pts.push([b.x, b.y - b.h / 2]);
    return pts;
  });
  return {pos, routes, width: top.width, height: top.height};
}

// One container's children: returns {pos: Map id -> {x, y} (centre), bends: Map edge index ->
// [[x, y]] through the dummies, width, height}.
export function layoutLevel(kids, levelEdges) {
  const n = kids.length;
  const index = new Map(kids.map((k, i) => [k.id, i]));
  const succ = Array.from({length: n}, () => []);
  const pred = Array.from({length: n}, () => []);
  const seen = new Set();
  const edgeList = [];
  for (const [u, v, k] of levelEdges) {
    const a = index.get(u), b = index.get(v);
    const key = a * n + b;
    if (seen.has(key)) { edgeList.push([a, b, k, true]); continue; }
    seen.add(key);
    succ[a].push(b); pred[b].push(a);
    edgeList.push([a, b, k, false]);
  }
  reverseBackEdges(n, succ, pred, edgeList);
  const layer = assignLayers(n, succ, pred);
  // Long edges: dummies in the layers between.
  const w = kids.map((k) => k.w), h = kids.map((k) => k.h);
  const nodeLayer = layer.slice();
  const up = pred.map((p) => p.slice()), down = succ.map((s) => s.slice());
  const chains = new Map(); // edge key a*n+b -> dummy ids
  for (let a = 0; a < n; a++) {
    for (const b of succ[a]) {
      const span = layer[b] - layer[a];
      if (span <= 1 || span > MAX_SPAN) continue;
      const ids = [];
      let prev = a;
      for (let l = layer[a] + 1; l < layer[b]; l++) {
        const d = nodeLayer.length;
        nodeLayer.push(l); w.push(DUMMY_W); h.push(0); up.push([prev]); down.push([]);
        down[prev].push(d);
        ids.push(d);
        prev = d;
      }
      down[prev].push(b); up[b].push(prev);
      // the direct link is replaced by the chain
      down[a].splice(down[a].indexOf(b), 1);
      up[b].splice(up[b].indexOf(a), 1);
      chains.set(a * n + b, ids);
    }
  }
  const total = nodeLayer.length;
  // Nodes connected to nothing (the PrimFuncs LowerTE adds) go in rows below the graph.
  const alone = [];
  for (let v = 0; v < n; v++) if (n > 1 && !succ[v].length && !pred[v].length) alone.push(v);
  const isAlone = new Uint8Array(total);
  for (const v of alone) isAlone[v] = 1;
  const layers = [];
  for (let v = 0; v < total; v++) {
    if (isAlone[v]) continue;
    (layers[nodeLayer[v]] || (layers[nodeLayer[v]] = [])).push(v);
  }
  for (let l = 0; l < layers.length; l++) if (!layers[l]) layers[l] = [];
  orderLayers(layers, up, down, total);
  const x = assignX(layers, up, down, w);
  // y: each layer as tall as its tallest box.
  const y = new Array(total).fill(0);
  let cursor = 0;
  for (const row of layers) {
    if (!row.length) continue;
    let tall = 0;
    for (const v of row) tall = Math.max(tall, h[v]);
    for (const v of row) y[v] = cursor + tall / 2;
    cursor += tall + GAP_Y;
  }
  let minX = Infinity, maxX = -Infinity;
  for (let v = 0; v < total; v++) {
    if (!isAlone[v]) { minX = Math.min(minX, x[v] - w[v] / 2); maxX = Math.max(maxX, x[v] + w[v] / 2); }
  }
  if (minX > maxX) { minX = 0; maxX = 0; }
  if (alone.length) {
    const room = Math.max(maxX - minX, 600);
    let left = minX, tall = 0;
    for (const v of alone) {
      if (left > minX && left + w[v] > minX + room) { cursor += tall + GAP_Y; left = minX; tall = 0; }
      x[v] = left + w[v] / 2; y[v] = cursor + h[v] / 2;
      left += w[v] + GAP_X; tall = Math.max(tall, h[v]);
      maxX = Math.max(maxX, left - GAP_X);
    }
    cursor += tall + GAP_Y;
  }
  const pos = new Map();
  for (let v = 0; v < n; v++) pos.set(kids[v].id, {x: x[v] - minX, y: y[v]});
  const bends = new Map();
  for (const [a, b, k, , reversed] of edgeList) {
    const ids = reversed ? chains.get(b * n + a) : chains.get(a * n + b);
    if (!ids) continue;
    const pts = ids.map((d) => [x[d] - minX, y[d]]);
    bends.set(k, reversed ? pts.reverse() : pts);
  }
  return {pos, bends, width: maxX - minX, height: Math.max(0, cursor - GAP_Y)};
}

// Iterative DFS; an edge to a node on the stack is reversed (recorded in edgeList[i][4]).
function reverseBackEdges(n, succ, pred, edgeList) {
  const state = new Uint8Array(n); // 0 new, 1 on stack, 2 done
  const back = new Set();
  for (let s = 0; s < n; s++) {
    if (state[s]) continue;
    const stack = [[s, 0]];
    state[s] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [v, i] = top;
      if (i < succ[v].length) {
        top[1]++;
        const t = succ[v][i];
        if (state[t] === 1) back.add(v * n + t);
        else if (state[t] === 0) { state[t] = 1; stack.push([t, 0]); }
      } else {
        state[v] = 2;
        stack.pop();
      }
    }
  }
  if (!back.size) return;
  for (const key of back) {
    const a = Math.floor(key / n), b = key % n;
    succ[a].splice(succ[a].indexOf(b), 1); pred[b].splice(pred[b].indexOf(a), 1);
    if (!succ[b].includes(a)) { succ[b].push(a); pred[a].push(b); }
  }
  for (const e of edgeList) e[4] = back.has(e[0] * n + e[1]);
}

function assignLayers(n, succ, pred) {
  const layer = new Array(n).fill(0);
  const pending = pred.map((p) => p.length);
  const order = [];
  for (let v = 0; v < n; v++) if (!pending[v]) order.push(v);
  for (let i = 0; i < order.length; i++) {
    const v = order[i];
    for (const s of succ[v]) {
      layer[s] = Math.max(layer[s], layer[v] + 1);
      if (--pending[s] === 0) order.push(s);
    }
  }
  // Then as late as possible: what only feeds one place (a weight, the expand_dims of a
  // constant) sits just above it rather than at the top of the graph.
  for (let i = order.length - 1; i >= 0; i--) {
    const v = order[i];
    if (!succ[v].length) continue;
    let first = Infinity;
    for (const s of succ[v]) first = Math.min(first, layer[s]);
    layer[v] = first - 1;
  }
  return layer;
}

function orderLayers(layers, up, down, total) {
  const rank = new Float64Array(total);
  // Start from a depth-first order, which keeps branches together.
  const seen = new Uint8Array(total);
  const visit = [];
  for (const row of layers) {
    for (const v of row) {
      if (seen[v]) continue;
      const stack = [v];
      while (stack.length) {
        const x = stack.pop();
        if (seen[x]) continue;
        seen[x] = 1;
        visit.push(x);
        for (let i = down[x].length - 1; i >= 0; i--) if (!seen[down[x][i]]) stack.push(down[x][i]);
      }
    }
  }
  visit.forEach((v, i) => { rank[v] = i; });
  for (const row of layers) row.sort((a, b) => rank[a] - rank[b]);
  const renumber = (row) => row.forEach((v, i) => { rank[v] = i; });
  layers.forEach(renumber);
  // One layer has no neighbours to order by; none at all (every box unconnected: a PrimFunc's
  // statements when each holds the next, a function of constants) must not start the sweeps.
  if (layers.length < 2) return;
  const sweep = (from, to, step, nb) => {
    for (let l = from; l !== to; l += step) {
      const row = layers[l];
      const key = new Float64Array(row.length);
      row.forEach((v, i) => {
        const ns = nb[v];
        if (!ns.length) { key[i] = -1; return; }
        let sum = 0;
        for (const u of ns) sum += rank[u];
        key[i] = sum / ns.length;
      });
      // Nodes with no neighbour there keep their place.
      const idx = row.map((v, i) => i);
      let last = 0;
      const keys = idx.map((i) => { if (key[i] >= 0) last = key[i]; return key[i] >= 0 ? key[i] : last; });
      idx.sort((i, j) => keys[i] - keys[j] || i - j);
      const sorted = idx.map((i) => row[i]);
      for (let i = 0; i < row.length; i++) row[i] = sorted[i];
      renumber(row);
    }
  };
  for (let s = 0; s < SWEEPS; s++) {
    sweep(1, layers.length, 1, up);
    sweep(layers.length - 2, -1, -1, down);
  }
  sweep(1, layers.length, 1, up);
}

function assignX(layers, up, down, w) {
  const x = new Float64Array(w.length);
  for (const row of layers) {
    let cursor = 0;
    for (const v of row) { x[v] = cursor + w[v] / 2; cursor += w[v] + GAP_X; }
  }
  const pass = (nb, rows) => {
    for (const row of rows) {
      const want = row.map((v) => {
        const ns = nb[v];
        if (!ns.length) return x[v];
        let sum = 0;
        for (const u of ns) sum += x[u];
        return sum / ns.length;
      });
      placeRow(row, want, w, x);
    }
  };
  const rows = layers.slice(1), back = layers.slice(0, -1).reverse();
  for (let i = 0; i < 3; i++) { pass(up, rows); pass(down, back); }
  pass(up, rows);
  return x;
}

// The positions closest (least squares) to `want` that keep the row's order and gaps:
// isotonic regression of want[i] - offset[i] by pool adjacent violators.
export function placeRow(row, want, w, x) {
  const m = row.length;
  if (!m) return;
  const offset = new Float64Array(m);
  for (let i = 1; i < m; i++) offset[i] = offset[i - 1] + (w[row[i - 1]] + w[row[i]]) / 2 + GAP_X;
  const means = [], sizes = [];
  for (let i = 0; i < m; i++) {
    let mean = want[i] - offset[i], size = 1;
    while (means.length && means[means.length - 1] > mean) {
      const pm = means.pop(), ps = sizes.pop();
      mean = (pm * ps + mean * size) / (ps + size);
      size += ps;
    }
    means.push(mean); sizes.push(size);
  }
  let i = 0;
  for (let b = 0; b < means.length; b++) {
    for (let j = 0; j < sizes[b]; j++, i++) x[row[i]] = means[b] + offset[i];
  }
}
