"""The nodes of the format's kinds that several dialects write alike, as expansions.

Relay and Relax both write ``Function``, ``Var``, ``Call``, ``Op``, ``Const``, ``Tuple``,
``TupleGetItem``, ``If`` and ``GlobalVar`` nodes, and TIR writes ``Call`` of ``Op``: each
serializer reads the fields of its own IR classes and hands them to the functions here, which
say what such a node holds and in which order. The builders run once per node of every
document (a cached expansion is built again in each snapshot), so each does the least it can.
"""

from __future__ import annotations

from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

from .cache import GenerationalCache
from .tensors import tensor_value
from .walk import Expansion, Walk

__all__ = ["NO_ATTRS", "leaf", "typed", "opaque", "var_node", "function", "global_var", "op_node", "op_value",
           "op_call", "call", "constant", "tuple_node", "tuple_get_item", "if_node"]

#: The attribute part of the key of an Op node without attributes (``orjson.dumps(None)``).
NO_ATTRS = b"null"


def leaf(node: Dict[str, Any]) -> Expansion:
    """The expansion of an object with no children: a copy of ``node`` each time it is written."""
    return Expansion((), _copy, None, node)


def _copy(walk: Walk, ids: List[int], node: Dict[str, Any]) -> Dict[str, Any]:
    return dict(node)


def typed(node: Dict[str, Any], ty: Any) -> Dict[str, Any]:
    """``node`` with its ``type`` field, unless the type is unknown (``None``)."""
    if ty is not None:
        node["type"] = ty
    return node


def opaque(type_key: str) -> Expansion:
    """An object of a kind the serializer does not know, as a leaf named by its type."""
    return leaf({"node_kind": "Opaque", "type_key": type_key})


def var_node(name: str, ty: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """A ``Var`` node: a tensor of known rank keeps the 1.0 fields ``dtype`` and ``shape``
    (and its ``type`` too when it names a virtual device), any other type is ``type``."""
    node: Dict[str, Any] = {"node_kind": "Var", "name": name}
    if ty is not None:
        if "kind" in ty:
            node["type"] = ty
        else:
            node["dtype"], node["shape"] = ty["dtype"], ty["shape"]
            if "vdevice" in ty:
                node["type"] = ty
    return node


def function(params: List[Any], body: Any, fields: Dict[str, Any]) -> Expansion:
    """A ``Function`` of ``params`` and ``body``, with its other ``fields`` (types, attrs) after."""
    return Expansion(params + [body], lambda walk, ids: {
        "node_kind": "Function", "body": ids[-1], "params": ids[:-1], **fields})


def global_var(name: str) -> Expansion:
    """A ``GlobalVar``: one node per name in a document, however many objects refer to it."""
    return Expansion((), lambda walk, ids: walk.shared(("GlobalVar", name), lambda: {
        "node_kind": "GlobalVar", "name": name}))


def op_node(walk: Walk, key: Hashable, name: str, attrs: Optional[Dict[str, Any]]) -> int:
    """The id of the one ``Op`` node of ``walk``'s document stored under ``key`` (the name and
    what the serializer makes of the attributes): the operator with its call attributes."""
    def make() -> Dict[str, Any]:
        node: Dict[str, Any] = {"node_kind": "Op", "name": name}
        if attrs is not None:
            node["attrs"] = attrs
        return node
    return walk.shared(key, make)


def op_value(name: str) -> Expansion:
    """An operator used as a value (passed to a function), not called: its ``Op`` node
    without attributes."""
    key = ("Op", name, NO_ATTRS)
    return Expansion((), lambda walk, ids: op_node(walk, key, name, None))


def op_call(args: Sequence[Any], key: Hashable, name: str, attrs: Optional[Dict[str, Any]], ty: Any,
            extra: Optional[Dict[str, Any]] = None) -> Expansion:
    """A ``Call`` of the operator ``name`` (its ``Op`` node under ``key``, with ``attrs``),
    then the dialect's ``extra`` fields, then the type."""
    if extra:
        return Expansion(args, lambda walk, ids: typed(
            {"node_kind": "Call", "op": op_node(walk, key, name, attrs), "args": ids, **extra}, ty))
    return Expansion(args, _op_call, None, (key, name, attrs, ty))


def _op_call(walk: Walk, ids: List[int], data: Tuple[Hashable, str, Optional[Dict[str, Any]], Any]) -> Dict[str, Any]:
    key, name, attrs, ty = data
    return typed({"node_kind": "Call", "op": op_node(walk, key, name, attrs), "args": ids}, ty)


def call(callee: Any, args: List[Any], ty: Any, extra: Dict[str, Any]) -> Expansion:
    """A ``Call`` of an expression (a function, a global, a variable), with the ``extra``
    fields the dialect gives it, then the type."""
    return Expansion([callee] + args, lambda walk, ids: typed(
        {"node_kind": "Call", "op": ids[0], "args": ids[1:], **extra}, ty))


def constant(tensors: "GenerationalCache[Tuple[Any, str]]", data: Any, full_values: bool,
             small_elements: int) -> Expansion:
    """A ``Const`` of the tensor ``data`` (see :func:`~.tensors.tensor_value`). Passes re-create
    constants around the same tensor (every InferType does), so values and digests are
    remembered per tensor, in ``tensors``, not per constant."""
    value, dtype = tensors.get(data, lambda d: tensor_value(d, full_values=full_values, small_elements=small_elements))
    return leaf({"node_kind": "Const", "value": value, "dtype": dtype})


def tuple_node(fields: List[Any], ty: Any) -> Expansion:
    """A ``Tuple`` of ``fields``."""
    return Expansion(fields, lambda walk, ids: typed({"node_kind": "Tuple", "fields": ids}, ty))


def tuple_get_item(value: Any, index: int, ty: Any) -> Expansion:
    """Field ``index`` of the tuple ``value``."""
    return Expansion([value], lambda walk, ids: typed(
        {"node_kind": "TupleGetItem", "tuple_value": ids[0], "index": index}, ty))


def if_node(cond: Any, true_branch: Any, false_branch: Any, ty: Any) -> Expansion:
    """An ``If`` of a condition and two branches."""
    return Expansion([cond, true_branch, false_branch], lambda walk, ids: typed(
        {"node_kind": "If", "cond": ids[0], "true_branch": ids[1], "false_branch": ids[2]}, ty))
