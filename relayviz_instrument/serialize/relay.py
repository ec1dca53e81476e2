"""Relay IR to RelayViz documents.

The walk and the module loop are every serializer's (:mod:`.walk`): iterative, post-order,
children in field order, a sub-expression shared in the IR written once. This module says
what each Relay kind reads and writes.

Operators are written as the 1.0 specification asks: a Call's ``op`` refers to an Op node
that carries the call's attributes. Op nodes are shared by every call with the same
operator and the same attributes.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import orjson
import tvm
from tvm import relay

from ..errors import RelayVizSerializeError
from ..format import SMALL_TENSOR_ELEMENTS, Document, digest_bytes
from . import nodes
from .attributes import attr_value, attrs_to_json
from .cache import GenerationalCache
from .nodes import leaf as _leaf, typed as _typed
# Fields are read through NodeGetAttr, never for Python properties such as ``Var.name_hint``:
# the expansions read several fields of every new node.
from .reflection import dict_attrs_items, items, masked_text, object_key
from .reflection import field as _field
from .tir_text import dim_value
from .types import type_to_json
from .walk import DocumentWriter, Expansion as _Expansion

__all__ = ["RelaySerializer"]

#: Stands for "not read yet" where ``None`` is a value (an expression with no inferred type).
_UNREAD = object()
_TENSOR_TYPE = tvm.ir.TensorType
_structural_hash = tvm.ir.structural_hash
_structural_equal = tvm.ir.structural_equal


class RelaySerializer:
    """Writes Relay modules, functions and expressions as RelayViz documents.

    One serializer is meant to serve a whole compilation. IR nodes are immutable and a pass
    shares every sub-expression it does not rewrite, so the serializer remembers, for two
    snapshots, what it read from each object (its children and its fields, converted), and
    a snapshot costs little more than the objects the last pass created. Objects are known by
    identity (``ObjectPtrHash``, the object's address); the cache holds the objects it
    describes, so no address is reused while its entry lives.

    ``full_values`` writes every tensor constant's values; otherwise tensors of more than
    ``small_elements`` elements carry a digest. ``tir_bodies`` adds to each PrimFunc node a
    digest of its printed body.
    """

    def __init__(self, *, full_values: bool = False, small_elements: int = SMALL_TENSOR_ELEMENTS,
                 tir_bodies: bool = True) -> None:
        self.full_values = full_values
        self.small_elements = small_elements
        self.tir_bodies = tir_bodies
        self._writer = DocumentWriter("relay")
        self._expansions: GenerationalCache[_Expansion] = self._writer.cache()
        self._attrs: GenerationalCache[Dict[str, Any]] = self._writer.cache()
        self._types: GenerationalCache[Any] = self._writer.cache()
        self._tensors: GenerationalCache[Tuple[Any, str]] = self._writer.cache()
        #: ``orjson.dumps`` of a call's attributes (part of its Op node's key), by Attrs object.
        self._attr_keys: GenerationalCache[bytes] = self._writer.cache()
        #: Module attribute values by object: late in relay.build a FunctionInfo prints a whole
        #: function, and each pass that adds an attribute makes a new DictAttrs around it.
        self._attr_values: GenerationalCache[Any] = self._writer.cache()
        #: Operator names by Op object (operators are registered once and never freed).
        self._op_names: Dict[int, Tuple[Any, str]] = {}
        #: Tensor types converted so far, by structural hash: type inference makes a new type
        #: object for every expression it types, equal to one seen before almost always.
        self._tensor_types: Dict[int, List[Tuple[Any, Optional[Dict[str, Any]]]]] = {}

    # -- public entry points ----------------------------------------------------------------

    def module(self, mod: tvm.IRModule) -> Document:
        """Serialize every function of ``mod`` (sorted by name) and its type definitions."""
        return self._writer.module(mod, self.expansion, type_definitions=_type_definitions(mod) or None,
                                   attrs=self._module_attrs(mod.attrs) or None)

    def expr(self, expr: Any) -> Document:
        """Serialize one Relay expression or function; the root's ``root`` names its node."""
        return self._writer.expr(expr, self.expansion)

    # -- cached conversions -----------------------------------------------------------------

    def expansion(self, obj: Any, key: int) -> _Expansion:
        """What to write for one Relay object (cached by identity for two snapshots)."""
        if type(obj) in _TYPED:
            # The inferred type is read once: it is the cache entry's stamp and the node's type.
            checked = _field(obj, "_checked_type_")
            return self._expansions.get(obj, lambda o: self._expand(o, checked), key, checked)
        return self._expansions.get(obj, self._expand, key)

    def type_of(self, ty: Any) -> Any:
        """A Relay type as JSON (cached by identity for two snapshots)."""
        return None if ty is None else self._types.get(ty, self._converted_type)

    def attrs_of(self, attrs: Any) -> Dict[str, Any]:
        """Attributes as JSON (cached by identity for two snapshots)."""
        return {} if attrs is None else self._attrs.get(attrs, attrs_to_json)

    def _module_attrs(self, attrs: Any) -> Dict[str, Any]:
        """``attrs_to_json`` of a module's attributes, each TVM object among the values
        converted once while it stays in the module."""
        if attrs is None:
            return {}
        if not isinstance(attrs, tvm.ir.DictAttrs):
            return self.attrs_of(attrs)
        return {key: self._attr_values.get(value, attr_value) if isinstance(value, tvm.runtime.Object)
                else attr_value(value) for key, value in dict_attrs_items(attrs)}

    def _converted_type(self, ty: Any) -> Any:
        """``type_to_json(ty)``; a tensor type structurally equal to one converted before
        (same dtype, same dimensions) shares that one's conversion: comparing costs two calls
        into TVM, reading the dtype and every dimension several."""
        if type(ty) is not _TENSOR_TYPE:
            return type_to_json(ty)
        digest = _structural_hash(ty)
        seen = self._tensor_types.setdefault(digest, [])
        for other, converted in seen:
            if _structural_equal(other, ty):
                return converted
        converted = type_to_json(ty)
        seen.append((ty, converted))
        return converted

    def _op_name(self, op: Any) -> str:
        """The name of an operator, read once per operator."""
        key = object_key(op)
        found = self._op_names.get(key)
        if found is None:
            found = self._op_names[key] = (op, str(_field(op, "name")))
        return found[1]

    # -- one expansion per kind: the children to write first, and how to build the node -------

    def _expand(self, obj: Any, checked: Any = _UNREAD) -> _Expansion:
        """``checked``: the object's ``checked_type_`` when the caller read it already."""
        handler = _HANDLERS.get(type(obj))
        if handler is None:
            handler = next((h for cls, h in _HANDLER_ORDER if isinstance(obj, cls)), RelaySerializer._opaque)
        return handler(self, obj, checked)

    def _checked_type(self, expr: Any, checked: Any = _UNREAD) -> Any:
        return self.type_of(_field(expr, "_checked_type_") if checked is _UNREAD else checked)

    def _var(self, var: Any, checked: Any = _UNREAD) -> _Expansion:
        ty = _field(var, "_checked_type_") if checked is _UNREAD else checked
        if ty is None:
            ty = _field(var, "type_annotation")
        node = nodes.var_node(str(_field(_field(var, "vid"), "name_hint")), self.type_of(ty))
        self._place(node, var)
        return _leaf(node)

    def _place(self, node: Dict[str, Any], expr: Any) -> None:
        """Add the expression's virtual device (set by PlanDevices), unless unconstrained."""
        device = expr.virtual_device_
        if device is not None:
            jdevice = self._attrs.get(device, _virtual_device_json)
            if jdevice:
                node["virtual_device"] = jdevice

    def _constant(self, const: Any, checked: Any = _UNREAD) -> _Expansion:
        return nodes.constant(self._tensors, _field(const, "data"), self.full_values, self.small_elements)

    def _call(self, call: Any, checked: Any = _UNREAD) -> _Expansion:
        op, args, attrs = _field(call, "op"), items(_field(call, "args")), _field(call, "attrs")
        ty = self._checked_type(call, checked)
        if isinstance(op, tvm.ir.Op):
            name = self._op_name(op)
            if attrs is None:
                return nodes.op_call(args, ("Op", name, nodes.NO_ATTRS), name, None, ty)
            jattrs = self.attrs_of(attrs)
            key = ("Op", name, self._attr_keys.get(attrs, lambda a: orjson.dumps(jattrs)))
            return nodes.op_call(args, key, name, jattrs, ty)
        extra = self.attrs_of(attrs) if attrs is not None else None
        return nodes.call(op, args, ty, {"attrs": extra} if extra else {})

    def _op(self, op: Any, checked: Any = _UNREAD) -> _Expansion:
        return nodes.op_value(str(op.name))

    def _function(self, func: Any, checked: Any = _UNREAD) -> _Expansion:
        node: Dict[str, Any] = {}
        ret = _field(func, "ret_type")
        if ret is None:
            checked = _field(func, "_checked_type_") if checked is _UNREAD else checked
            if checked is not None:
                ret = checked.ret_type
        if ret is not None:
            node["ret_type"] = self.type_of(ret)
        attrs = _field(func, "attrs")
        if attrs is not None and len(attrs.keys()):
            node["attrs"] = self.attrs_of(attrs)
        type_params = _field(func, "type_params")
        if len(type_params):
            node["type_params"] = [str(tp.name_hint) for tp in type_params]
        self._place(node, func)
        return nodes.function(items(_field(func, "params")), _field(func, "body"), node)

    def _global_var(self, gvar: Any, checked: Any = _UNREAD) -> _Expansion:
        return nodes.global_var(str(gvar.name_hint))

    def _tuple(self, tup: Any, checked: Any = _UNREAD) -> _Expansion:
        return nodes.tuple_node(items(_field(tup, "fields")), self._checked_type(tup, checked))

    def _tuple_get_item(self, tgi: Any, checked: Any = _UNREAD) -> _Expansion:
        index, ty = int(_field(tgi, "index")), self._checked_type(tgi, checked)
        return nodes.tuple_get_item(_field(tgi, "tuple_value"), index, ty)

    def _let(self, let: Any, checked: Any = _UNREAD) -> _Expansion:
        ty = self._checked_type(let, checked)
        return _Expansion([let.var, let.value, let.body], lambda walk, ids: _typed(
            {"node_kind": "Let", "variable": ids[0], "value": ids[1], "body": ids[2]}, ty))

    def _if(self, ite: Any, checked: Any = _UNREAD) -> _Expansion:
        ty = self._checked_type(ite, checked)
        return nodes.if_node(ite.cond, ite.true_branch, ite.false_branch, ty)

    def _constructor(self, ctor: Any, checked: Any = _UNREAD) -> _Expansion:
        return _leaf({"node_kind": "Constructor", "name": str(ctor.name_hint),
                      "adt": str(ctor.belong_to.name_hint)})

    def _match(self, match: Any, checked: Any = _UNREAD) -> _Expansion:
        complete, ty = bool(match.complete), self._checked_type(match, checked)
        return _Expansion([match.data] + list(match.clauses), lambda walk, ids: _typed(
            {"node_kind": "Match", "data": ids[0], "clauses": ids[1:], "complete": complete}, ty))

    def _clause(self, clause: Any, checked: Any = _UNREAD) -> _Expansion:
        return _Expansion([clause.lhs, clause.rhs], lambda walk, ids: {
            "node_kind": "Clause", "lhs": ids[0], "rhs": ids[1]})

    def _pattern_wildcard(self, pat: Any, checked: Any = _UNREAD) -> _Expansion:
        return _leaf({"node_kind": "PatternWildcard"})

    def _pattern_var(self, pat: Any, checked: Any = _UNREAD) -> _Expansion:
        return _Expansion([pat.var], lambda walk, ids: {"node_kind": "PatternVar", "var": ids[0]})

    def _pattern_constructor(self, pat: Any, checked: Any = _UNREAD) -> _Expansion:
        return _Expansion([pat.constructor] + list(pat.patterns), lambda walk, ids: {
            "node_kind": "PatternConstructor", "constructor": ids[0], "patterns": ids[1:]})

    def _pattern_tuple(self, pat: Any, checked: Any = _UNREAD) -> _Expansion:
        return _Expansion(list(pat.patterns), lambda walk, ids: {"node_kind": "PatternTuple", "patterns": ids})

    def _ref_create(self, ref: Any, checked: Any = _UNREAD) -> _Expansion:
        ty = self._checked_type(ref, checked)
        return _Expansion([ref.value], lambda walk, ids: _typed({"node_kind": "RefCreate", "value": ids[0]}, ty))

    def _ref_read(self, ref: Any, checked: Any = _UNREAD) -> _Expansion:
        ty = self._checked_type(ref, checked)
        return _Expansion([ref.ref], lambda walk, ids: _typed({"node_kind": "RefRead", "ref": ids[0]}, ty))

    def _ref_write(self, ref: Any, checked: Any = _UNREAD) -> _Expansion:
        ty = self._checked_type(ref, checked)
        return _Expansion([ref.ref, ref.value], lambda walk, ids: _typed(
            {"node_kind": "RefWrite", "ref": ids[0], "value": ids[1]}, ty))

    def _primfunc(self, func: Any, checked: Any = _UNREAD) -> _Expansion:
        symbol = func.attrs["global_symbol"] if func.attrs is not None and "global_symbol" in func.attrs else None
        signature = []
        for param in func.params:
            entry: Dict[str, Any] = {"name": str(param.name), "dtype": str(param.dtype)}
            buffer = func.buffer_map.get(param)
            if buffer is not None:
                entry["dtype"] = str(buffer.dtype)
                entry["shape"] = [dim_value(d) for d in buffer.shape]
            signature.append(entry)
        node: Dict[str, Any] = {"node_kind": "PrimFunc", "name": "" if symbol is None else str(symbol),
                                "signature": signature}
        if self.tir_bodies:
            node["digest"] = digest_bytes(func.script().encode())
        return _leaf(node)

    def _opaque(self, obj: Any, checked: Any = _UNREAD) -> _Expansion:
        if not isinstance(obj, tvm.runtime.Object):
            raise RelayVizSerializeError(
                f"cannot serialize {type(obj).__name__!r}: expected a Relay expression, function or "
                "IRModule (pass an IRModule, a relay.Function or a relay.Expr)")
        return nodes.opaque(f"{type(obj).__module__}.{type(obj).__name__}")


def _virtual_device_json(device: Any) -> Dict[str, Any]:
    """A ``VirtualDevice`` as ``{device_type, virtual_device_id, target, memory_scope}``.

    Only the constrained parts are written; a fully unconstrained device gives ``{}``.
    """
    out: Dict[str, Any] = {}
    if int(device.device_type_int) != -1:
        out["device_type"] = int(device.device_type_int)
    if int(device.virtual_device_id) != -1:
        out["virtual_device_id"] = int(device.virtual_device_id)
    if device.target is not None:
        out["target"] = masked_text(device.target)
    if str(device.memory_scope):
        out["memory_scope"] = str(device.memory_scope)
    return out


def _type_definitions(mod: tvm.IRModule) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for gtv, data in sorted(mod.type_definitions.items(), key=lambda item: str(item[0].name_hint)):
        out[str(gtv.name_hint)] = {
            "type_params": [str(tv.name_hint) for tv in data.type_vars],
            "constructors": [{"name": str(c.name_hint), "inputs": [type_to_json(t) for t in c.inputs]}
                             for c in data.constructors],
        }
    return out


_Handler = Callable[[RelaySerializer, Any, Any], _Expansion]
_HANDLER_ORDER: Tuple[Tuple[type, _Handler], ...] = (
    (relay.Call, RelaySerializer._call),
    (relay.Var, RelaySerializer._var),
    (relay.Constant, RelaySerializer._constant),
    (relay.Function, RelaySerializer._function),
    (tvm.ir.GlobalVar, RelaySerializer._global_var),
    (tvm.ir.Op, RelaySerializer._op),
    (relay.Tuple, RelaySerializer._tuple),
    (relay.TupleGetItem, RelaySerializer._tuple_get_item),
    (relay.Let, RelaySerializer._let),
    (relay.If, RelaySerializer._if),
    (relay.Constructor, RelaySerializer._constructor),
    (relay.Match, RelaySerializer._match),
    (relay.Clause, RelaySerializer._clause),
    (relay.PatternWildcard, RelaySerializer._pattern_wildcard),
    (relay.PatternVar, RelaySerializer._pattern_var),
    (relay.PatternConstructor, RelaySerializer._pattern_constructor),
    (relay.PatternTuple, RelaySerializer._pattern_tuple),
    (relay.RefCreate, RelaySerializer._ref_create),
    (relay.RefRead, RelaySerializer._ref_read),
    (relay.RefWrite, RelaySerializer._ref_write),
    (tvm.tir.PrimFunc, RelaySerializer._primfunc),
)
_HANDLERS: Dict[type, _Handler] = dict(_HANDLER_ORDER)
#: Kinds whose node shows the inferred type, which type inference sets on the existing object.
_TYPED = frozenset({relay.Call, relay.Var, relay.Function, relay.Tuple, relay.TupleGetItem, relay.Let, relay.If,
                    relay.Match, relay.RefCreate, relay.RefRead, relay.RefWrite})
