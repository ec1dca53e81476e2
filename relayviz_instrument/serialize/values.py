"""Conversions from TVM objects to JSON values, shared by the serializers of every dialect.

Attribute values, types and tensor constants look the same in Relay, Relax and TIR, so they
are converted here once. Nothing in this module writes files or builds nodes.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Dict, Generic, List, NamedTuple, Optional, Tuple, TypeVar

import numpy as np
import tvm

from ..format import SMALL_TENSOR_ELEMENTS, digest_bytes, digest_parts

__all__ = [
    "GenerationalCache",
    "object_key",
    "field",
    "optional_field",
    "items",
    "dict_attrs_items",
    "type_key",
    "object_fields",
    "prim_text",
    "prim_dtype",
    "attrs_to_json",
    "attr_value",
    "dim_value",
    "type_to_json",
    "virtual_device_to_json",
    "tensor_value",
    "scalar_json",
]

V = TypeVar("V")


def _tvm_ffi() -> Any:
    """The tvm-ffi package of TVM 0.2x, or None on older TVMs."""
    try:
        import tvm_ffi
    except ImportError:
        return None
    return tvm_ffi


#: Memory addresses in the text of objects (``0x55d1...``, ``Target(id=55d1837c0800``): they
#: differ from one process to the next, so they are masked for deterministic snapshots.
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}|(?<=id=)[0-9a-fA-F]{6,}")
#: Text of an object with no JSON form is kept up to this length, then summarized by a digest.
_TEXT_CHARS = 240

# TVM 0.2x renamed and moved what this module reads: ``tvm.tir`` became ``tvm.tirx``, the
# containers and NDArray came from tvm-ffi (``Array``, ``Map``, ``Tensor``), attributes lost
# ``keys()``. The classes of both generations are looked up once, here; a class missing from
# the installed TVM is an empty tuple, which ``isinstance`` never matches.
def _classes(*names: str, root: Any = tvm) -> Tuple[type, ...]:
    """The classes at the dotted paths under ``root`` (``tvm``) that this TVM has."""
    found = []
    for name in names:
        obj: Any = root
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if isinstance(obj, type):
            found.append(obj)
    return tuple(found)


def _ffi_classes(*names: str) -> Tuple[type, ...]:
    ffi = _tvm_ffi()
    return () if ffi is None else _classes(*names, root=ffi)


_INT_IMM = _classes("tirx.IntImm", "tir.IntImm")
_FLOAT_IMM = _classes("tirx.FloatImm", "tir.FloatImm")
_STRING_IMM = _classes("tirx.StringImm", "tir.StringImm", "ir.StringImm")
_TIR_ANY = _classes("tir.Any")
_TIR_VAR = _classes("tirx.Var", "tir.Var")
_STRING = _classes("runtime.container.String") + _ffi_classes("core.String")
_ARRAY = _classes("ir.container.Array") + _ffi_classes("Array")
_MAP = _classes("ir.container.Map") + _ffi_classes("Map")
_TENSOR = _classes("runtime.NDArray", "runtime.Tensor")
_DTYPE = _classes("DataType") + _ffi_classes("dtype")
# Relay's types (TVM <= 0.19).
_RELAY_TENSOR_TYPE = _classes("ir.TensorType")
_TYPE_CALL = _classes("ir.TypeCall")
_GLOBAL_TYPE_VAR = _classes("ir.GlobalTypeVar")
_TYPE_VAR = _classes("ir.TypeVar")
_REF_TYPE = _classes("ir.RelayRefType")
_INCOMPLETE_TYPE = _classes("ir.IncompleteType")
#: The base class of TVM's objects (tvm-ffi's ``Object`` on TVM 0.2x).
_OBJECT = _classes("runtime.Object")


def _object_key() -> Callable[[Any], int]:
    """The identity of a TVM object: its address. Unlike ``hash()``, it works for objects whose
    Python class hashes by structure (types) or not at all. TVM 0.2x objects (tvm-ffi) tell
    their address themselves (``__chandle__``); older ones through ``ObjectPtrHash``."""
    ffi = getattr(tvm.runtime, "_ffi_api", None)
    pointer_hash = getattr(ffi, "ObjectPtrHash", None)
    if pointer_hash is not None:
        return pointer_hash
    return lambda obj: obj.__chandle__()


object_key: Callable[[Any], int] = _object_key()


def _node_get_attr() -> Optional[Callable[[Any, str], Any]]:
    """TVM's ``NodeGetAttr`` on TVMs before tvm-ffi (0.2x), where ``obj.name`` reaches a field
    only after Python's own lookup failed; ``None`` on TVM 0.2x, whose fields are attributes."""
    if _tvm_ffi() is not None:
        return None
    return getattr(getattr(tvm.runtime, "_ffi_node_api", None), "NodeGetAttr", None)


