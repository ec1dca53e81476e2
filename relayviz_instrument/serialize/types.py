"""Relay's types (``tvm.ir`` types, TVM <= 0.19) as RelayViz type objects.

Relax's types and struct info are Relax's own: :func:`relayviz_instrument.serialize.relax.relax_type`.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import tvm

from .reflection import classes, masked_text
from .tir_text import dim_value

__all__ = ["type_to_json"]

# Relay's types; the classes TVM 0.2x lacks match nothing.
_RELAY_TENSOR_TYPE = classes("ir.TensorType")
_TYPE_CALL = classes("ir.TypeCall")
_GLOBAL_TYPE_VAR = classes("ir.GlobalTypeVar")
_TYPE_VAR = classes("ir.TypeVar")
_REF_TYPE = classes("ir.RelayRefType")
_INCOMPLETE_TYPE = classes("ir.IncompleteType")


def type_to_json(ty: Any) -> Optional[Dict[str, Any]]:
    """A Relay type as a RelayViz type object; tensor types keep the 1.0 form ``{dtype, shape}``.
    (Relax types and struct info: :mod:`relayviz_instrument.serialize.relax`.)"""
    if ty is None:
        return None
    if isinstance(ty, _RELAY_TENSOR_TYPE):
        return {"dtype": str(ty.dtype), "shape": [dim_value(d) for d in ty.shape]}
    if isinstance(ty, tvm.ir.TupleType):
        return {"kind": "tuple", "fields": [type_to_json(f) for f in ty.fields]}
    if isinstance(ty, tvm.ir.FuncType):
        out: Dict[str, Any] = {"kind": "func", "params": [type_to_json(a) for a in ty.arg_types],
                               "ret": type_to_json(ty.ret_type)}
        if len(ty.type_params):
            out["type_params"] = [str(tp.name_hint) for tp in ty.type_params]
        return out
    if isinstance(ty, _TYPE_CALL):
        return {"kind": "adt", "name": str(ty.func.name_hint), "args": [type_to_json(a) for a in ty.args]}
    if isinstance(ty, _GLOBAL_TYPE_VAR):
        return {"kind": "adt", "name": str(ty.name_hint), "args": []}
    if isinstance(ty, _TYPE_VAR):
        return {"kind": "typevar", "name": str(ty.name_hint)}
    if isinstance(ty, _REF_TYPE):
        return {"kind": "ref", "value": type_to_json(ty.value)}
    if isinstance(ty, _INCOMPLETE_TYPE):
        return {"kind": "incomplete"}
    return {"kind": "other", "repr": masked_text(ty)}
