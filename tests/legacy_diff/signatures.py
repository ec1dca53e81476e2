"""Labels and order-preserving structural signatures of nodes, at four tiers.

A node's *label* at tier

0. is its kind and operator: ``Call nn.conv2d``, ``Var``, ``Const``, ``GlobalVar @main``;
1. adds its attributes: the call's (on its Op node), a function's, a variable's name, a
   ``TupleGetItem`` index;
2. adds its type: inferred types, a variable's or a constant's dtype and shape;
3. adds its value: a constant's values or digest, a PrimFunc's body digest.

Two nodes are never paired unless their tier-0 labels are equal. The *signature* of a node at
a tier is its label together with the signatures of its inputs, in order: equal signatures
mean equal sub-graphs (read as trees). Labels and signatures are interned to small integers in
a :class:`SignatureTable` shared by the two documents of a diff, so they compare across the
two and never depend on hashing (the same inputs give the same numbers in every process).
"""

from __future__ import annotations

from typing import Any, Dict, Hashable, Iterable, List, Mapping, Optional, Sequence, Tuple

import orjson

from relayviz_instrument.format import reference_field_names
from .view import GraphView

__all__ = ["SignatureTable", "Labels", "FIELD_TIERS", "compared_fields", "residual_signatures"]

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
}


def compared_fields(view: GraphView, r: int) -> Dict[str, Any]:
    """The fields a diff compares for node ``r``: its non-reference fields, and for a call of an
    Op the Op's attributes (as ``attrs``)."""
    node = view.nodes[r]
    skip = reference_field_names(view.kind[r])
    out = {k: v for k, v in node.items() if k not in skip and k != "node_kind"}
    op = view.op_of[r]
    if op >= 0:
        attrs = view.nodes[op].get("attrs")
        if attrs is not None:
            out["attrs"] = attrs
    naming = _NAMING_FIELDS.get(view.kind[r], ())
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


class SignatureTable:
    """Interning tables shared by the two documents of one diff."""

    def __init__(self) -> None:
        self.labels: List[Dict[Hashable, int]] = [{}, {}, {}, {}]
        self.structures: Dict[Tuple[int, Any], int] = {}
        #: The four label codes of each raw label key seen so far (calls of one operator share them).
        self.combined: Dict[Hashable, Tuple[int, int, int, int]] = {}

    def intern(self, tier: int, key: Hashable) -> int:
        table = self.labels[tier]
        found = table.get(key)
        if found is None:
            found = table[key] = len(table)
        return found

    def codes(self, raw: Tuple[Any, Any, Any, Any]) -> Tuple[int, int, int, int]:
        """The four tier codes of a raw label ``(kind and op, attrs, type, value)``, each tier
        refining the one before."""
        codes = self.combined.get(raw)
        if codes is None:
            intern = self.intern
            c0 = intern(0, raw[0])
            c1 = intern(1, (c0, raw[1]))
            c2 = intern(2, (c1, raw[2]))
            codes = self.combined[raw] = (c0, c1, c2, intern(3, (c2, raw[3])))
        return codes