_NODE_GET_ATTR = _node_get_attr()
#: Reads one reflected field of a TVM object, as ``getattr(obj, name)`` does, without the
#: failed Python lookup first on TVMs before 0.20. Only for fields, never for properties.
field: Callable[[Any, str], Any] = _NODE_GET_ATTR if _NODE_GET_ATTR is not None else getattr
_ARRAY_API = getattr(tvm.runtime, "_ffi_api", None) if _NODE_GET_ATTR is not None else None
_ARRAY_SIZE = getattr(_ARRAY_API, "ArraySize", None)
_ARRAY_ITEM = getattr(_ARRAY_API, "ArrayGetItem", None)


def items(array: Any) -> List[Any]:
    """The elements of a TVM ``Array``, as ``list(array)`` gives them. Before TVM 0.20 an
    Array has no iterator: ``list()`` asks for its size again with every element and stops
    on a raised IndexError; here the size is asked once."""
    if _ARRAY_ITEM is None or not isinstance(array, _ARRAY):
        return list(array)
    return [_ARRAY_ITEM(array, i) for i in range(_ARRAY_SIZE(array))]


#: How ``optional_field`` reads each name of each class (TVMs before 0.20 only): one of
#: the three ways below, found once per class and name.
_WAYS: Dict[Tuple[type, str], int] = {}
_PYTHON, _REFLECTED, _ABSENT = 0, 1, 2
#: The base of TVM's object classes before 0.20, and the classes among them that stand for
#: several TVM types (the types without a Python class of their own, and attributes).
_LEGACY_OBJECT = getattr(tvm.runtime, "Object", None) if _NODE_GET_ATTR is not None else None
_SHARED_CLASSES = tuple(c for c in (_LEGACY_OBJECT, getattr(tvm.ir, "Attrs", None), getattr(tvm.ir, "DictAttrs", None))
                        if isinstance(c, type))


def optional_field(obj: Any, name: str) -> Any:
    """``getattr(obj, name, None)`` for a field some TVMs lack (``For.step``, ``Allocate.buffer``).

    Before TVM 0.20 a missing field costs a failed call into TVM and the error message it
    formats (a quarter of a second the first time, a millisecond after), so the fields of a
    class are listed once and a name that is not among them is not asked for. Not for the
    base classes that stand for several TVM types, whose fields differ from object to object.
    """
    cls = type(obj)
    way = _WAYS.get((cls, name))
    if way is None:
        way = _way(obj, name)
    if way == _REFLECTED:
        return _NODE_GET_ATTR(obj, name)  # type: ignore[misc]
    return getattr(obj, name, None) if way == _PYTHON else None


def _way(obj: Any, name: str) -> int:
    """How ``optional_field`` reads ``name`` of objects of ``obj``'s class; remembered where
    the class alone decides."""
    cls = type(obj)
    if _LEGACY_OBJECT is None or not isinstance(obj, _LEGACY_OBJECT) or cls in _SHARED_CLASSES:
        return _PYTHON  # not remembered: plain getattr every time
    if hasattr(cls, name):  # a Python attribute (a property, a method) comes first, as in getattr
        way = _PYTHON
    else:
        way = _REFLECTED if name in object_fields(obj) else _ABSENT
    _WAYS[(cls, name)] = way
    return way


