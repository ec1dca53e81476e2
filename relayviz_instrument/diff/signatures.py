"""Labels and order-preserving structural signatures of nodes, at four tiers.

A node's *label* at tier

0. is its kind and operator: ``Call nn.conv2d``, ``Var``, ``Const``, ``GlobalVar @main``;
1. adds its attributes: the call's (on its Op node), a function's, a variable's name, a
   ``TupleGetItem`` index;
2. adds its type: inferred types, a variable's or a constant's dtype and shape;
3. adds its value: a constant's values or digest, a PrimFunc's body digest.

Two nodes are never paired unless their tier-0 labels are equal. The *signature* of a node is
its tier-3 label together with the signatures of its inputs, in order: equal signatures mean
equal sub-graphs (read as trees). A parameter whose name its function shares with another
parameter (anonymous frontends, A-normal form) is told apart by its position in the list,
and a Let-bound variable by its bound value (its input, see ``view.py``): both are where the
variable is bound.

Labels and signatures are Python hashes of the nodes' content: equal in every document
indexed by one process, so that a document is indexed once however many diffs it takes part
in. They are compared for equality only, never ordered, so no result depends on their values.
"""

from __future__ import annotations

from typing import Any, Dict, Hashable, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray
import orjson

from ..format import reference_field_names
from .graph import CanonicalGraph

__all__ = ["Labels", "FIELD_TIERS", "compared_fields", "residual_signatures", "line_keys"]

#: Non-reference fields of a node and the tier they belong to. Fields not listed (attributes,
#: names, indices, and extension fields of newer versions) are tier 1.
FIELD_TIERS: Mapping[str, int] = {
    "node_kind": 0,
    "type": 2, "ret_type": 2, "dtype": 2, "shape": 2, "signature": 2,
    "value": 3, "digest": 3,
}
#: Fields that make up the tier-0 label of these kinds (they name what the node is).
_NAMING_FIELDS: Mapping[str, Tuple[str, ...]] = {
    "Op": ("name",), "GlobalVar": ("name",), "Constructor": ("adt", "name"), "Opaque": ("type_key",),
    # A TIR allocation and a declaration of a buffer that exists (FlattenBuffer declares the
    # parameters' flat views first) are different things: paired by place in the statement chain
    # alone, a parameter's view was paired with an allocation. The buffer's name is not part of
    # it: a renamed buffer (fc2.bias read back from TVMScript as fc2_bias) is the same allocation.
    "Allocate": ("declared",),
}


def compared_fields(graph: CanonicalGraph, r: int) -> Dict[str, Any]:
    """The fields a diff compares for node ``r``: its non-reference fields, and for a call of an
    Op the Op's attributes (as ``attrs``)."""
    node = graph.nodes[r]
    skip = reference_field_names(graph.kind[r])
    out = {k: v for k, v in node.items() if k not in skip and k != "node_kind"}
    op = graph.op_of[r]
    if op >= 0:
        attrs = graph.nodes[op].get("attrs")
        if attrs is not None:
            out["attrs"] = attrs
    naming = _NAMING_FIELDS.get(graph.kind[r], ())
    for name in naming:
        out.pop(name, None)
    return out


