"""Big graphs: drawings for a list of graphs, cut to ``--max-nodes`` and warned about above a
format's node limit.

Cutting keeps what a reader came for. Each step runs only while the drawing is still too big:

1. (a diff) regions of unchanged nodes that touch no change become one node each;
2. inputs used once (weights, constants) are folded into the node that uses them;
3. functions without changes become one node each (a fused function: its operators);
4. the last nodes are left out, changed ones kept first; one node says how many are missing.
"""

from __future__ import annotations

import warnings
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..diff.components import components
from ..errors import LargeGraphWarning, RelayVizUsageError
from .base import ExportGraph, ExportOptions
from .drawing import Cluster, Drawing, DrawnEdge, DrawnNode, draw

__all__ = ["prepare", "limit"]

_QUIET = ("", "unchanged")


def prepare(graphs: Sequence[ExportGraph], options: ExportOptions, *, fmt: str,
            node_limit: Optional[int] = None) -> List[Drawing]:
    """The drawings of ``graphs``, each cut to ``options.max_nodes``.

    Without ``max_nodes``, a drawing above ``node_limit`` (the format's) is kept whole and a
    :class:`~relayviz_instrument.errors.LargeGraphWarning` says how to cut it.
    """
    if options.max_nodes is not None and options.max_nodes < 1:
        raise RelayVizUsageError(f"--max-nodes must be at least 1, not {options.max_nodes}")
    out = []
    for graph in graphs:
        drawing = draw(graph)
        if options.max_nodes is not None:
            drawing = limit(drawing, options.max_nodes)
        elif node_limit is not None and len(drawing.nodes) > node_limit:
            warnings.warn(LargeGraphWarning(
                f"{graph.name}: {len(drawing.nodes)} nodes to draw, more than the {node_limit} {fmt} draws "
                f"well; pass --max-nodes N (e.g. --max-nodes {node_limit}) to collapse "
                + ("unchanged regions first" if drawing.is_diff else "functions and weights")), stacklevel=2)
        out.append(drawing)
    return out


def limit(drawing: Drawing, max_nodes: int) -> Drawing:
    """``drawing`` cut to at most ``max_nodes`` nodes (see the module's steps)."""
    steps = [_collapse_quiet_regions] if drawing.is_diff else []
    steps += [_fold_inputs, _collapse_clusters, _truncate]
    for step in steps:
        if len(drawing.nodes) <= max_nodes:
            break
        drawing = step(drawing, max_nodes)
    return drawing


def _rebuild(drawing: Drawing, nodes: List[DrawnNode], merged: Dict[str, str], note: str,
             clusters: Optional[Iterable[Cluster]] = None) -> Drawing:
    """``drawing`` with ``nodes``; edges of merged nodes moved to the node that took them in."""
    kept = {n.key for n in nodes}
    seen: Dict[Tuple[str, str], int] = {}
    edges: List[DrawnEdge] = []
    for edge in drawing.edges:
        src, dst = merged.get(edge.src, edge.src), merged.get(edge.dst, edge.dst)
        if src == dst or src not in kept or dst not in kept:
            continue
        at = seen.get((src, dst))
        if at is None:
            seen[(src, dst)] = len(edges)
            edges.append(DrawnEdge(src, dst, edge.port, edge.type, edge.status))
        elif edges[at].status in _QUIET and edge.status not in _QUIET:
            edges[at] = DrawnEdge(src, dst, edge.port, edge.type, edge.status)
    used = {n.cluster for n in nodes}
    cluster_list = list(drawing.clusters if clusters is None else clusters)
    parents = {c.key: c.parent for c in cluster_list}
    for key in list(used):
        while key is not None:
            used.add(key)
            key = parents.get(key)
    return Drawing(drawing.name, tuple(nodes), tuple(edges), tuple(c for c in cluster_list if c.key in used),
                   drawing.is_diff, drawing.notes + (note,))


def _components(keys: Sequence[str], links: Iterable[Tuple[str, str]]) -> List[List[str]]:
    """The connected groups of ``keys`` (``links`` join two keys), each in the order of
    ``keys``, groups in the order of their first key."""
    index = {k: i for i, k in enumerate(keys)}
    ends = np.array([(index[a], index[b]) for a, b in links], dtype=np.int64).reshape(-1, 2)
    groups: Dict[int, List[str]] = {}
    for k, root in zip(keys, components(len(keys), ends[:, 0], ends[:, 1]).tolist()):
        groups.setdefault(root, []).append(k)
    return list(groups.values())