class Labels:
    """The four label tiers of every node of a view, and its tier-3 signatures."""

    def __init__(self, view: GraphView, table: SignatureTable) -> None:
        self.view = view
        n = view.size
        l0: List[int] = [0] * n
        l1: List[int] = [0] * n
        l2: List[int] = [0] * n
        l3: List[int] = [0] * n
        codes_of = table.codes
        kind, nodes, op_of = view.kind, view.nodes, view.op_of
        op_key: Dict[int, Tuple[str, Hashable]] = {}
        # Codes of (Op node, tensor type) pairs: calls of one operator on one shape are many.
        op_codes: Dict[Tuple[int, str, Tuple[Any, ...]], Tuple[int, int, int, int]] = {}
        for r in range(n):
            node = nodes[r]
            op = op_of[r]
            if op >= 0:
                # A call of an Op: the hot path. Its Op gives the name and attributes.
                ty = node.get("type")
                plain = len(node) == 4 and ty is not None and len(ty) == 2 and "shape" in ty and "dtype" in ty
                if plain:
                    short = (op, ty["dtype"], tuple(ty["shape"]))
                    codes = op_codes.get(short)
                    if codes is not None:
                        l0[r], l1[r], l2[r], l3[r] = codes
                        continue
                key = op_key.get(op)
                if key is None:
                    opnode = nodes[op]
                    key = op_key[op] = ("Call " + str(opnode.get("name")), _freeze(opnode.get("attrs")))
                extra = None
                if len(node) > 3 + ("type" in node):  # fields beyond node_kind, op, args, type
                    extra = _freeze({f: v for f, v in node.items()
                                     if f not in ("node_kind", "op", "args", "type")})
                if ty is None:
                    tkey: Hashable = None
                elif plain:
                    tkey = short[1:]
                else:
                    tkey = _freeze(ty)
                codes = codes_of((key[0], (key[1], extra), tkey, None))
                if plain:
                    op_codes[short] = codes
                l0[r], l1[r], l2[r], l3[r] = codes
                continue
            else:
                k = kind[r]
                raw = None
                if k == "Var" or k == "Const":
                    raw = _leaf_key(node)
                elif k == "TupleGetItem" and len(node) == 4:  # node_kind, tuple_value, index, type
                    ty = node.get("type")
                    if ty is not None and len(ty) == 2 and "shape" in ty and "dtype" in ty:
                        raw = (k, (("index", node["index"]),), (ty["dtype"], tuple(ty["shape"])), None)
                if raw is None:
                    raw = _generic_key(k, node)
            l0[r], l1[r], l2[r], l3[r] = codes_of(raw)
        self.tiers: Tuple[List[int], List[int], List[int], List[int]] = (l0, l1, l2, l3)

        # Tier-3 signatures of every node, inputs first.
        structures = table.structures
        sig = [0] * n
        inputs = view.inputs
        for r in view.topo:
            ins = inputs[r]
            # One input (most nodes) keys by the int itself: an int never equals a tuple.
            key2 = (l3[r], sig[ins[0]] if len(ins) == 1 else tuple([sig[i] for i in ins]))
            found = structures.get(key2)
            if found is None:
                found = structures[key2] = len(structures)
            sig[r] = found
        self.signature: List[int] = sig


_VAR_FIELDS = frozenset({"node_kind", "name", "dtype", "shape"})
_CONST_FIELDS = frozenset({"node_kind", "value", "dtype"})


def _leaf_key(node: Mapping[str, Any]) -> Optional[Tuple[Hashable, Hashable, Hashable, Hashable]]:
    """The label key of a tensor-typed Var or of a Const, fast; ``None`` for anything else."""
    kind = node["node_kind"]
    if kind == "Var":
        if node.keys() <= _VAR_FIELDS:
            shape = node.get("shape")
            return ("Var", (("name", node.get("name")),),
                    (node.get("dtype"), None if shape is None else tuple(shape)), None)
        return None
    if node.keys() <= _CONST_FIELDS:
        value = node.get("value")
        if not isinstance(value, dict):
            return ("Const", (), (node.get("dtype"), ()), (type(value).__name__, value))
        shape = value.get("array_shape")
        if isinstance(shape, list):
            digest = value.get("digest")
            content = digest if len(value) == 2 and isinstance(digest, str) else _freeze(value)
            return ("Const", (), (node.get("dtype"), tuple(shape)), content)
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


def residual_signatures(view: GraphView, labels: Sequence[int], partner: Sequence[int],
                        before: bool, table: Dict[Any, int], unpaired: Iterable[int]) -> Dict[int, int]:
    """Signatures of the ``unpaired`` nodes at one label tier, where a paired input counts as
    its pair (numbered by its before-side rank) rather than as its sub-graph.

    Two unpaired nodes with equal residual signatures have equal labels and inputs that are
    pairwise either the same pair or unpaired with equal residual signatures.
    """
    out: Dict[int, int] = {}
    inputs = view.inputs
    for r in sorted(unpaired, key=view.position.__getitem__):
        ins = tuple([(-1 - (i if before else partner[i])) if partner[i] >= 0 else out[i]
                     for i in inputs[r]])
        key = (labels[r], ins)
        found = table.get(key)
        if found is None:
            found = table[key] = len(table)
        out[r] = found
    return out
