"""Conversions from TVM objects to JSON values, shared by the serializers of every dialect.

Attribute values, types and tensor constants look the same in Relay, Relax and TIR, so they
are converted here once. Nothing in this module writes files or builds nodes.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Dict, Generic, List, Optional, Tuple, TypeVar

import numpy as np
import tvm

from ..format import SMALL_TENSOR_ELEMENTS, digest_bytes

__all__ = [
    "GenerationalCache",
    "object_key",
    "attrs_to_json",
    "attr_value",
    "dim_value",
    "type_to_json",
    "virtual_device_to_json",
    "tensor_value",
    "scalar_json",
]

V = TypeVar("V")

#: Memory addresses in the text of objects (``0x55d1...``, ``Target(id=55d1837c0800``): they
#: differ from one process to the next, so they are masked for deterministic snapshots.
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}|(?<=id=)[0-9a-fA-F]{6,}")
#: Text of an object with no JSON form is kept up to this length, then summarized by a digest.
_TEXT_CHARS = 240

#: The identity of a TVM object: ObjectPtrHash is the object's address. Unlike ``hash()``,
#: it works for objects whose Python class hashes by structure (types) or not at all.
object_key: Callable[[Any], int] = tvm.runtime._ffi_api.ObjectPtrHash


class GenerationalCache(Generic[V]):
    """A cache keyed by TVM object identity that lives for two snapshots.

    IR nodes are immutable and passes share the parts they do not rewrite, so most objects
    of one snapshot reappear in the next one. Entries are keyed by the object's address and
    hold the object itself, so an address cannot be reused while its entry lives; entries not
    used by the current snapshot are dropped when the next one starts (:meth:`rotate`), which
    bounds the memory held to what the latest module holds anyway.
    """

    def __init__(self) -> None:
        self._current: Dict[int, Tuple[Any, Any, V]] = {}
        self._previous: Dict[int, Tuple[Any, Any, V]] = {}

    def get(self, obj: Any, compute: Callable[[Any], V], key: Optional[int] = None, stamp: Any = None) -> V:
        """The value for ``obj``, computed by ``compute(obj)`` on a miss (``key``: its object_key).

        ``stamp`` is an object the value also depends on that can change while ``obj`` stays
        the same object (a Relay expression's ``checked_type_``, which type inference sets in
        place): an entry made with another stamp is computed again.
        """
        if key is None:
            key = object_key(obj)
        hit = self._current.get(key)
        if hit is None or not _same(hit[1], stamp):
            hit = self._previous.pop(key, None)
            if hit is None or not _same(hit[1], stamp):
                hit = (obj, stamp, compute(obj))
            self._current[key] = hit
        return hit[2]

    def rotate(self) -> None:
        """Start a new snapshot: keep only what the snapshot just finished used."""
        self._previous = self._current
        self._current = {}

    def __len__(self) -> int:
        return len(self._current) + len(self._previous)


def _same(a: Any, b: Any) -> bool:
    # Entries hold their stamp, so its address cannot be reused while the entry lives.
    return a is b or (a is not None and b is not None and a.handle.value == b.handle.value)


def scalar_json(value: Any) -> Any:
    """A Python or NumPy scalar as a JSON value; non-finite floats become "nan", "inf", "-inf"."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    value = float(value)
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "nan"
    return "inf" if value > 0 else "-inf"


def dim_value(dim: Any) -> Any:
    """One dimension of a shape: an int, "?" for a dynamic (Any) dimension, else its name or text."""
    if isinstance(dim, int):
        return dim
    if isinstance(dim, tvm.tir.IntImm):
        return int(dim.value)
    if isinstance(dim, tvm.tir.Any):
        return "?"
    if isinstance(dim, tvm.tir.Var):
        return str(dim.name)
    return str(dim)


