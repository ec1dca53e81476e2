"""A graph as the drawing exporters draw it: dataflow nodes, edges and clusters, built once
from a RelayViz document (or from a pass's two documents and their diff) and mapped by each
exporter (dot, tensorboard, model-explorer) to its own format.

How a document becomes a picture (``docs/exporters.md`` has the table):

- every node is drawn except ``Op``, ``GlobalVar`` and ``Constructor`` nodes used only as a
  callee (the call shows their name and attributes) and ``Function`` nodes;
- a ``Function`` other than the top-level ``main`` (or ``root``) is a *cluster* holding its
  parameters and body; a call of it is drawn inside the cluster as the function's output:
  each argument flows into the matching parameter and the body's result into the call, so a
  collapsed cluster reads as one operator;
- an edge runs from what a node reads to the node, in field order (``port``);
- with a diff, the drawing is the *after* graph plus the removed nodes of the *before* graph
  (in the clusters they were in), every node with its status, and the edges that a change
  created (``added``) or broke (``removed``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import orjson

from ..diff import GraphDiff
from ..diff.statements import statement_label
from ..format import Document, labelled_references
from .base import ExportGraph
from .dataflow import read_dataflow

__all__ = ["DrawnNode", "DrawnEdge", "Cluster", "Drawing", "STATUSES", "STATUS_COLOURS", "draw", "type_text"]

#: A node's or edge's status in a diff drawing ("" outside a diff), in the order a legend lists them.
STATUSES = ("added", "removed", "changed", "rewired", "unchanged")
#: Each status's (fill, line) colour, the same in every format: green, red, amber, blue, white.
STATUS_COLOURS = {
    "added": ("#c8e6c9", "#2e7d32"),
    "removed": ("#ffcdd2", "#c62828"),
    "changed": ("#ffe0b2", "#ef6c00"),
    "rewired": ("#bbdefb", "#1565c0"),
    "unchanged": ("#ffffff", "#90a4ae"),
}
#: Kinds drawn as part of the call that calls them, unless something else uses them as a value.
_CALLEE_KINDS = frozenset({"Op", "GlobalVar", "Constructor"})
#: Longest cluster name made from the operators of a fused function.
_NAME_LIMIT = 48
#: Longest label of a TIR statement (a long index expression is cut; the node's fields hold it whole).
_STATEMENT_LIMIT = 60


@dataclass(frozen=True)
class DrawnNode:
    """One node of a drawing.

    ``key`` is unique in the drawing (``n<id>`` for a node of the drawn document, ``r<id>``
    for a node a diff removed from the before document, ``x<n>`` for a collapsed region);
    ``label`` says what it is (the operator, ``%name`` of a variable, ``const``...), ``type``
    its output type in short form, ``role`` how to draw it (``op``, ``input``, ``param``,
    ``const``, ``tuple``, ``call``, ``other``, ``collapsed``), ``cluster`` the key of the
    innermost cluster holding it. ``status`` is its status in a diff (:data:`STATUSES`), and
    ``changes`` lists the fields a ``changed`` node changed. ``count`` is how many nodes a
    collapsed node stands for. ``outputs`` holds ``(dtype, shape)`` of each tensor output.
    """

    key: str
    kind: str
    label: str
    type: str = ""
    role: str = "other"
    cluster: Optional[str] = None
    attrs: Tuple[Tuple[str, str], ...] = ()
    status: str = ""
    changes: Tuple[str, ...] = ()
    count: int = 1
    outputs: Tuple[Tuple[str, Tuple[Any, ...]], ...] = ()


@dataclass(frozen=True)
class DrawnEdge:
    """Data flowing from ``src`` into input ``port`` of ``dst``; ``type`` is what flows."""

    src: str
    dst: str
    port: int = 0
    type: str = ""
    status: str = ""


@dataclass(frozen=True)
class Cluster:
    """A function drawn as a group: ``name`` is unique among its siblings (a path segment),
    ``label`` what a picture shows, ``kind`` one of ``primitive``, ``composite``, ``global``,
    ``function``; ``parent`` the enclosing cluster's key."""

    key: str
    name: str
    label: str
    kind: str = "function"
    parent: Optional[str] = None
    status: str = ""
    attrs: Tuple[Tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Drawing:
    """One graph ready to draw: nodes, edges and clusters in a deterministic order.

    ``is_diff`` is True when statuses are set; ``notes`` say what a size limit collapsed.
    """

    name: str
    nodes: Tuple[DrawnNode, ...]
    edges: Tuple[DrawnEdge, ...]
    clusters: Tuple[Cluster, ...] = ()
    is_diff: bool = False
    notes: Tuple[str, ...] = ()
    _paths: Dict[str, Tuple[str, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def cluster_path(self, key: Optional[str]) -> Tuple[str, ...]:
        """The names of the clusters from the outermost to ``key`` (empty for the top level)."""
        if key is None:
            return ()
        if not self._paths:
            by_key = {c.key: c for c in self.clusters}
            for c in self.clusters:
                names: List[str] = []
                cur: Optional[Cluster] = c
                while cur is not None:
                    names.append(cur.name)
                    cur = by_key.get(cur.parent) if cur.parent is not None else None
                self._paths[c.key] = tuple(reversed(names))
        return self._paths[key]

    def status_counts(self) -> Dict[str, int]:
        """How many nodes carry each status (collapsed nodes count for what they stand for)."""
        counts: Dict[str, int] = {}
        for node in self.nodes:
            if node.status:
                counts[node.status] = counts.get(node.status, 0) + node.count
        return counts


def type_text(ty: Any) -> str:
    """A type in the short form the pictures use: ``float32[1,64,56,56]``, ``(int64[], float32[3])``."""
    if not isinstance(ty, dict):
        return ""
    kind = ty.get("kind")
    if kind is None:
        return f"{ty.get('dtype', '?')}[{','.join(str(d) for d in ty.get('shape') or ())}]"
    if kind == "tuple":
        return "(" + ", ".join(type_text(f) for f in ty.get("fields", ())) + ")"
    if kind == "adt":
        return str(ty.get("name", "adt"))
    if kind == "typevar":
        return str(ty.get("name", ""))
    return str(kind)


def draw(graph: ExportGraph) -> Drawing:
    """The drawing of ``graph``: its document, or, when it carries a diff, the after document
    with the before document's removed nodes, every node coloured by its status."""
    after = _Layout(graph.document)
    if graph.diff is None or graph.before is None:
        nodes = tuple(after.node(i, f"n{i}", after.cluster_key(i, "c")) for i in after.drawn)
        edges = tuple(DrawnEdge(f"n{s}", f"n{d}", p, after.type_of(s)) for s, d, p in after.edges)
        clusters = tuple(after.cluster(f, f"c{f}", "c") for f in after.cluster_order)
        return Drawing(graph.name, nodes, edges, clusters)
    return _DiffDrawing(graph.name, _Layout(graph.before), after, graph.diff).build()


class _Layout:
    """One document read as a dataflow graph: which nodes are drawn, who owns them, edges."""

    def __init__(self, doc: Document) -> None:
        self.nodes: Sequence[Mapping[str, Any]] = doc["nodes"]
        nodes = self.nodes
        self.kind = [n.get("node_kind", "?") for n in nodes]
        kind = self.kind
        functions: Mapping[str, int] = doc.get("functions") or {}
        self.top: Optional[int] = functions.get("main")
        if self.top is None and len(functions) == 1:
            self.top = next(iter(functions.values()))
        self.global_name = {fid: name for name, fid in functions.items()}

        value_used: Set[int] = set()
        self.callers: Dict[int, List[int]] = {}
        for i, node in enumerate(nodes):
            for fld, _, target in labelled_references(node):
                if kind[i] == "Call" and fld == "op":
                    if kind[target] == "Function":
                        self.callers.setdefault(target, []).append(i)
                else:
                    value_used.add(target)
        self.hidden = [k == "Function" or (k in _CALLEE_KINDS and i not in value_used) for i, k in enumerate(kind)]
        self.owner: List[Optional[int]] = [None] * len(nodes)
        self.cluster_order: List[int] = []
        self.flow = read_dataflow(doc)
        if self.flow.active:
            self._read_dataflow()
        else:
            self._assign_owners(functions, doc.get("root"))
        self.drawn = [i for i in range(len(nodes)) if not self.hidden[i]]
        self.edges = self._edges() if not self.flow.active else self._dataflow_edges()
        self._names = self._cluster_names()

    # -- ownership --------------------------------------------------------------------------

    def _assign_owners(self, functions: Mapping[str, int], root: Optional[int]) -> None:
        seen = [False] * len(self.nodes)
        starts: List[Tuple[int, Optional[int]]] = []
        if self.top is not None:
            starts.append((self.top, None))
        starts += [(functions[name], None) for name in sorted(functions) if functions[name] != self.top]
        if root is not None:
            starts.append((root, None))
        # Documents without functions or root (RelayViz 1.0) start from the nodes nothing uses.
        starts += [(i, None) for i in range(len(self.nodes) - 1, -1, -1)]
        for start, owner in starts:
            if seen[start]:
                continue
            stack = [(start, owner)]
            while stack:
                i, own = stack.pop()
                if seen[i]:
                    continue
                seen[i] = True
                self.owner[i] = own
                node = self.nodes[i]
                inner = own
                if self.kind[i] == "Function" and i != self.top:
                    self.cluster_order.append(i)
                    inner = i
                refs = [t for _, _, t in labelled_references(node)]
                stack.extend((t, inner) for t in reversed(refs))
        for f, calls in self.callers.items():
            if len(calls) == 1 and f != self.top:
                self.owner[calls[0]] = f  # the call is the function's output, drawn inside it

    def _read_dataflow(self) -> None:
        """A Relax or TIR document as :func:`~relayviz_instrument.export.dataflow.read_dataflow`
        reads it: its functions and PrimFuncs are clusters of their bindings or statements
        (``main`` is the top level), bindings and the variables they bind are not drawn."""
        flow, boxes = self.flow, set(self.flow.boxes)
        self.hidden = [i in flow.stand_in or i in boxes or k == "Function" for i, k in enumerate(self.kind)]

        def owner(i: int) -> Optional[int]:
            o = flow.owner.get(i)
            return None if o is None or o == self.top else o

        self.owner = [owner(i) for i in range(len(self.nodes))]

        def depth(f: int) -> int:
            d, o = 0, self.owner[f]
            while o is not None and d <= len(boxes):
                d, o = d + 1, self.owner[o]
            return d

        self.cluster_order = sorted((f for f in boxes if f != self.top), key=lambda f: (depth(f), f))

    def _dataflow_edges(self) -> List[Tuple[int, int, int]]:
        out: List[Tuple[int, int, int]] = []
        for i in self.drawn:
            sources = [t for t in self.flow.inputs(i, self.nodes[i]) if not self.hidden[t]]
            out.extend((t, i, port) for port, t in enumerate(sources))
        return out

    # -- edges --------------------------------------------------------------------------------

    def source(self, t: int) -> Optional[int]:
        """The drawn node whose value a reference to ``t`` reads (a function's result for a function)."""
        seen = 0
        while self.kind[t] == "Function":
            t = self.nodes[t]["body"]
            seen += 1
            if seen > len(self.nodes):
                return None
        return None if self.hidden[t] else t

    def _edges(self) -> List[Tuple[int, int, int]]:
        out: List[Tuple[int, int, int]] = []
        kind, nodes = self.kind, self.nodes

        def add(t: int, dst: int, port: int) -> None:
            src = self.source(t)
            if src is not None:
                out.append((src, dst, port))

        for i in self.drawn:
            node = nodes[i]
            if kind[i] == "Call":
                op, args = node["op"], node["args"]
                if kind[op] == "Function":
                    params = nodes[op]["params"]
                    for a, p in zip(args, params):
                        add(a, p, 0)
                    for port, a in enumerate(args[len(params):], start=1):
                        add(a, i, port)
                    add(op, i, 0)
                    continue
                first = 0
                if not self.hidden[op]:
                    add(op, i, 0)
                    first = 1
                for port, a in enumerate(args, start=first):
                    add(a, i, port)
                continue
            for port, (_, _, t) in enumerate(labelled_references(node)):
                add(t, i, port)
        return out

    # -- what each node shows -----------------------------------------------------------------

    def type_obj(self, i: int) -> Any:
        node, kind = self.nodes[i], self.kind[i]
        if kind == "Var" and "dtype" in node:
            return {"dtype": node["dtype"], "shape": node.get("shape", [])}
        if kind == "Const":
            value = node.get("value")
            shape = value.get("array_shape", []) if isinstance(value, dict) else []
            return {"dtype": node.get("dtype"), "shape": shape}
        return node.get("type")

    def type_of(self, i: int) -> str:
        return type_text(self.type_obj(i))

    def node(self, i: int, key: str, cluster: Optional[str], status: str = "",
             changes: Tuple[str, ...] = ()) -> DrawnNode:
        node, kind = self.nodes[i], self.kind[i]
        attrs: Dict[str, Any] = {}
        role, label = "other", kind
        if kind == "Call":
            callee = node["op"]
            ckind = self.kind[callee]
            attrs.update(node.get("attrs") or {})
            if ckind == "Op" and self.hidden[callee]:
                role, label = "op", str(self.nodes[callee].get("name"))
                attrs.update(self.nodes[callee].get("attrs") or {})
                if i in self.flow.callee_name:  # call_tir: the PrimFunc it runs
                    label += " @" + self.flow.callee_name[i]
                    attrs["calls"] = "@" + self.flow.callee_name[i]
            elif ckind == "Function":
                # Inside its function's cluster the call needs no name; elsewhere it does.
                name = "" if self.owner[i] == callee else " " + self._names.get(callee, ("fn", ""))[0]
                role, label = "call", "call" + name
            elif ckind in ("GlobalVar", "Constructor") and self.hidden[callee]:
                role, label = "call", "call @" + str(self.nodes[callee].get("name"))
            else:
                role, label = "call", "call"
            if "graph" in node:
                attrs.update({f"graph.{k}": v for k, v in node["graph"].items() if k != "node"})
        elif kind == "Var":
            role = "param" if self.owner[i] is not None else "input"
            label = "%" + str(node.get("name"))
            if "virtual_device" in node:
                attrs["virtual_device"] = node["virtual_device"]
        elif kind == "Const":
            role, label = "const", "const"
            value = node.get("value")
            if isinstance(value, dict) and "digest" in value:
                attrs["digest"] = value["digest"]
            else:
                attrs["value"] = value.get("array_value") if isinstance(value, dict) else value
        elif kind == "Tuple":
            role, label = "tuple", "tuple"
        elif kind == "TupleGetItem":
            role, label = "tuple", f"[{node.get('index')}]"
        elif kind in ("GlobalVar", "PrimFunc", "Constructor", "Op"):
            label = ("@" if kind != "Op" else "") + str(node.get("name"))
            attrs.update(node.get("attrs") or {})
        elif kind == "Opaque":
            label = str(node.get("type_key"))
        else:
            said = statement_label(kind, node, _STATEMENT_LIMIT)  # a TIR loop, store, load, allocation...
            label = said if said is not None else kind.lower() if kind in ("Let", "If", "Match") else kind
        ty = self.type_obj(i)
        return DrawnNode(key=key, kind=kind, label=label, type=type_text(ty), role=role, cluster=cluster,
                         attrs=_attr_items(attrs), status=status, changes=changes, outputs=_tensors(ty))

    # -- clusters -------------------------------------------------------------------------------

    def cluster_key(self, i: int, prefix: str) -> Optional[str]:
        owner = self.owner[i]
        return None if owner is None else f"{prefix}{owner}"

    def _cluster_names(self) -> Dict[int, Tuple[str, str]]:
        """function id -> (name unique among its siblings, kind)."""
        ops: Dict[int, List[str]] = {}
        for i in self.drawn:
            owner = self.owner[i]
            if owner is not None and self.kind[i] == "Call":
                callee = self.nodes[i]["op"]
                if self.kind[callee] == "Op":
                    ops.setdefault(owner, []).append(str(self.nodes[callee].get("name")))
        names: Dict[int, Tuple[str, str]] = {}
        used: Dict[Tuple[Optional[int], str], int] = {}
        for f in self.cluster_order:
            attrs = self.nodes[f].get("attrs") or {}
            if f in self.global_name:
                base, kind = self.global_name[f], "global"
            elif attrs.get("Composite"):
                base, kind = str(attrs["Composite"]), "composite"
            elif attrs.get("Primitive"):
                base = "fused_" + "_".join(ops.get(f, ["fn"])).replace(".", "_")
                base, kind = base[:_NAME_LIMIT].rstrip("_"), "primitive"
            else:
                base, kind = "fn", "function"
            base = base.replace("/", "_")
            parent = self.owner[f]
            n = used.get((parent, base), 0)
            used[(parent, base)] = n + 1
            names[f] = (base if n == 0 else f"{base}_{n}", kind)
        return names

    def cluster(self, f: int, key: str, prefix: str, status: str = "") -> Cluster:
        name, kind = self._names[f]
        attrs = {k: v for k, v in (self.nodes[f].get("attrs") or {}).items()}
        flags = [k if v in (1, True) else f"{k}={v}" for k, v in sorted(attrs.items())
                 if k in ("Primitive", "Composite", "Compiler", "global_symbol")]
        label = name + (f" ({', '.join(flags)})" if flags else "")
        return Cluster(key=key, name=name, label=label, kind=kind, parent=self.cluster_key(f, prefix),
                       status=status, attrs=_attr_items(attrs))


def _tensors(ty: Any) -> Tuple[Tuple[str, Tuple[Any, ...]], ...]:
    """``(dtype, shape)`` of each tensor in a type: one for a tensor, each field's for a tuple."""
    if not isinstance(ty, dict):
        return ()
    if ty.get("kind") is None:
        return ((str(ty.get("dtype", "")), tuple(ty.get("shape") or ())),)
    if ty.get("kind") == "tuple":
        return tuple(t for field in ty.get("fields", ()) for t in _tensors(field))
    return ()


def _attr_items(attrs: Mapping[str, Any]) -> Tuple[Tuple[str, str], ...]:
    return tuple((k, _text(v)) for k, v in sorted(attrs.items()))


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


class _DiffDrawing:
    """The after graph with the before graph's removed nodes, coloured by ``diff``."""

    def __init__(self, name: str, before: _Layout, after: _Layout, diff: GraphDiff) -> None:
        self.name, self.before, self.after, self.diff = name, before, after, diff
        self.status: Dict[int, str] = {b: "added" for b in diff.added}
        self.changes: Dict[int, Tuple[str, ...]] = {}
        for match in diff.changed:
            self.status[match.after] = "changed"
            self.changes[match.after] = tuple(f"{c.field}: {_text(c.before)} -> {_text(c.after)}"
                                              for c in match.fields)
        for match in diff.rewired:
            self.status[match.after] = "rewired"
        self.removed = set(diff.removed)
        self.clusters: Dict[str, Cluster] = {}

    def after_cluster(self, f: Optional[int]) -> Optional[str]:
        return None if f is None else f"c{f}"

    def before_cluster(self, f: Optional[int]) -> Optional[str]:
        """Where a removed node of the before graph goes: its function's counterpart, if it
        survived as a cluster, else that function drawn as a removed cluster."""
        if f is None:
            return None
        mapped = self.diff.mapping.get(f)
        if mapped is not None and mapped in self.after._names:
            return f"c{mapped}"
        key = f"rc{f}"
        if key not in self.clusters:
            parent = self.before_cluster(self.before.owner[f])
            base = self.before.cluster(f, key, "rc", "removed")
            self.clusters[key] = Cluster(key, base.name + "_removed", base.label, base.kind, parent, "removed",
                                         base.attrs)
        return key

    def build(self) -> Drawing:
        after, before, diff = self.after, self.before, self.diff
        status = self.status
        nodes = [after.node(i, f"n{i}", self.after_cluster(after.owner[i]), status.get(i, "unchanged"),
                            self.changes.get(i, ())) for i in after.drawn]
        removed_drawn = [b for b in before.drawn if b in self.removed]
        nodes += [before.node(b, f"r{b}", self.before_cluster(before.owner[b]), "removed") for b in removed_drawn]

        def before_key(b: int) -> Optional[str]:
            if b in self.removed:
                return f"r{b}" if not before.hidden[b] else None
            mapped = diff.mapping.get(b)
            return f"n{mapped}" if mapped is not None and not after.hidden[mapped] else None

        after_pairs = {(s, d) for s, d, _ in after.edges}
        before_pairs = set()
        edges: List[DrawnEdge] = []
        for s, d, p in before.edges:
            ks, kd = before_key(s), before_key(d)
            if ks is None or kd is None:
                continue
            before_pairs.add((ks, kd))
            if ks[0] == "n" and kd[0] == "n" and (int(ks[1:]), int(kd[1:])) in after_pairs:
                continue
            touches_removed = ks[0] == "r" or kd[0] == "r"
            if touches_removed or status.get(int(kd[1:])) in ("rewired", "changed"):
                edges.append(DrawnEdge(ks, kd, p, before.type_of(s), "removed"))
        after_edges = []
        for s, d, p in after.edges:
            ks, kd = f"n{s}", f"n{d}"
            new = (ks, kd) not in before_pairs and (
                status.get(s) == "added" or status.get(d) in ("added", "rewired", "changed"))
            after_edges.append(DrawnEdge(ks, kd, p, after.type_of(s), "added" if new else "unchanged"))
        clusters = [after.cluster(f, f"c{f}", "c", self._function_status(f)) for f in after.cluster_order]
        clusters += [self.clusters[k] for k in sorted(self.clusters, key=lambda k: int(k[2:]))]
        return Drawing(self.name, tuple(nodes), tuple(after_edges + edges), tuple(clusters), is_diff=True)

    def _function_status(self, f: int) -> str:
        found = self.status.get(f, "unchanged")
        return "changed" if found == "rewired" else found
