"""What differs inside a pair of nodes, and how a node is described in a diff."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Mapping, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray
import orjson

from .index import IndexedDocument
from .model import FieldChange, NodeInfo, NodeMatch
from .signatures import compared_fields
from .graph import CanonicalGraph
from .statements import describe_statement

__all__ = ["compare_pairs", "field_changes", "describe", "NodeDescriptions", "type_text", "json_equal",
           "function_role"]


def compare_pairs(ia: IndexedDocument, ib: IndexedDocument,
                  a2b: Sequence[int]) -> Tuple[List[NodeMatch], List[NodeMatch]]:
    """The pairs that are not unchanged, split into ``(changed, rewired)``, in before-rank order.

    A pair is changed when its compared fields differ (the tier-3 labels tell cheaply when
    they do not), rewired when only its inputs do, read through inlined functions (a
    Let-bound variable's binding is its Let's input, not its own).
    """
    va, vb = ia.graph, ib.graph
    part = np.asarray(a2b, dtype=np.int64)
    paired = np.flatnonzero(part >= 0)
    theirs = part[paired]
    differ = (np.asarray(ia.labels.tiers[3], dtype=np.int64)[paired]
              != np.asarray(ib.labels.tiers[3], dtype=np.int64)[theirs])
    moved = _moved(va.input_arrays, vb.input_arrays, part, paired, theirs)
    changed: List[NodeMatch] = []
    rewired: List[NodeMatch] = []
    for a, b, fields_may_differ, inputs_moved in zip(paired.tolist(), theirs.tolist(), differ.tolist(),
                                                      moved.tolist()):
        if not (fields_may_differ or inputs_moved):
            continue
        xs, ys = va.literal_inputs(a), vb.literal_inputs(b)
        if a in va.binding or b in vb.binding:
            inputs_moved = len(xs) != len(ys) or any(a2b[x] != y for x, y in zip(xs, ys))
        fields: Tuple[FieldChange, ...] = ()
        if fields_may_differ:
            fields = field_changes(compared_fields(va, a), compared_fields(vb, b))
            op_a, op_b = va.op_name(a), vb.op_name(b)
            if op_a != op_b:  # an operator rewritten into another of its role (matching/rewrites.py)
                fields = (FieldChange("op", op_a, op_b),) + fields
        if not fields and not inputs_moved:
            continue
        inputs = (tuple(va.doc_id[x] for x in xs), tuple(vb.doc_id[y] for y in ys))
        match = NodeMatch(va.doc_id[a], vb.doc_id[b], "changed" if fields else "rewired", fields,
                          inputs, inputs_moved)
        (changed if fields else rewired).append(match)
    return changed, rewired


def _moved(inputs_a: Tuple[NDArray[np.int64], ...], inputs_b: Tuple[NDArray[np.int64], ...],
           part: NDArray[np.int64], paired: NDArray[np.int64], theirs: NDArray[np.int64]) -> NDArray[np.bool_]:
    """For each pair, whether the inputs of the before node, read through the pairing, differ
    from the inputs of the after node."""
    lens_a, starts_a, flat_a = inputs_a
    lens_b, starts_b, flat_b = inputs_b
    n = lens_a[paired]
    moved: NDArray[np.bool_] = n != lens_b[theirs]
    same = np.flatnonzero(~moved & (n > 0))
    if len(same):
        count = n[same]
        offset = np.arange(int(count.sum()), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        xs = flat_a[np.repeat(starts_a[paired[same]], count) + offset]
        ys = flat_b[np.repeat(starts_b[theirs[same]], count) + offset]
        wrong = np.bincount(np.repeat(np.arange(len(same)), count), weights=part[xs] != ys, minlength=len(same))
        moved[same] = wrong > 0
    return moved


def json_equal(x: Any, y: Any) -> bool:
    """JSON equality that keeps 1, 1.0 and true apart."""
    if x is y:
        return True
    if type(x) is not type(y):
        return False
    if isinstance(x, (str, int, float)):
        return bool(x == y)
    return orjson.dumps(x, option=orjson.OPT_SORT_KEYS) == orjson.dumps(y, option=orjson.OPT_SORT_KEYS)


def field_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> Tuple[FieldChange, ...]:
    """The fields that differ, sorted; attributes one by one (``attrs.strides``)."""
    out: List[FieldChange] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if json_equal(old, new):
            continue
        if name == "attrs" and isinstance(old, dict) and isinstance(new, dict):
            for key in sorted(set(old) | set(new)):
                if key not in old or key not in new or not json_equal(old[key], new[key]):
                    out.append(FieldChange(f"attrs.{key}", old.get(key), new.get(key)))
        else:
            out.append(FieldChange(name, old, new))
    return tuple(out)


def type_text(ty: Any) -> str:
    """A type in short form: ``float32[1, 64, 56, 56]``, ``(float32[3], int64)``, ``List[...]``."""
    if not isinstance(ty, dict):
        return ""
    kind = ty.get("kind")
    if kind is None:
        shape = ty.get("shape") or []
        dtype = str(ty.get("dtype", "?"))
        return f"{dtype}[{', '.join(map(str, shape))}]" if shape else dtype
    if kind == "tuple":
        return "(" + ", ".join(type_text(f) for f in ty.get("fields", ())) + ")"
    if kind == "func":
        return "fn(" + ", ".join(type_text(p) for p in ty.get("params", ())) + ") -> " + type_text(ty.get("ret"))
    if kind == "adt":
        args = ty.get("args") or []
        return str(ty.get("name")) + ("[" + ", ".join(type_text(a) for a in args) + "]" if args else "")
    if kind == "typevar":
        return str(ty.get("name"))
    if kind == "ref":
        return "ref(" + type_text(ty.get("value")) + ")"
    return str(kind)


def describe(graph: CanonicalGraph, r: int) -> NodeInfo:
    """The operator or kind of node ``r``, what tells it apart, and its type."""
    node, kind = graph.nodes[r], graph.kind[r]
    op_name = graph.op_name(r)
    if op_name is not None:
        return NodeInfo(kind, str(op_name), "", type_text(node.get("type")))
    statement = describe_statement(kind, node, type_text(node.get("type")))
    if statement is not None:
        return statement
    if kind == "Call":
        callee = graph.refs[r][0]
        detail = ""
        if graph.kind[callee] == "GlobalVar":
            detail = "@" + str(graph.nodes[callee].get("name"))
        elif graph.kind[callee] == "Function":
            detail = _function_text(graph.nodes[callee])
        return NodeInfo(kind, "Call", detail, type_text(node.get("type")))
    if kind == "Var":
        ty = node.get("type") or ({"dtype": node["dtype"], "shape": node.get("shape", [])} if "dtype" in node else None)
        return NodeInfo(kind, "Var", "%" + str(node.get("name")), type_text(ty))
    if kind == "Const":
        value = node.get("value")
        shape = value.get("array_shape") if isinstance(value, dict) else []
        return NodeInfo(kind, "Const", "", type_text({"dtype": node.get("dtype"), "shape": shape}))
    if kind == "Function":
        return NodeInfo(kind, "Function", _function_text(node), type_text(node.get("ret_type")))
    if kind in ("Op", "GlobalVar", "PrimFunc", "Constructor"):
        prefix = "@" if kind in ("GlobalVar", "PrimFunc") else ""
        return NodeInfo(kind, kind, prefix + str(node.get("name")))
    if kind == "TupleGetItem":
        return NodeInfo(kind, kind, f".{node.get('index')}", type_text(node.get("type")))
    if kind == "Opaque":
        return NodeInfo(kind, kind, str(node.get("type_key")))
    return NodeInfo(kind, kind, "", type_text(node.get("type")))


class NodeDescriptions(Mapping[int, NodeInfo]):
    """:func:`describe` of the given nodes of a graph, by document id, each made when first read
    (a summary reads none; a report reads the few it prints)."""

    def __init__(self, graph: CanonicalGraph, ranks: Iterable[int]) -> None:
        self._view = graph
        self._ids = sorted(graph.doc_id[r] for r in ranks)
        self._known = frozenset(self._ids)
        self._made: Dict[int, NodeInfo] = {}

    def __getitem__(self, nid: int) -> NodeInfo:
        info = self._made.get(nid)
        if info is None:
            if nid not in self._known:
                raise KeyError(nid)
            info = self._made[nid] = describe(self._view, self._view.rank_of[nid])
        return info

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, nid: object) -> bool:
        return nid in self._known

    def __repr__(self) -> str:
        return f"NodeDescriptions({dict(self)!r})"


def function_role(node: Mapping[str, Any]) -> Tuple[str, str]:
    """What a function is for, from its attributes: ``("Composite", name)``, ``("Primitive", "")``,
    ``("Compiler", name)``, or ``("", "")`` for a plain function."""
    attrs = node.get("attrs") or {}
    for role in ("Composite", "Primitive", "Compiler"):
        if attrs.get(role):
            return role, "" if role == "Primitive" else str(attrs[role])
    return "", ""


def _function_text(node: Mapping[str, Any]) -> str:
    role, name = function_role(node)
    return f"{role}={name}" if name else role
