"""Attributes as JSON: operator attrs, function and module attrs, and any value they hold.

An attribute value may be anything TVM reflects (numbers, strings, arrays, maps, dtypes, types,
tensors, other objects); each becomes a JSON value here, and an object with no JSON form its
text, addresses masked, so that the same module gives the same document in every process.
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np
import tvm

from ..format import digest_bytes
from .reflection import (ARRAY, DTYPE, FLOAT_IMM, INT_IMM, MAP, STRING, STRING_IMM, TENSOR, TIR_ANY, TIR_VAR,
                         dict_attrs_items, masked_text, object_fields)
from .tensors import scalar_json, tensor_value
from .tir_text import dim_value, prim_dtype
from .types import type_to_json

__all__ = ["attrs_to_json", "attr_value", "object_text"]

#: Text of an object with no JSON form is kept up to this length, then summarized by a digest.
_TEXT_CHARS = 240


def attr_value(value: Any) -> Any:
    """Convert one attribute value (IntImm, Array, String, Map, DataType, ...) to JSON.

    Unknown objects become their text, with memory addresses masked so that the result is
    the same from one process to the next.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):  # also tvm-ffi's String, a subclass of str
        return str(value)
    if isinstance(value, (int, float, np.generic)):
        return scalar_json(value)
    if isinstance(value, INT_IMM):
        return bool(value.value) if prim_dtype(value) == "bool" else int(value.value)
    if isinstance(value, FLOAT_IMM):
        return scalar_json(value.value)
    if isinstance(value, STRING_IMM):
        return str(value.value)
    if isinstance(value, STRING):
        return str(value)
    if isinstance(value, ARRAY + (list, tuple)):
        return [attr_value(v) for v in value]
    if isinstance(value, MAP + (dict,)):
        return {str(attr_value(k)): attr_value(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, tvm.ir.Attrs):
        return attrs_to_json(value)
    if isinstance(value, TIR_ANY + TIR_VAR):
        return dim_value(value)
    if isinstance(value, tvm.ir.GlobalVar):
        return str(value.name_hint)
    if isinstance(value, tvm.ir.Op):
        return str(value.name)
    if isinstance(value, DTYPE):
        return str(value)
    if isinstance(value, tvm.ir.Type):
        return type_to_json(value)
    if isinstance(value, TENSOR):
        return tensor_value(value)[0]
    return object_text(value)


def object_text(value: Any) -> str:
    """The text of an object with no JSON form: addresses masked, and past ``_TEXT_CHARS``
    characters cut short with a digest of the whole (a FunctionInfo prints a whole function)."""
    text = masked_text(value)
    if len(text) <= _TEXT_CHARS:
        return text
    return text[:_TEXT_CHARS] + f"… ({digest_bytes(text.encode())}, {len(text)} characters)"


def attrs_to_json(attrs: Any) -> Dict[str, Any]:
    """An ``Attrs`` or ``DictAttrs`` object as a JSON object, in the attrs' own field order.

    Attrs types with no Python class (backend attrs such as ``CallLoweredAttrs``) arrive as a
    plain ``Object``; their fields are read through TVM's reflection.
    """
    if attrs is None:
        return {}
    if isinstance(attrs, tvm.ir.DictAttrs):
        return {key: attr_value(value) for key, value in dict_attrs_items(attrs)}
    if isinstance(attrs, tvm.ir.Attrs) and hasattr(attrs, "keys"):
        booleans = _boolean_fields(attrs)
        return {str(k): bool(v) if str(k) in booleans and isinstance(v, int) else attr_value(v)
                for k, v in ((k, attrs[k]) for k in attrs.keys())}  # noqa: SIM118 -- a TVM Attrs, not a dict: iterating it is not its keys
    return {name: attr_value(getattr(attrs, name)) for name in object_fields(attrs)}


#: The bool fields of each Attrs class with a Python class of its own (one TVM type each).
_BOOLEAN_FIELDS: Dict[type, "frozenset[str]"] = {}


def _boolean_fields(attrs: Any) -> "frozenset[str]":
    """The fields an Attrs class declares as ``bool``: TVM hands them to Python as 0 and 1.

    They depend on the class only, so they are read through TVM's reflection once per class
    (not once per call node); the base ``Attrs`` class may stand for several types and is
    read every time.
    """
    cls = type(attrs)
    found = _BOOLEAN_FIELDS.get(cls)
    if found is None:
        try:
            infos = attrs.list_field_info()
        except Exception:  # an Attrs class without field information (or a TVM without the method)
            return frozenset()
        found = frozenset(str(f.name) for f in infos if str(f.type_info).split(",")[0].strip() == "bool")
        if cls is not tvm.ir.Attrs:
            _BOOLEAN_FIELDS[cls] = found
    return found
