"""Reading TVM objects the way the installed TVM allows: fields, arrays, type keys, identity.

Every serializer reads IR objects through these functions, not through ``getattr``: before
TVM 0.20 a field is reached only after Python's own attribute lookup has failed (slow, and
worse for a field the object lacks), and an ``Array`` has no iterator. TVM 0.2x (tvm-ffi)
renamed and moved the classes read here. The differences between the generations are
settled once, at import, in this module.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, Tuple

import tvm

__all__ = [
    "classes",
    "object_key",
    "field",
    "optional_field",
    "items",
    "map_items",
    "dict_attrs_items",
    "type_key",
    "object_fields",
    "masked_text",
    "INT_IMM",
    "FLOAT_IMM",
    "STRING_IMM",
    "TIR_ANY",
    "TIR_VAR",
    "STRING",
    "ARRAY",
    "MAP",
    "TENSOR",
    "DTYPE",
    "OBJECT",
]


def _tvm_ffi() -> Any:
    """The tvm-ffi package of TVM 0.2x, or None on older TVMs."""
    try:
        import tvm_ffi
    except ImportError:
        return None
    return tvm_ffi


# TVM 0.2x renamed and moved what the serializers read: ``tvm.tir`` became ``tvm.tirx``, the
# containers and NDArray came from tvm-ffi (``Array``, ``Map``, ``Tensor``), attributes lost
# ``keys()``. The classes of both generations are looked up once, here; a class missing from
# the installed TVM is an empty tuple, which ``isinstance`` never matches.
def classes(*names: str, root: Any = tvm) -> Tuple[Any, ...]:
    """The classes at the dotted paths under ``root`` (``tvm``) that this TVM has, for
    ``isinstance``: a class this TVM lacks is left out (an empty tuple matches nothing).
    Typed ``Any``: TVM's classes are dynamic, an object they match has any attribute."""
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


def _ffi_classes(*names: str) -> Tuple[Any, ...]:
    ffi = _tvm_ffi()
    return () if ffi is None else classes(*names, root=ffi)


INT_IMM = classes("tirx.IntImm", "tir.IntImm")
FLOAT_IMM = classes("tirx.FloatImm", "tir.FloatImm")
STRING_IMM = classes("tirx.StringImm", "tir.StringImm", "ir.StringImm")
TIR_ANY = classes("tir.Any")
TIR_VAR = classes("tirx.Var", "tir.Var")
STRING = classes("runtime.container.String") + _ffi_classes("core.String")
ARRAY = classes("ir.container.Array") + _ffi_classes("Array")
MAP = classes("ir.container.Map") + _ffi_classes("Map")
TENSOR = classes("runtime.NDArray", "runtime.Tensor")
DTYPE = classes("DataType") + _ffi_classes("dtype")
#: The base class of TVM's objects (tvm-ffi's ``Object`` on TVM 0.2x).
OBJECT = classes("runtime.Object")


def _object_key() -> Callable[[Any], int]:
    """The identity of a TVM object: its address. Unlike ``hash()``, it works for objects whose
    Python class hashes by structure (types) or not at all. TVM 0.2x objects (tvm-ffi) tell
    their address themselves (``__chandle__``); older ones through ``ObjectPtrHash``."""
    ffi = getattr(tvm.runtime, "_ffi_api", None)
    pointer_hash: Optional[Callable[[Any], int]] = getattr(ffi, "ObjectPtrHash", None)
    if pointer_hash is not None:
        return pointer_hash
    return lambda obj: obj.__chandle__()


#: The identity of a TVM object (its address), for objects that hash by structure or not at all.
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

def _array_api() -> Any:
    """Where ``ArraySize`` and ``ArrayGetItem`` are registered: ``tvm.runtime._ffi_api`` before
    TVM 0.20, tvm-ffi's own ``_ffi_api`` after."""
    ffi = _tvm_ffi()
    if ffi is None:
        return getattr(tvm.runtime, "_ffi_api", None)
    try:
        from tvm_ffi import _ffi_api
    except ImportError:
        return None
    return _ffi_api


_ARRAY_API = _array_api()


def _holding_the_gil(name: str) -> Any:
    """``_ARRAY_API``'s function ``name``, as a handle of our own that keeps Python's lock (GIL)
    through the call where tvm-ffi can say so (TVM 0.2x releases it around every call by
    default, and taking it back costs more than reading an element). The functions read
    a container and never call back into Python; other users of the function are untouched."""
    shared = getattr(_ARRAY_API, name, None)
    ffi = _tvm_ffi()
    if shared is None or ffi is None:
        return shared
    try:
        own = ffi.get_global_func(f"ffi.{name}")
        own.release_gil = False
    except Exception:  # a tvm-ffi without the setting or the name: its shared function, as before
        return shared
    return own


_ARRAY_SIZE: Any = _holding_the_gil("ArraySize")
_ARRAY_ITEM: Any = _holding_the_gil("ArrayGetItem")


