"""Relax to RelayViz documents: every Relax node kind, struct info as types.

A Relax module maps onto the document the way its IR is written, one node per IR object:
a ``Function``'s body is a ``SeqExpr`` of binding blocks (``BindingBlock``,
``DataflowBlock``) holding bindings (``VarBinding``: ``var = value``; ``MatchCast``), and an
expression that uses a bound variable refers to its ``Var`` node. Expressions use the 1.0
kinds wherever Relax has them (``Function``, ``Var``, ``Call`` of an ``Op``, ``Const``,
``Tuple``, ``TupleGetItem``, ``If``, ``GlobalVar``); a ``DataflowVar`` is a ``Var`` with
``"dataflow": true``. Struct info (TVM <= 0.19) and Relax types (TVM 0.2x) become the
``type`` fields: tensors with symbolic dimensions (``["n", "n * 2"]``), tuples, shapes,
objects, scalars, functions. ``call_tir`` refers to the PrimFunc it calls through its
``GlobalVar`` argument, which the root's ``functions`` resolves; PrimFuncs are written by the
TIR serializer (their statements with ``tir_bodies``). ``docs/format.md`` has the table.

The serializer reads both generations of Relax by class name: TVM <= 0.19 (``Constant``,
``PrimValue``, ``DataTypeImm``, ``struct_info``, ``sinfo_args``) and TVM 0.2x, where Relax
shares ``Var``, ``Call``, ``Tuple`` and constants with the other dialects (``GenericConst``,
scalar TIR expressions as values, ``ty``, ``ty_args``).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

import orjson

from ..errors import RelayVizSerializeError
from ..format import SMALL_TENSOR_ELEMENTS, Document
from . import nodes
from .attributes import attr_value, attrs_to_json
from .cache import GenerationalCache
from .nodes import leaf, typed
from .reflection import items, type_key
from .tensors import scalar_json
from .tir import TirSerializer
from .tir_text import dim_value, prim_dtype
from .walk import DocumentWriter, Expansion

__all__ = ["RelaxSerializer", "relax_type"]

_MISSING = object()
#: Scalar TIR expressions that TVM 0.2x uses as Relax values (PrimValue before).
_PRIM_CLASSES = frozenset({
    "IntImm", "FloatImm", "Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max", "EQ", "NE",
    "LT", "LE", "GT", "GE", "And", "Or", "Not", "Cast", "Select",
})


def expr_type(expr: Any) -> Any:
    """The struct info (TVM <= 0.19) or type (TVM 0.2x) of a Relax expression, or ``None``."""
    sinfo = getattr(expr, "struct_info_", _MISSING)
    if sinfo is not _MISSING:
        return sinfo
    ty = getattr(expr, "ty", None)
    return None if ty is None or ty.is_missing() else ty


def relax_type(ty: Any) -> Optional[Dict[str, Any]]:
    """A Relax struct info or type as a RelayViz type object (see docs/format.md).

    A tensor of known rank keeps the 1.0 form ``{"dtype", "shape"}`` (``"?"`` for an unknown
    dimension, the text of a symbolic one); the rest carry a ``kind``.
    """
    if ty is None:
        return None
    name = type(ty).__name__
    if name in ("TensorStructInfo", "TensorType", "DynTensorType"):
        dtype = _dtype_text(getattr(ty, "dtype", None))
        shape = getattr(ty, "shape", None)
        ndim = int(getattr(ty, "ndim", -1))
        if shape is not None and type(shape).__name__ == "ShapeExpr":
            out: Dict[str, Any] = {"dtype": dtype, "shape": [dim_value(v) for v in items(shape.values)]}
        elif ndim >= 0:
            out = {"dtype": dtype, "shape": ["?"] * ndim}
        else:
            out = {"kind": "tensor", "dtype": dtype}
        vdevice = getattr(ty, "vdevice", None)
        if vdevice is not None:
            out["vdevice"] = attr_value(vdevice)
        return out
    if name in ("ShapeStructInfo", "ShapeType"):
        values = getattr(ty, "values", None)
        if values is not None:
            return {"kind": "shape", "values": [dim_value(v) for v in items(values)]}
        return {"kind": "shape", "ndim": int(ty.ndim)}
    if name in ("TupleStructInfo", "TupleType"):
        return {"kind": "tuple", "fields": [relax_type(f) for f in items(ty.fields)]}
    if name in ("ObjectStructInfo", "AnyType", "ObjectType"):
        return {"kind": "object"}
    if name == "PrimStructInfo":
        prim: Dict[str, Any] = {"kind": "prim", "dtype": _dtype_text(ty.dtype)}
        if getattr(ty, "value", None) is not None:
            prim["value"] = dim_value(ty.value)
        return prim
    if name == "PrimType":
        return {"kind": "prim", "dtype": _dtype_text(ty)}
    if name in ("FuncStructInfo", "FuncType") and hasattr(ty, "ret"):
        ret = relax_type(ty.ret)
        if ty.params is None:
            return {"kind": "callable", "ret": ret}
        func: Dict[str, Any] = {"kind": "func", "params": [relax_type(p) for p in items(ty.params)], "ret": ret}
        if hasattr(ty, "purity"):
            func["pure"] = bool(ty.purity)
        return func
    if name == "FuncType":
        return {"kind": "func", "params": [relax_type(p) for p in ty.arg_types], "ret": relax_type(ty.ret_type)}
    if name == "PackedFuncType":
        return {"kind": "callable"}
    if name == "StringType":
        return {"kind": "string"}
    return {"kind": "other", "repr": type_key(ty)}


def _dtype_text(dtype: Any) -> str:
    if dtype is None:
        return ""
    return str(getattr(dtype, "dtype", dtype))


class RelaxSerializer:
    """Writes Relax modules, functions and expressions as RelayViz documents.

    One serializer serves a whole compilation: it remembers, for two snapshots, what it read
    from each IR object (known by identity), so a snapshot costs little more than the objects
    the last pass created. ``full_values`` writes every constant's values (else tensors of
    more than ``small_elements`` elements carry a digest); ``tir_bodies`` writes the
    statements of the module's PrimFuncs (``RelayVizTrace(tir=True)``).
    """

    def __init__(self, *, full_values: bool = False, small_elements: int = SMALL_TENSOR_ELEMENTS,
                 tir_bodies: bool = True) -> None:
        self.full_values = full_values
        self.small_elements = small_elements
        self.tir = TirSerializer(tir_bodies=tir_bodies)
        self._writer = DocumentWriter("relax", replay=True)
        self._writer.embed(self.tir)
        self._expansions: GenerationalCache[Expansion] = self._writer.cache(by_node=True)
        self._types: GenerationalCache[Any] = self._writer.cache()
        self._attrs: GenerationalCache[Dict[str, Any]] = self._writer.cache()
        self._tensors: GenerationalCache[Tuple[Any, str]] = self._writer.cache()
        self._handlers: Dict[str, Callable[[Any], Expansion]] = {
            "Function": self._function, "ExternFunc": self._extern_func, "GlobalVar": self._global_var,
            "Var": self._var, "DataflowVar": self._var, "Call": self._call, "Op": self._op,
            "Constant": self._constant, "GenericConst": self._constant,
            "Tuple": self._tuple, "TupleGetItem": self._tuple_get_item, "If": self._if,
            "SeqExpr": self._seq_expr, "BindingBlock": self._block, "DataflowBlock": self._block,
            "VarBinding": self._var_binding, "MatchCast": self._match_cast,
            "ShapeExpr": self._shape_expr, "PrimValue": self._prim_value, "StringImm": self._string_imm,
            "DataTypeImm": self._data_type_imm,
        }

    # -- the serializer protocol -------------------------------------------------------------

    def module(self, mod: Any) -> Document:
        """Serialize every function of ``mod`` (Relax functions, PrimFuncs, extern functions),
        sorted by name."""
        return self._writer.module(mod, self.expansion)

    def expr(self, obj: Any) -> Document:
        """Serialize one Relax function, expression, binding or block; the root's ``root`` names it."""
        return self._writer.expr(obj, self.expansion)

    def expansion(self, obj: Any, key: int) -> Expansion:
        """What to write for one Relax object (cached by identity for two snapshots)."""
        if type(obj).__name__ == "PrimFunc":
            return self.tir.expansion(obj, key)._replace(expand=self.tir.expansion)
        return self._expansions.get(obj, self._expand, key, expr_type(obj))

    # -- cached conversions -------------------------------------------------------------------

    def type_of(self, obj: Any) -> Optional[Dict[str, Any]]:
        """The type of a Relax expression as JSON (cached by identity for two snapshots)."""
        return self._converted_type(expr_type(obj))

    def _converted_type(self, ty: Any) -> Optional[Dict[str, Any]]:
        return None if ty is None else self._types.get(ty, relax_type)

    def _attrs_of(self, attrs: Any) -> Dict[str, Any]:
        if attrs is None:
            return {}
        return self._attrs.get(attrs, attrs_to_json)

    # -- one expansion per kind -----------------------------------------------------------

    def _expand(self, obj: Any) -> Expansion:
        name = type(obj).__name__
        handler = self._handlers.get(name)
        if handler is not None:
            return handler(obj)
        if name in _PRIM_CLASSES:  # TVM 0.2x: a scalar TIR value in a Relax expression
            return leaf({"node_kind": "PrimValue", "value": _prim_json(obj), "dtype": prim_dtype(obj)})
        if not type(obj).__module__.startswith("tvm"):
            raise RelayVizSerializeError(
                f"cannot serialize {type(obj).__name__!r}: expected a Relax expression, function or IRModule")
        return nodes.opaque(type_key(obj))

    def _function(self, func: Any) -> Expansion:
        node: Dict[str, Any] = {}
        ret = getattr(func, "ret_struct_info", _MISSING)
        if ret is _MISSING:
            ret = getattr(func, "ret_ty", None)
        jret = self._converted_type(ret)
        if jret is not None:
            node["ret_type"] = jret
        if func.attrs is not None and len(func.attrs.keys()):
            node["attrs"] = self._attrs_of(func.attrs)
        if hasattr(func, "is_pure"):
            node["pure"] = bool(func.is_pure)
        return nodes.function(items(func.params), func.body, node)

    def _extern_func(self, func: Any) -> Expansion:
        return leaf(typed({"node_kind": "ExternFunc", "global_symbol": str(func.global_symbol)}, self.type_of(func)))

    def _global_var(self, gvar: Any) -> Expansion:
        return nodes.global_var(str(gvar.name_hint))

    def _var(self, var: Any) -> Expansion:
        name = getattr(var, "name_hint", None)
        node = nodes.var_node(str(var.name if name is None else name), self.type_of(var))
        if type(var).__name__ == "DataflowVar":
            node["dataflow"] = True
        return leaf(node)

    def _call(self, call: Any) -> Expansion:
        op, args, ty = call.op, items(call.args), self.type_of(call)
        type_args = getattr(call, "sinfo_args", None)
        if type_args is None:
            type_args = getattr(call, "ty_args", None)
        extra: Dict[str, Any] = {}
        if type_args is not None and len(type_args):
            extra["sinfo_args"] = [self._converted_type(t) for t in items(type_args)]
        if type(op).__name__ == "Op":
            name = str(op.name)
            jattrs = None if call.attrs is None else self._attrs_of(call.attrs)
            key = ("Op", name, orjson.dumps(jattrs, option=orjson.OPT_SORT_KEYS))
            return nodes.op_call(args, key, name, jattrs, ty, extra)
        jattrs = self._attrs_of(call.attrs) if call.attrs is not None else {}
        if jattrs:
            extra["attrs"] = jattrs
        return nodes.call(op, args, ty, extra)

    def _op(self, op: Any) -> Expansion:
        return nodes.op_value(str(op.name))

    def _constant(self, const: Any) -> Expansion:
        data = getattr(const, "data", None)
        if data is None:
            data = getattr(const, "value", None)
        if data is not None and type(data).__name__ in ("dtype", "DataType"):
            # TVM 0.2x: a data type used as a value is a constant holding a dtype (DataTypeImm before).
            return leaf({"node_kind": "DataTypeImm", "value": str(data)})
        if data is None or not hasattr(data, "shape"):
            return nodes.opaque(type_key(const))
        return nodes.constant(self._tensors, data, self.full_values, self.small_elements)

    def _tuple(self, tup: Any) -> Expansion:
        return nodes.tuple_node(items(tup.fields), self.type_of(tup))

    def _tuple_get_item(self, tgi: Any) -> Expansion:
        index, ty = int(tgi.index), self.type_of(tgi)
        return nodes.tuple_get_item(tgi.tuple_value, index, ty)

    def _if(self, ite: Any) -> Expansion:
        return nodes.if_node(ite.cond, ite.true_branch, ite.false_branch, self.type_of(ite))

    def _seq_expr(self, seq: Any) -> Expansion:
        blocks, ty = items(seq.blocks), self.type_of(seq)
        return Expansion(blocks + [seq.body], lambda walk, ids: typed(
            {"node_kind": "SeqExpr", "blocks": ids[:-1], "body": ids[-1]}, ty))

    def _block(self, block: Any) -> Expansion:
        kind = type(block).__name__
        return Expansion(items(block.bindings), lambda walk, ids: {"node_kind": kind, "bindings": ids})

    def _var_binding(self, binding: Any) -> Expansion:
        return Expansion([binding.var, binding.value], lambda walk, ids: {
            "node_kind": "VarBinding", "var": ids[0], "value": ids[1]})

    def _match_cast(self, binding: Any) -> Expansion:
        target = getattr(binding, "struct_info", _MISSING)
        if target is _MISSING:
            target = binding.ty
        ty = self._converted_type(target)
        return Expansion([binding.var, binding.value], lambda walk, ids: {
            "node_kind": "MatchCast", "var": ids[0], "value": ids[1], "type": ty})

    def _shape_expr(self, shape: Any) -> Expansion:
        return leaf(typed({"node_kind": "ShapeExpr", "values": [dim_value(v) for v in items(shape.values)]},
                          self.type_of(shape)))

    def _prim_value(self, prim: Any) -> Expansion:
        return leaf({"node_kind": "PrimValue", "value": _prim_json(prim.value), "dtype": prim_dtype(prim.value)})

    def _string_imm(self, imm: Any) -> Expansion:
        return leaf({"node_kind": "StringImm", "value": str(imm.value)})

    def _data_type_imm(self, imm: Any) -> Expansion:
        return leaf({"node_kind": "DataTypeImm", "value": str(imm.value)})


def _prim_json(expr: Any) -> Any:
    """A scalar TIR value: a number or boolean for a constant, else its text (``n * 2``)."""
    name = type(expr).__name__
    if name == "IntImm":
        return bool(expr.value) if prim_dtype(expr) == "bool" else int(expr.value)
    if name == "FloatImm":
        return scalar_json(float(expr.value))
    return dim_value(expr)