def _freeze(value: Any) -> Hashable:
    """A hashable key of a JSON value that keeps 1, 1.0 and true apart."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 2 and "dtype" in value and "shape" in value:
        shape = value["shape"]
        if isinstance(shape, list) and isinstance(value["dtype"], str):
            try:
                return (value["dtype"], tuple(shape))  # a tensor type: the common case, kept fast
            except TypeError:
                pass
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


class Labels:
    """The four label tiers of every node of a graph, and its signatures."""

    def __init__(self, graph: CanonicalGraph) -> None:
        n = graph.size
        #: The four codes of each raw label key (calls of one operator share them).
        combined: Dict[Hashable, Tuple[int, int, int, int]] = {}

        def codes_of(raw: Tuple[Any, Any, Any, Any]) -> Tuple[int, int, int, int]:
            codes = combined.get(raw)
            if codes is None:
                c0 = hash(("label", raw[0]))
                c1 = hash((c0, raw[1]))
                c2 = hash((c1, raw[2]))
                codes = combined[raw] = (c0, c1, c2, hash((c2, raw[3])))
            return codes

        kind, nodes, op_of = graph.kind, graph.nodes, graph.op_of
        codes: List[Tuple[int, int, int, int]] = [(0, 0, 0, 0)] * n
        op_key: Dict[int, Tuple[str, Hashable]] = {}
        # Codes of (Op node, tensor type) pairs: calls of one operator on one shape are many.
        op_codes: Dict[Tuple[Any, ...], Tuple[int, int, int, int]] = {}
        var0 = hash(("label", "Var"))
        const0 = hash(("label", "Const"))
        const1 = hash((const0, ()))
        leaf_types: Dict[Tuple[Any, ...], int] = {}  # (tier-1 code, dtype, *shape) -> tier-2 code
        for r in range(n):
            node = nodes[r]
            op = op_of[r]
            if op >= 0:
                # A call of an Op: the hot path. Its Op gives the name and attributes.
                ty: Any = node.get("type")  # a type object (JSON), or None
                plain = len(node) == 4 and ty is not None and len(ty) == 2
                if plain:
                    try:
                        short = (op, ty["dtype"], *ty["shape"])
                    except (KeyError, TypeError):
                        plain = False
                    else:
                        found = op_codes.get(short)
                        if found is not None:
                            codes[r] = found
                            continue
                key = op_key.get(op)
                if key is None:
                    opnode = nodes[op]
                    key = op_key[op] = ("Call " + str(opnode.get("name")), _freeze(opnode.get("attrs")))
                extra = None
                if len(node) > 3 + ("type" in node):  # fields beyond node_kind, op, args, type
                    extra = _freeze({f: v for f, v in node.items()
                                     if f not in ("node_kind", "op", "args", "type")})
                tkey: Hashable = None if ty is None else short[1:] if plain else _freeze(ty)
                found = codes_of((key[0], (key[1], extra), tkey, None))
                if plain:
                    op_codes[short] = found
                codes[r] = found
                continue
            k = kind[r]
            if k == "Var" and len(node) == 4 and "dtype" in node and "shape" in node and "name" in node:
                # A tensor-typed variable: its name is tier 1, its type tier 2.
                c1 = hash((var0, node["name"]))
                c2 = hash((c1, node["dtype"], *node["shape"]))
                codes[r] = (var0, c1, c2, hash((c2, None)))
                continue
            if k == "Const" and len(node) == 3 and "dtype" in node:
                value = node["value"]
                if isinstance(value, dict) and len(value) == 2 and isinstance(value.get("digest"), str):
                    shape = value.get("array_shape")
                    if isinstance(shape, list):
                        # A large tensor: its shape is tier 2, its digest tier 3.
                        tkey2 = (node["dtype"], *shape)
                        t2 = leaf_types.get(tkey2)
                        if t2 is None:
                            t2 = leaf_types[tkey2] = hash((const1, tkey2))
                        codes[r] = (const0, const1, t2, hash((t2, value["digest"])))
                        continue
            raw = None
            if k == "Const":
                raw = _leaf_key(node)
            elif k == "TupleGetItem" and len(node) == 4:  # node_kind, tuple_value, index, type
                ty = node.get("type")
                if ty is not None and len(ty) == 2 and "shape" in ty and "dtype" in ty:
                    raw = (k, (("index", node["index"]),), (ty["dtype"], tuple(ty["shape"])), None)
            if raw is None:
                raw = _generic_key(k, node)
            codes[r] = codes_of(raw)
        l0, l1, l2, l3 = (list(tier) for tier in zip(*codes)) if n else ([], [], [], [])
        self.tiers: Tuple[List[int], List[int], List[int], List[int]] = (l0, l1, l2, l3)
        #: Parameters told apart by their position in their function's list, not their name.
        self.positional: Dict[int, int] = _positional_params(graph)
        self.signature: List[int] = _signatures(graph, l3, self.positional)


def _signatures(graph: CanonicalGraph, l3: List[int], positional: Dict[int, int]) -> List[int]:
    """Tier-3 signatures of every node, inputs first; see the module's docstring."""
    n = graph.size
    sig = list(l3)  # a leaf's signature is its label
    for param, index in positional.items():
        sig[param] = hash((l3[param], "parameter", index))
    inputs = graph.inputs
    for r in graph.topo:
        ins = inputs[r]
        if not ins:
            continue
        if len(ins) == 1:
            sig[r] = hash((l3[r], sig[ins[0]]))
        else:
            sig[r] = hash((l3[r], *[sig[i] for i in ins]))
    assert len(sig) == n
    return sig


def _positional_params(graph: CanonicalGraph) -> Dict[int, int]:
    """Parameters whose name another parameter of their function has: rank -> position."""
    out: Dict[int, int] = {}
    kind, refs, nodes = graph.kind, graph.refs, graph.nodes
    for f, k in enumerate(kind):
        if k != "Function" or f in graph.inlined:
            continue
        params = refs[f][1:]
        if len(params) < 2:
            continue
        names = [nodes[p].get("name") for p in params]
        if len(set(names)) == len(names):
            continue
        seen: Dict[Any, int] = {}
        for name in names:
            seen[name] = seen.get(name, 0) + 1
        for index, (p, name) in enumerate(zip(params, names)):
            if seen[name] > 1 and p not in graph.binding:
                out.setdefault(p, index)
    return out