def type_key(obj: Any) -> str:
    """The TVM type key of an object (``relax.expr.Call``, ``tir.For``), read the way this TVM allows."""
    info = getattr(type(obj), "__tvm_ffi_type_info__", None)
    if info is not None:
        return str(info.type_key)
    key = getattr(obj, "type_key", None)
    return str(key) if key is not None else f"{type(obj).__module__}.{type(obj).__name__}"


def object_fields(obj: Any) -> List[str]:
    """The names of an object's reflected fields, base class first (for attrs classes with no
    Python class of their own, and for attrs on TVMs whose Attrs have no ``keys()``)."""
    info = getattr(type(obj), "__tvm_ffi_type_info__", None)
    if info is not None:
        chain = []
        while info is not None:
            chain.append(info)
            info = info.parent_type_info
        return [str(f.name) for i in reversed(chain) for f in i.fields]
    names = tvm.runtime._ffi_node_api.NodeListAttrNames(obj)
    return [str(names(i)) for i in range(names(-1))]


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

    def find(self, key: int) -> Optional[V]:
        """The value stored under ``key`` (an object_key) for this snapshot or the previous
        one (then kept for this one too), or None."""
        hit = self._current.get(key)
        if hit is None:
            hit = self._previous.pop(key, None)
            if hit is None:
                return None
            self._current[key] = hit
        return hit[2]

    def store(self, key: int, obj: Any, value: V) -> None:
        """Remember ``value`` for ``obj`` (whose object_key is ``key``) in this snapshot."""
        self._current[key] = (obj, None, value)

    def rotate(self) -> None:
        """Start a new snapshot: keep only what the snapshot just finished used."""
        self._previous = self._current
        self._current = {}

    def __len__(self) -> int:
        return len(self._current) + len(self._previous)


def _same(a: Any, b: Any) -> bool:
    # Entries hold their stamp, so its address cannot be reused while the entry lives.
    return a is b or (a is not None and b is not None and object_key(a) == object_key(b))


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


def prim_dtype(expr: Any) -> str:
    """The dtype of a TIR expression or variable (``dtype`` before TVM 0.2x, the type's text after)."""
    dtype = optional_field(expr, "dtype")
    if dtype is None:
        dtype = getattr(expr, "ty", "")
    return str(dtype)


def dim_value(dim: Any, texts: "Optional[GenerationalCache[str]]" = None) -> Any:
    """One dimension of a shape: an int, "?" for a dynamic (Any) dimension, else its name or
    its text (``n * 2``, see :func:`prim_text`, which uses and fills ``texts``)."""
    if isinstance(dim, int):
        return dim
    if isinstance(dim, _INT_IMM):
        return int(field(dim, "value"))
    if isinstance(dim, _TIR_ANY):
        return "?"
    return prim_text(dim, texts)


#: TIR arithmetic printed infix by :func:`prim_text`, by class name (the same in every TVM),
#: with its precedence (higher binds tighter), as in Python.
_INFIX = {
    "Or": ("or", 1), "And": ("and", 2),
    "EQ": ("==", 3), "NE": ("!=", 3), "LT": ("<", 3), "LE": ("<=", 3), "GT": (">", 3), "GE": (">=", 3),
    "BitwiseOr": ("|", 4), "BitwiseXor": ("^", 5), "BitwiseAnd": ("&", 6), "LShift": ("<<", 7), "RShift": (">>", 7),
    "Add": ("+", 8), "Sub": ("-", 8), "Mul": ("*", 9), "Div": ("/", 9), "Mod": ("%", 9),
    "FloorDiv": ("//", 9), "FloorMod": ("%", 9),
}
_CALLED = {"Min": "min", "Max": "max"}
#: Operators whose right operand needs parentheses at equal precedence (a - (b - c)).
_LEFT_ONLY = frozenset({"Sub", "Div", "Mod", "FloorDiv", "FloorMod", "LShift", "RShift"})


