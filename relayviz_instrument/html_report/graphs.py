"""The graphs the HTML report draws: a snapshot as boxes and arrows, and a pass as one graph of
its before and after snapshots coloured by their diff. Plain data; no I/O, no HTML.

A snapshot is drawn as the diff reads it (:class:`~relayviz_instrument.diff.graph.CanonicalGraph`):
an ``Op`` is the label of its calls, not a box; a function called from one place (a primitive
Function of FuseOps) is a *compound* holding its body, its parameters stand for the call's
arguments and the call for its body, so arrows run from the arguments into the body. A
global function is a box its body flows into (its parameters do not: a hundred weights would
all point at it).

A Relax or TIR snapshot is drawn as :mod:`~relayviz_instrument.export.dataflow` reads it:
every function is a box holding its bindings (a variable is the value bound to it), a
``call_tir`` names the PrimFunc it runs and links to it (``f``), a fused function called from
one place is a box at that call, a PrimFunc is a box of its statements read from the outer
loop down to the stores, and a statement's box says what TVMScript would
(``for i in 0..56 parallel``, ``T_add[i, j] =``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Set, Tuple

import numpy as np

from ..diff import GraphDiff
from ..diff.changes import describe
from ..diff.components import components
from ..diff.graph import CanonicalGraph
from ..diff.statements import statement_label
from ..export.dataflow import Dataflow, read_dataflow

__all__ = ["snapshot_graph", "pass_graph", "STATUSES"]

#: Fewer unchanged nodes than this are drawn rather than collapsed into a region.
MIN_REGION = 3

#: Node statuses in a pass graph, in the order the payload numbers them.
STATUSES = ("unchanged", "changed", "rewired", "added", "removed")


def snapshot_graph(graph: CanonicalGraph) -> Dict[str, Any]:
    """A snapshot as the report draws it: one entry per node id, in the document's order.

    Each entry holds ``k`` (kind), ``n`` (operator or kind), ``d`` (detail), ``t`` (type),
    and for drawn nodes ``in`` (the ids it reads) and ``p`` (the compound it sits in); a
    compound has ``c: 1``; a node that is not drawn (an ``Op``, an inlined call or parameter)
    has ``h`` (the id of the node drawn in its place, or -1). A call that runs a function or
    PrimFunc of the module has ``f``: that function's id.
    """
    flow = read_dataflow({"nodes": [graph.nodes[graph.rank_of[i]] for i in range(graph.size)],
                          "functions": {name: graph.doc_id[r] for name, r in graph.functions.items()}})
    if flow.active:
        return {"nodes": _dataflow_graph(graph, flow)}
    size = graph.size
    parent = [-1] * size
    inlined = sorted(graph.inlined, key=lambda f: -len(graph.scope(f)))  # outer functions first
    for f in inlined:
        for r in graph.scope(f):
            parent[r] = f  # inner functions come later and claim their own nodes
    nodes: List[Dict[str, Any]] = [{}] * size
    for r in range(size):
        info = describe(graph, r)
        entry: Dict[str, Any] = {"k": info.kind, "n": info.name}
        if info.detail:
            entry["d"] = info.detail
        if info.type:
            entry["t"] = info.type
        if r in graph.inlined:
            entry["c"] = 1
            ops = [graph.op_name(x) for x in sorted(graph.scope(r), key=graph.position.__getitem__)]
            entry["d"] = "+".join(dict.fromkeys(op for op in ops if op)) or entry.get("d", "")
        elif graph.kind[r] == "Op" or graph.canon[r] != r:
            target = graph.canon[r]
            entry["h"] = graph.doc_id[target] if target != r and graph.kind[target] != "Op" else -1
        else:
            ins = graph.inputs[r][:1] if graph.kind[r] == "Function" else graph.inputs[r]
            entry["in"] = [graph.doc_id[x] for x in ins]
        if parent[r] >= 0:
            entry["p"] = graph.doc_id[parent[r]]
        nodes[graph.doc_id[r]] = entry
    return {"nodes": nodes}


def _dataflow_graph(graph: CanonicalGraph, flow: Dataflow) -> List[Dict[str, Any]]:
    """The entries of a Relax or TIR snapshot (see :func:`snapshot_graph`), by document id."""
    names = {graph.doc_id[r]: name for name, r in graph.functions.items()}
    boxes = set(flow.boxes)
    nodes: List[Dict[str, Any]] = []
    for i in range(graph.size):
        r = graph.rank_of[i]
        node, info = graph.nodes[r], describe(graph, r)
        entry: Dict[str, Any] = {"k": info.kind, "n": info.name}
        if info.detail:
            entry["d"] = info.detail
        if info.type:
            entry["t"] = info.type
        label = statement_label(info.kind, node)
        if label is not None:
            entry["n"] = label + (" " + ", ".join(flow.constants[i]) if i in flow.constants else "")
            entry.pop("d", None)
        elif i in flow.callee_name:
            entry["d"] = "@" + flow.callee_name[i]
        elif i in flow.constants:
            entry["d"] = ", ".join(flow.constants[i])
        if i in flow.stand_in:
            entry["h"] = flow.resolve(i)
        elif i in boxes:
            entry["c"] = 1
            entry["d"] = "@" + names[i] if i in names else entry.get("d", "")
        else:
            entry["in"] = flow.inputs(i, node)
        if i in flow.callee:
            entry["f"] = flow.callee[i]
        if i in flow.owner:
            entry["p"] = flow.owner[i]
        nodes.append(entry)
    return nodes


def _drawn(entry: Mapping[str, Any]) -> bool:
    return "h" not in entry


def pass_graph(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]],
               diff: GraphDiff) -> Dict[str, Any]:
    """One graph of a pass: the after snapshot's drawn nodes and the before snapshot's that
    are gone, coloured by ``diff``. ``before`` and ``after`` are :func:`snapshot_graph` nodes.

    Returns ``nodes`` (``[before id or -1, after id or -1, status, parent, region]`` each;
    status indexes :data:`STATUSES`, parent a node of this graph or -1), ``edges``
    (``[from, to, side]``: 0 in both snapshots, 1 only before, 2 only after), ``hunks`` (the
    graph nodes of each of the diff's hunks) and ``regions``: for each region of unchanged
    nodes that a big graph collapses, the number of nodes it holds (``region`` is -1 for a
    node always shown).
    """
    status_of_after: Dict[int, int] = {}
    for m in diff.changed:
        status_of_after[m.after] = 1
    for m in diff.rewired:
        status_of_after[m.after] = 2
    nodes: List[List[int]] = []
    of_before: Dict[int, int] = {}
    of_after: Dict[int, int] = {}
    for b, entry in enumerate(after):
        if _drawn(entry):
            of_after[b] = len(nodes)
            nodes.append([-1, b, status_of_after.get(b, 0), -1, -1])
    back = {b: a for a, b in diff.mapping.items()}
    for b, g in of_after.items():
        a = back.get(b)
        if a is not None and _drawn(before[a]):
            of_before[a] = g
            nodes[g][0] = a
        elif a is None:
            nodes[g][2] = 3
    for a, entry in enumerate(before):
        if _drawn(entry) and a not in of_before:
            of_before[a] = len(nodes)
            nodes.append([a, -1, 4 if a not in diff.mapping else 0, -1, -1])
    for node in nodes:
        a, b = node[0], node[1]
        p = after[b].get("p", -1) if b >= 0 else -1
        if p >= 0:
            node[3] = of_after.get(p, -1)
        elif a >= 0 and b < 0 and before[a].get("p", -1) >= 0:
            node[3] = of_before.get(before[a]["p"], -1)
    sides: Dict[Tuple[int, int], int] = {}
    for side, entries, index in ((1, before, of_before), (2, after, of_after)):
        for x, entry in enumerate(entries):
            if x not in index:
                continue
            v = index[x]
            for y in entry.get("in", ()):
                u = index.get(y)
                if u is not None and u != v:
                    sides[(u, v)] = sides.get((u, v), 0) | side
    edges = [[u, v, 0 if s == 3 else s] for (u, v), s in sorted(sides.items())]
    hunks = []
    for hunk in diff.hunks:
        members = [of_before[a] for a in hunk.removed if a in of_before]
        members += [of_after[b] for b in hunk.added if b in of_after]
        for a, b in hunk.matched:
            shown = of_after.get(b, of_before.get(a))
            if shown is not None:
                members.append(shown)
        hunks.append(sorted(set(members)))
    regions = _regions(nodes, edges, {g for members in hunks for g in members})
    return {"nodes": nodes, "edges": edges, "hunks": hunks, "regions": regions}


def _regions(nodes: List[List[int]], edges: Sequence[Sequence[int]], in_hunks: Set[int]) -> List[int]:
    """Group the unchanged nodes far from every change into regions; set each node's region.

    A node is kept in view when it, or a node inside it, changed, belongs to a hunk, or is next
    to one that did. The others are grouped, among the nodes of one compound, into connected
    regions (a compound with nothing kept inside goes whole into its parent's region); regions
    of fewer than :data:`MIN_REGION` nodes are drawn.
    """
    n = len(nodes)
    parent = [node[3] for node in nodes]
    interesting = [node[2] != 0 or g in in_hunks for g, node in enumerate(nodes)]
    neighbours: List[List[int]] = [[] for _ in range(n)]
    for u, v, _ in edges:
        neighbours[u].append(v)
        neighbours[v].append(u)
    keep = list(interesting)
    for g in range(n):
        if interesting[g]:
            for x in neighbours[g]:
                keep[x] = True
    for g in range(n):  # a kept node keeps the compounds around it
        if keep[g]:
            p = parent[g]
            while p >= 0 and not keep[p]:
                keep[p] = True
                p = parent[p]

    def top(g: int) -> int:
        """The outermost compound around ``g`` that is not kept (``g`` itself if none)."""
        best, p = g, parent[g]
        while p >= 0:
            if not keep[p]:
                best = p
            p = parent[p]
        return best

    rep = [top(g) if not keep[g] else g for g in range(n)]
    linked = [(rep[u], rep[v]) for u, v, _ in edges]
    linked = [(a, b) for a, b in linked if a != b and not keep[a] and not keep[b] and parent[a] == parent[b]]
    region = components(n, np.array([a for a, _ in linked], dtype=np.int64),
                        np.array([b for _, b in linked], dtype=np.int64)).tolist()
    members: Dict[int, List[int]] = {}
    for g in range(n):
        if not keep[g]:
            members.setdefault(region[rep[g]], []).append(g)
    sizes: List[int] = []
    for group in members.values():  # in the order of their first node
        if len(group) < MIN_REGION:
            continue  # a placeholder would hide as much as it shows
        for g in group:
            nodes[g][4] = len(sizes)
        sizes.append(len(group))
    return sizes