def _collapse_quiet_regions(drawing: Drawing, max_nodes: int) -> Drawing:
    loud: Set[str] = {n.key for n in drawing.nodes if n.status not in _QUIET}
    for edge in drawing.edges:
        if edge.status not in _QUIET:
            loud.update((edge.src, edge.dst))
    near = set(loud)
    for edge in drawing.edges:
        if edge.src in loud or edge.dst in loud:
            near.update((edge.src, edge.dst))  # keep one node of context around each change
    cluster_of = {n.key: n.cluster for n in drawing.nodes}
    quiet = [n.key for n in drawing.nodes if n.key not in near]
    quiet_set = set(quiet)
    links = [(e.src, e.dst) for e in drawing.edges
             if e.src in quiet_set and e.dst in quiet_set and cluster_of[e.src] == cluster_of[e.dst]]
    merged: Dict[str, str] = {}
    collapsed: Dict[str, DrawnNode] = {}
    for group in _components(quiet, links):
        if len(group) < 2:
            continue
        key = f"x{group[0]}"
        collapsed[group[0]] = DrawnNode(key, "Collapsed", f"{len(group)} unchanged nodes", role="collapsed",
                                        cluster=cluster_of[group[0]], status="unchanged", count=len(group))
        merged.update((k, key) for k in group)
    nodes = [collapsed.get(n.key, n) for n in drawing.nodes if n.key not in merged or n.key in collapsed]
    regions = len(collapsed)
    return _rebuild(drawing, nodes, merged,
                    f"{sum(c.count for c in collapsed.values())} unchanged nodes away from the changes "
                    f"collapsed into {regions} node{'s' if regions != 1 else ''}")


def _fold_inputs(drawing: Drawing, max_nodes: int) -> Drawing:
    fed: Set[str] = {e.dst for e in drawing.edges}
    uses: Dict[str, List[DrawnEdge]] = {}
    for edge in drawing.edges:
        uses.setdefault(edge.src, []).append(edge)
    folded: Dict[str, List[str]] = {}
    merged: Dict[str, str] = {}
    for node in drawing.nodes:
        out = uses.get(node.key, [])
        if (node.role in ("const", "param", "input") and node.key not in fed and len(out) == 1
                and node.status in _QUIET and out[0].status in _QUIET):
            user = out[0].dst
            folded.setdefault(user, []).append(f"{node.label} {node.type}".strip())
            merged[node.key] = user
    nodes = []
    for node in drawing.nodes:
        if node.key in merged:
            continue
        extra = folded.get(node.key)
        if extra:
            node = DrawnNode(node.key, node.kind, node.label, node.type, node.role, node.cluster,
                             node.attrs + tuple((f"input {i}", text) for i, text in enumerate(extra)),
                             node.status, node.changes, node.count + len(extra))
        nodes.append(node)
    return _rebuild(drawing, nodes, {}, f"{len(merged)} inputs used once folded into their users")


def _collapse_clusters(drawing: Drawing, max_nodes: int) -> Drawing:
    by_key = {c.key: c for c in drawing.clusters}
    members: Dict[str, List[DrawnNode]] = {}
    for node in drawing.nodes:
        key = node.cluster
        while key is not None:
            members.setdefault(key, []).append(node)
            key = by_key[key].parent
    quiet = {c.key for c in drawing.clusters
             if c.status in _QUIET and all(n.status in _QUIET for n in members.get(c.key, ()))}
    # Collapse the outermost quiet clusters: a quiet cluster inside one is collapsed with it.
    tops = [c for c in drawing.clusters if c.key in quiet and not _inside(by_key, c.parent, quiet)]
    merged: Dict[str, str] = {}
    collapsed: Dict[str, DrawnNode] = {}
    for cluster in tops:
        inner = members.get(cluster.key, [])
        if not inner:
            continue
        key = f"x{cluster.key}"
        out_type = next((n.type for n in reversed(inner) if n.role == "call"), inner[-1].type)
        status = "unchanged" if drawing.is_diff else ""
        collapsed[inner[0].key] = DrawnNode(key, "Collapsed", cluster.label, out_type, "collapsed",
                                            cluster.parent, cluster.attrs, status, (), sum(n.count for n in inner))
        merged.update((n.key, key) for n in inner)
    nodes = [collapsed.get(n.key, n) for n in drawing.nodes if n.key not in merged or n.key in collapsed]
    count = len(collapsed)
    return _rebuild(drawing, nodes, merged, f"{count} function{'s' if count != 1 else ''} "
                    f"{'without changes ' if drawing.is_diff else ''}collapsed into one node each")


def _inside(by_key: Dict[str, Cluster], key: Optional[str], quiet: Set[str]) -> bool:
    while key is not None:
        if key in quiet:
            return True
        key = by_key[key].parent
    return False


def _truncate(drawing: Drawing, max_nodes: int) -> Drawing:
    ranked = sorted(range(len(drawing.nodes)), key=lambda i: (drawing.nodes[i].status in _QUIET, i))
    keep = set(ranked[:max(max_nodes - 1, 0)])
    nodes = [n for i, n in enumerate(drawing.nodes) if i in keep]
    left_out = [n for i, n in enumerate(drawing.nodes) if i not in keep]
    missing = sum(n.count for n in left_out)
    nodes.append(DrawnNode("xrest", "Collapsed", f"{missing} more nodes not drawn (raise --max-nodes)",
                           role="collapsed", status="unchanged" if drawing.is_diff else "", count=missing))
    return _rebuild(drawing, nodes, {}, f"{missing} nodes left out to stay within {max_nodes}")