class _Written(NamedTuple):
    """Marks the end of a sub-expression's text in :func:`prim_text`'s output."""

    key: int
    obj: Any
    start: int


def prim_text(expr: Any, texts: "Optional[GenerationalCache[str]]" = None) -> str:
    """A TIR expression as short, stable text: ``n * 2``, ``i_0 * 8 + i_1``, ``min(n, 4)``.

    TVM's own printer is slow (it builds a whole TVMScript document) and spells constants as
    ``T.int64(2)``; shapes and indices need neither. Parentheses appear only where precedence
    needs them. The walk is iterative: an index expression nests as deep as the loops around
    it. Expressions it does not know are kept as TVM prints them, with addresses masked.

    ``texts`` remembers the text of every sub-expression by identity (the parentheses around
    an operand are its parent's, so a sub-expression reads the same wherever it appears): a
    pass that rewrites an index keeps most of its parts, and their text is not read again.
    """
    out: List[str] = []
    stack: List[Any] = [expr]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        if type(item) is _Written:
            assert texts is not None
            texts.store(item.key, item.obj, "".join(out[item.start:]))
            continue
        if texts is not None and isinstance(item, _OBJECT):
            key = object_key(item)
            known = texts.find(key)
            if known is not None:
                out.append(known)
                continue
            stack.append(_Written(key, item, len(out)))  # below the item's own parts
        name = type(item).__name__
        if isinstance(item, _INT_IMM):
            value = field(item, "value")
            out.append(str(bool(value)) if prim_dtype(item) == "bool" else str(int(value)))
        elif isinstance(item, _FLOAT_IMM):
            out.append(repr(float(field(item, "value"))))
        elif isinstance(item, _TIR_VAR) or name in ("Var", "SizeVar"):
            out.append(str(optional_field(item, "name") or getattr(item, "name_hint", "?")))
        elif name in _INFIX:
            symbol, level = _INFIX[name]
            right = _wrapped(field(item, "b"), level + (name in _LEFT_ONLY))
            stack.extend(right[::-1] + [f" {symbol} "] + _wrapped(field(item, "a"), level)[::-1])
        elif name in _CALLED:
            stack.extend([")", field(item, "b"), ", ", field(item, "a"), _CALLED[name] + "("])
        elif name == "Not":
            stack.extend(_wrapped(field(item, "a"), 10)[::-1] + ["not "])
        elif name == "Cast":
            stack.extend([")", field(item, "value"), f"{prim_dtype(item)}("])
        elif name == "Ramp":
            stack.extend([")", str(item.lanes), ", ", item.stride, ", ", item.base, "ramp("])
        elif name == "Broadcast":
            stack.extend([")", str(item.lanes), ", ", item.value, "broadcast("])
        elif name == "Select":
            stack.extend([")", item.false_value, ", ", item.true_value, ", ", item.condition, "select("])
        elif name in ("BufferLoad", "TensorLoad"):
            buffer = optional_field(item, "buffer") or optional_field(item, "source")
            stack.extend(["]"] + _joined(items(field(item, "indices")))[::-1] + ["[", _buffer_name(buffer)])
        elif name == "Call" and hasattr(item, "op") and type(item.op).__name__ == "Op":
            stack.extend([")"] + _joined(items(item.args))[::-1] + [str(item.op.name) + "("])
        elif isinstance(item, _STRING_IMM):
            out.append(repr(str(item.value)))
        else:
            out.append(_ADDRESS.sub("0x?", str(item)))
    return "".join(out)


def _wrapped(operand: Any, level: int) -> List[Any]:
    """An operand in order, in parentheses if it binds looser than ``level``."""
    infix = _INFIX.get(type(operand).__name__)
    return ["(", operand, ")"] if infix is not None and infix[1] < level else [operand]