def attr_value(value: Any) -> Any:
    """Convert one attribute value (IntImm, Array, String, Map, DataType, ...) to JSON.

    Unknown objects become their text, with memory addresses masked so that the result is
    the same from one process to the next.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float, np.generic)):
        return scalar_json(value)
    if isinstance(value, tvm.tir.IntImm):
        return bool(value.value) if value.dtype == "bool" else int(value.value)
    if isinstance(value, tvm.tir.FloatImm):
        return scalar_json(value.value)
    if isinstance(value, tvm.tir.StringImm):
        return value.value
    if isinstance(value, tvm.runtime.container.String):
        return str(value)
    if isinstance(value, (tvm.ir.container.Array, list, tuple)):
        return [attr_value(v) for v in value]
    if isinstance(value, (tvm.ir.container.Map, dict)):
        return {str(attr_value(k)): attr_value(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, tvm.ir.Attrs):
        return attrs_to_json(value)
    if isinstance(value, (tvm.tir.Any, tvm.tir.Var)):
        return dim_value(value)
    if isinstance(value, tvm.ir.GlobalVar):
        return str(value.name_hint)
    if isinstance(value, tvm.ir.Op):
        return str(value.name)
    if isinstance(value, tvm.ir.Type):
        return type_to_json(value)
    if isinstance(value, tvm.runtime.NDArray):
        return tensor_value(value)[0]
    return object_text(value)


def object_text(value: Any) -> str:
    """The text of an object with no JSON form: addresses masked, and past ``_TEXT_CHARS``
    characters cut short with a digest of the whole (a FunctionInfo prints a whole function)."""
    text = _ADDRESS.sub("0x?", str(value))
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
        return {str(k): attr_value(attrs[k]) for k in sorted(attrs.keys())}
    if isinstance(attrs, tvm.ir.Attrs):
        booleans = _boolean_fields(attrs)
        return {str(k): bool(v) if str(k) in booleans and isinstance(v, int) else attr_value(v)
                for k, v in ((k, attrs[k]) for k in attrs.keys())}
    names = tvm.runtime._ffi_node_api.NodeListAttrNames(attrs)
    fields = [str(names(i)) for i in range(names(-1))]
    return {name: attr_value(getattr(attrs, name)) for name in fields}


def _boolean_fields(attrs: Any) -> "frozenset[str]":
    """The fields an Attrs class declares as ``bool``: TVM hands them to Python as 0 and 1."""
    try:
        infos = attrs.list_field_info()
    except (AttributeError, tvm.TVMError):
        return frozenset()
    return frozenset(str(f.name) for f in infos if str(f.type_info).split(",")[0].strip() == "bool")


def virtual_device_to_json(device: Any) -> Dict[str, Any]:
    """A ``VirtualDevice`` as ``{device_type, virtual_device_id, target, memory_scope}``.

    Only the constrained parts are written; a fully unconstrained device gives ``{}``.
    """
    out: Dict[str, Any] = {}
    if int(device.device_type_int) != -1:
        out["device_type"] = int(device.device_type_int)
    if int(device.virtual_device_id) != -1:
        out["virtual_device_id"] = int(device.virtual_device_id)
    if device.target is not None:
        out["target"] = _ADDRESS.sub("0x?", str(device.target))
    if str(device.memory_scope):
        out["memory_scope"] = str(device.memory_scope)
    return out


def type_to_json(ty: Any) -> Optional[Dict[str, Any]]:
    """A type as a RelayViz type object; tensor types keep the 1.0 form ``{dtype, shape}``."""
    if ty is None:
        return None
    if isinstance(ty, tvm.ir.TensorType):
        return {"dtype": str(ty.dtype), "shape": [dim_value(d) for d in ty.shape]}
    if isinstance(ty, tvm.ir.TupleType):
        return {"kind": "tuple", "fields": [type_to_json(f) for f in ty.fields]}
    if isinstance(ty, tvm.ir.FuncType):
        out: Dict[str, Any] = {"kind": "func", "params": [type_to_json(a) for a in ty.arg_types],
                               "ret": type_to_json(ty.ret_type)}
        if len(ty.type_params):
            out["type_params"] = [str(tp.name_hint) for tp in ty.type_params]
        return out
    if isinstance(ty, tvm.ir.TypeCall):
        return {"kind": "adt", "name": str(ty.func.name_hint), "args": [type_to_json(a) for a in ty.args]}
    if isinstance(ty, tvm.ir.GlobalTypeVar):
        return {"kind": "adt", "name": str(ty.name_hint), "args": []}
    if isinstance(ty, tvm.ir.TypeVar):
        return {"kind": "typevar", "name": str(ty.name_hint)}
    if isinstance(ty, tvm.ir.RelayRefType):
        return {"kind": "ref", "value": type_to_json(ty.value)}
    if isinstance(ty, tvm.ir.IncompleteType):
        return {"kind": "incomplete"}
    return {"kind": "other", "repr": _ADDRESS.sub("0x?", str(ty))}


def tensor_value(array: Any, *, full_values: bool = False,
                 small_elements: int = SMALL_TENSOR_ELEMENTS) -> Tuple[Any, str]:
    """A tensor's value field and dtype.

    A 0-d tensor gives a scalar; up to ``small_elements`` elements (or any size with
    ``full_values``) gives ``{"array_value", "array_shape"}``; larger tensors give
    ``{"array_shape", "digest"}``, the digest covering dtype, shape and bytes.
    """
    dtype = str(array.dtype)
    shape = [int(d) for d in array.shape]
    size = math.prod(shape)
    if shape == [] or size <= small_elements or full_values:
        data = _to_numpy(array)
        if shape == []:
            return scalar_json(data.reshape(()).item()), dtype
        flat = data.reshape(-1)
        if flat.dtype.kind == "f" and not np.isfinite(flat).all():
            values: List[Any] = [scalar_json(v) for v in flat.tolist()]
        else:
            values = flat.tolist()
        return {"array_value": values, "array_shape": shape}, dtype
    data = _to_numpy(array)
    header = f"{dtype}{shape}".encode()
    return {"array_shape": shape, "digest": digest_bytes(header + data.tobytes())}, dtype


def _to_numpy(array: Any) -> np.ndarray:
    data = array.numpy() if hasattr(array, "numpy") else np.asarray(array)
    if data.dtype.kind not in "biuf":  # bfloat16, float8 and other ml_dtypes
        data = data.astype(np.float32)
    return data