_CONST_FIELDS = frozenset({"node_kind", "value", "dtype"})


def _leaf_key(node: Mapping[str, Any]) -> Optional[Tuple[Hashable, Hashable, Hashable, Hashable]]:
    """The label key of a Const of plain fields, fast; ``None`` for anything else."""
    if node.keys() <= _CONST_FIELDS:
        value = node.get("value")
        if not isinstance(value, dict):
            return ("Const", (), (node.get("dtype"),), (type(value).__name__, value))
        shape = value.get("array_shape")
        if isinstance(shape, list):  # tiers 1 and 2 as the fast path of Labels makes them
            return ("Const", (), (node.get("dtype"), *shape), _freeze(value))
    return None


def _generic_key(kind: str, node: Mapping[str, Any]) -> Tuple[Hashable, Hashable, Hashable, Hashable]:
    skip = reference_field_names(kind)
    naming = _NAMING_FIELDS.get(kind, ())
    t0: Any = kind if not naming else (kind,) + tuple(str(node.get(f)) for f in naming)
    parts: List[List[Tuple[str, Hashable]]] = [[], [], [], []]
    for field in sorted(node):
        if field in skip or field == "node_kind" or field in naming:
            continue
        value = node[field]
        if kind == "Const" and field == "value" and isinstance(value, dict) and "array_shape" in value:
            parts[2].append(("array_shape", _freeze(value["array_shape"])))
        parts[FIELD_TIERS.get(field, 1)].append((field, _freeze(value)))
    return t0, tuple(parts[1]), tuple(parts[2]), tuple(parts[3])


def residual_signatures(graph: CanonicalGraph, labels: Sequence[int], partner: Sequence[int],
                        before: bool, unpaired: Iterable[int]) -> Dict[int, int]:
    """Signatures of the ``unpaired`` nodes at one label tier, where a paired input counts as
    its pair (named by its before-side rank) rather than as its sub-graph, and an unpaired
    input that is not in ``unpaired`` as itself.

    Two unpaired nodes with equal residual signatures have equal labels and inputs that are
    pairwise either the same pair or unpaired with equal residual signatures.
    """
    out: Dict[int, int] = {}
    inputs = graph.inputs
    side = "before" if before else "after"
    for r in sorted(unpaired, key=graph.position.__getitem__):
        # An unpaired input left out (no node of its label on the other side) is itself only.
        ins = tuple([("pair", i if before else partner[i]) if partner[i] >= 0 else out.get(i, (side, i))
                     for i in inputs[r]])
        out[r] = hash((labels[r], ins))
    return out


def line_keys(graph: CanonicalGraph, labels: Labels) -> NDArray[np.uint64]:
    """A key per node, in ``view.topo`` order, the way a text diff sees a line: its tier-3
    label, where its inputs are, each as its distance back in that order (an input that is a
    leaf, as its signature instead: parameters and constants sit far from their users), and
    where its users are, with the input position each reads it at.

    Two runs of equal keys in the two documents are the same computation written the same
    way; ``matching`` pairs such runs in bulk from one sure pair inside them.
    """
    n = graph.size
    lens, starts, flat = graph.input_arrays
    total = len(flat)
    owner = np.repeat(np.arange(n, dtype=np.int64), lens)
    slot = np.arange(total, dtype=np.int64) - starts[owner]
    position = np.asarray(graph.position, dtype=np.int64)
    sig = np.asarray(labels.signature, dtype=np.int64).view(np.uint64)
    leaf = lens[flat] == 0
    term = np.where(leaf, sig[flat], (position[owner] - position[flat]).view(np.uint64))
    term = _mix(term ^ _mix(slot.view(np.uint64) + leaf.astype(np.uint64) * np.uint64(1 << 40)))
    acc = np.zeros(n, dtype=np.uint64)
    used = np.zeros(n, dtype=np.uint64)
    if total:
        nonempty = lens > 0
        acc[nonempty] = np.add.reduceat(term, starts[nonempty])
        # ... and where its users are, at which of their inputs: of two equal nodes reading
        # one input, the first field of a tuple is not the second.
        np.add.at(used, flat, _mix((position[owner] - position[flat]).view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
                                   + slot.view(np.uint64)))
    keys = _mix(np.asarray(labels.tiers[3], dtype=np.int64).view(np.uint64) ^ _mix(acc + lens.view(np.uint64))
                ^ _mix(used + np.uint64(0x5851F42D4C957F2D)))
    return keys[np.asarray(graph.topo, dtype=np.int64)]


def _mix(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """splitmix64's finalizer, element-wise (uint64 arithmetic wraps)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    mixed: NDArray[np.uint64] = x ^ (x >> np.uint64(31))
    return mixed