def items(array: Any) -> List[Any]:
    """The elements of a TVM ``Array``, as ``list(array)`` gives them, the size asked once and
    each element read by one call into TVM. Before TVM 0.20 an Array has no iterator: ``list()``
    asks for its size again with every element and stops on a raised IndexError. tvm-ffi's
    iterator (TVM 0.2x) asks for the size with every element too, and checks the index in
    Python: three times the cost, most of a Relax snapshot's time."""
    if _ARRAY_ITEM is None or not isinstance(array, ARRAY):
        return list(array)
    return [_ARRAY_ITEM(array, i) for i in range(_ARRAY_SIZE(array))]


_MAP_ITEMS: Any = getattr(_ARRAY_API, "MapItems", None) if _NODE_GET_ATTR is not None else None
#: tvm-ffi's iterator over a Map (TVM 0.2x): ``step(0)`` the key, ``step(1)`` the value,
#: ``step(2)`` moves on and tells whether there is more.
_MAP_ITER: Any = getattr(_ARRAY_API, "MapForwardIterFunctor", None) if _NODE_GET_ATTR is None else None


def map_items(mapping: Any) -> List[Tuple[Any, Any]]:
    """The ``(key, value)`` pairs of a TVM ``Map`` (a module's functions), as ``items()``
    gives them. Before TVM 0.20 ``items()`` reads each element through Python's slow
    item lookup; here the flat array of keys and values is read by index. On tvm-ffi (TVM
    0.2x) the map's own iterator is driven directly, without the generator and views
    ``items()`` wraps it in (a module's functions are read at every pass event)."""
    if _MAP_ITER is not None and isinstance(mapping, MAP):
        size = len(mapping)
        out = []
        if size:
            step = _MAP_ITER(mapping)
            for _ in range(size):
                out.append((step(0), step(1)))  # the key, the value; then step(2) moves on
                if not step(2):
                    break
        return out
    if _MAP_ITEMS is None or _ARRAY_ITEM is None:
        return list(mapping.items())
    flat = _MAP_ITEMS(mapping)
    size = _ARRAY_SIZE(flat)
    return [(_ARRAY_ITEM(flat, i), _ARRAY_ITEM(flat, i + 1)) for i in range(0, size, 2)]


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
    On TVM 0.2x fields are attributes, and a missing one costs no more than a present one.
    """
    if _LEGACY_OBJECT is None:
        return getattr(obj, name, None)
    cls = type(obj)
    way = _WAYS.get((cls, name))
    if way is None:
        way = _way(obj, name)
    if way == _REFLECTED:  # only before TVM 0.20, where ``field`` is NodeGetAttr
        return field(obj, name)
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


def dict_attrs_items(attrs: Any) -> List[Tuple[str, Any]]:
    """A ``DictAttrs``' entries as ``(name, value)``, by name, read in one call: a DictAttrs
    converts its whole map again for every key asked (``attrs[key]``). A DictAttrs whose map
    is null (hhb-tvm 0.16's ``_dict()`` answers None after ``tir.InjectPrefetch``) has none."""
    getter = getattr(attrs, "_dict", None)
    mapping = getter() if getter is not None else attrs
    if mapping is None:
        return []
    return sorted(((str(k), v) for k, v in mapping.items()), key=lambda entry: entry[0])


def type_key(obj: Any) -> str:
    """The TVM type key of an object (``relax.expr.Call``, ``tir.For``), read the way this TVM allows."""
    info = getattr(type(obj), "__tvm_ffi_type_info__", None)
    if info is not None:
        return str(info.type_key)
    key = getattr(obj, "type_key", None)
    return str(key) if key is not None else f"{type(obj).__module__}.{type(obj).__name__}"


#: The reflected fields of each tvm-ffi class (TVM 0.2x), by class.
_FIELDS_OF_CLASS: Dict[type, List[str]] = {}


def object_fields(obj: Any) -> List[str]:
    """The names of an object's reflected fields, base class first (for attrs classes with no
    Python class of their own, and for attrs on TVMs whose Attrs have no ``keys()``)."""
    info = getattr(type(obj), "__tvm_ffi_type_info__", None)
    if info is not None:
        known = _FIELDS_OF_CLASS.get(type(obj))
        if known is None:  # a class's type information does not change: read once (milliseconds)
            chain = []
            while info is not None:
                chain.append(info)
                info = info.parent_type_info
            known = _FIELDS_OF_CLASS[type(obj)] = [str(f.name) for i in reversed(chain) for f in i.fields]
        return list(known)
    names = tvm.runtime._ffi_node_api.NodeListAttrNames(obj)
    return [str(names(i)) for i in range(names(-1))]


#: Memory addresses in the text of objects (``0x55d1...``, ``Target(id=55d1837c0800``): they
#: differ from one process to the next, so they are masked for deterministic snapshots.
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}|(?<=id=)[0-9a-fA-F]{6,}")


def masked_text(obj: Any) -> str:
    """``str(obj)`` with the memory addresses in it masked (``0x?``), the same in every process."""
    return _ADDRESS.sub("0x?", str(obj))