def _joined(items: List[Any]) -> List[Any]:
    out: List[Any] = []
    for i, item in enumerate(items):
        if i:
            out.append(", ")
        out.append(item)
    return out


def _buffer_name(buffer: Any) -> str:
    name = optional_field(buffer, "name")
    if name is None:
        return prim_text(buffer) if buffer is not None else "?"
    return str(name)


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
    if isinstance(value, _INT_IMM):
        return bool(value.value) if prim_dtype(value) == "bool" else int(value.value)
    if isinstance(value, _FLOAT_IMM):
        return scalar_json(value.value)
    if isinstance(value, _STRING_IMM):
        return str(value.value)
    if isinstance(value, _STRING):
        return str(value)
    if isinstance(value, _ARRAY + (list, tuple)):
        return [attr_value(v) for v in value]
    if isinstance(value, _MAP + (dict,)):
        return {str(attr_value(k)): attr_value(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, tvm.ir.Attrs):
        return attrs_to_json(value)
    if isinstance(value, _TIR_ANY + _TIR_VAR):
        return dim_value(value)
    if isinstance(value, tvm.ir.GlobalVar):
        return str(value.name_hint)
    if isinstance(value, tvm.ir.Op):
        return str(value.name)
    if isinstance(value, _DTYPE):
        return str(value)
    if isinstance(value, tvm.ir.Type):
        return type_to_json(value)
    if isinstance(value, _TENSOR):
        return tensor_value(value)[0]
    return object_text(value)


def object_text(value: Any) -> str:
    """The text of an object with no JSON form: addresses masked, and past ``_TEXT_CHARS``
    characters cut short with a digest of the whole (a FunctionInfo prints a whole function)."""
    text = _ADDRESS.sub("0x?", str(value))
    if len(text) <= _TEXT_CHARS:
        return text
    return text[:_TEXT_CHARS] + f"… ({digest_bytes(text.encode())}, {len(text)} characters)"


def dict_attrs_items(attrs: Any) -> List[Tuple[str, Any]]:
    """A ``DictAttrs``' entries as ``(name, value)``, by name, read in one call: a DictAttrs
    converts its whole map again for every key asked (``attrs[key]``). A DictAttrs whose map
    is null (hhb-tvm 0.16's ``_dict()`` answers None after ``tir.InjectPrefetch``) has none."""
    getter = getattr(attrs, "_dict", None)
    mapping = getter() if getter is not None else attrs
    if mapping is None:
        return []
    return sorted(((str(k), v) for k, v in mapping.items()), key=lambda entry: entry[0])


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
                for k, v in ((k, attrs[k]) for k in attrs.keys())}
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
    data = np.ascontiguousarray(_to_numpy(array))  # hashed in place: no copy of the weights
    header = f"{dtype}{shape}".encode()
    return {"array_shape": shape, "digest": digest_parts(header, data)}, dtype


def _to_numpy(array: Any) -> np.ndarray:
    data = _shared_memory(array)
    if data is None:
        data = array.numpy() if hasattr(array, "numpy") else np.asarray(array)
    if data.dtype.kind not in "biuf":  # bfloat16, float8 and other ml_dtypes
        data = data.astype(np.float32)
    return data


def _shared_memory(array: Any) -> Optional[np.ndarray]:
    """A NumPy view of a host tensor's own memory (DLPack), where ``numpy()`` would copy it:
    the weights of a ResNet-50 are read again after every pass that makes new ones. ``None``
    when the tensor cannot be viewed as the dtype it names (a device tensor, ``bool`` on TVM
    0.16, ``bfloat16``, ...): then it is copied."""
    try:
        view = np.from_dlpack(array)
    except Exception:  # no DLPack, another device, a dtype NumPy lacks: copy instead
        return None
    return view if view.dtype.name == str(array.dtype) else None

