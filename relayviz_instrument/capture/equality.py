"""Whether a pass changed its module: ``tvm.ir.structural_equal`` made cheap where a pass
plainly changed nothing, and safe where TVM cannot compare.

The snapshot policy (policy.py) asks this once per pass event, so the shortcuts matter: two
modules holding the very same function objects are equal without a walk (passes that change
nothing often return a new module around the old functions, and comparing bound weights byte
by byte is what makes ``structural_equal`` cost milliseconds). Late in ``relay.build`` the
module carries an attribute (``main_func_info``, a FunctionInfo) with no structural equality
registered, on which TVM raises after a slow walk (and a slower error message): there the
functions are compared without the module's attributes, and the attributes by identity.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple, Type

import tvm

from ..serialize.reflection import dict_attrs_items, field, map_items, object_key

__all__ = ["structurally_equal"]


def _tvm_errors() -> Tuple[Type[BaseException], ...]:
    """What TVM raises for a comparison it cannot make (``tvm.TVMError``; TVM 0.2x:
    ``tvm.error``'s), and the Python errors its FFI raises for unsupported arguments."""
    candidates = (getattr(tvm, "TVMError", None), getattr(getattr(tvm, "error", None), "TVMError", None))
    return tuple(c for c in candidates if isinstance(c, type)) + (TypeError, ValueError)


def _structural_equal_function() -> Callable[[Any, Any], Any]:
    found: Optional[Callable[[Any, Any], Any]] = getattr(tvm.ir, "structural_equal", None)
    if found is None:  # TVM 0.2x: it moved to tvm-ffi
        import tvm_ffi

        found = tvm_ffi.structural_equal
    return found


_TVM_ERRORS = _tvm_errors()
_STRUCTURAL_EQUAL = _structural_equal_function()
#: The base class of TVM's objects (``tvm.runtime.Object``; tvm-ffi's ``Object`` on TVM 0.2x).
_OBJECT: Any = getattr(tvm.runtime, "Object", object)


def structurally_equal(a: tvm.IRModule, b: tvm.IRModule) -> Optional[bool]:
    """``tvm.ir.structural_equal`` of two modules, or ``None`` when TVM cannot compare them.

    The same function objects under the same names (and the same attributes) are equal at
    once. Modules with attributes are compared by their functions and type definitions when
    their attributes are the same objects, and are not comparable (``None``) otherwise: an
    attribute may have no structural equality, and printing one to compare it (a FunctionInfo)
    would print a whole function.
    """
    same_attrs = _same_attrs(a, b)
    if same_attrs and _same_functions(a, b):
        return True
    if a.attrs is not None or b.attrs is not None:
        return _functions_equal(a, b) if same_attrs else None
    try:
        return bool(_STRUCTURAL_EQUAL(a, b))
    except _TVM_ERRORS:
        return None


def _functions_equal(a: tvm.IRModule, b: tvm.IRModule) -> Optional[bool]:
    """Structural equality of the functions and type definitions of two modules, not their attributes."""
    def bare(mod: tvm.IRModule) -> tvm.IRModule:
        types = _type_definitions(mod)
        return tvm.IRModule(mod.functions, types) if types is not None else tvm.IRModule(mod.functions)

    try:
        return bool(_STRUCTURAL_EQUAL(bare(a), bare(b)))
    except _TVM_ERRORS:
        return None


def _type_definitions(mod: tvm.IRModule) -> Any:
    """A module's ADT definitions (Relay); ``None`` on TVMs whose modules have none (0.2x)."""
    return getattr(mod, "type_definitions", None)


def _same_attrs(a: tvm.IRModule, b: tvm.IRModule) -> bool:
    """Whether two modules' attributes are the same objects under the same names (printing a
    FunctionInfo to compare it would print a whole function)."""
    attrs_a, attrs_b = a.attrs, b.attrs
    if attrs_a is None or attrs_b is None:
        return attrs_a is None and attrs_b is None
    if object_key(attrs_a) == object_key(attrs_b):  # one DictAttrs shared by both: nothing to read
        return True
    ours, theirs = dict_attrs_items(attrs_a), dict_attrs_items(attrs_b)
    return [k for k, _ in ours] == [k for k, _ in theirs] and all(
        _identical(x, y) for (_, x), (_, y) in zip(ours, theirs))


def _identical(x: Any, y: Any) -> bool:
    """The same TVM object (by address: ``Type.same_as`` recurses forever in TVM 0.16), or equal
    plain values."""
    if isinstance(x, _OBJECT) and isinstance(y, _OBJECT):
        return bool(object_key(x) == object_key(y))
    return type(x) is type(y) and x == y


def _same_functions(a: tvm.IRModule, b: tvm.IRModule) -> bool:
    """Whether two modules (whose attributes are the same, see ``_same_attrs``) hold the same
    function objects under the same names and the same type definitions."""
    fa, fb = map_items(field(a, "functions")), map_items(field(b, "functions"))
    if len(fa) != len(fb):
        return False
    # Passes that change nothing keep the GlobalVars too: compared by address first, the
    # names (a call into TVM each) are read only when the GlobalVars differ.
    by_address = {object_key(g): f for g, f in fb}
    if not all(_identical(func, by_address.get(object_key(gvar))) for gvar, func in fa):
        theirs = {str(field(g, "name_hint")): f for g, f in fb}
        for gvar, func in fa:
            other = theirs.get(str(field(gvar, "name_hint")))
            if other is None or not _identical(func, other):
                return False
    types_a, types_b = _type_definitions(a), _type_definitions(b)
    if types_a is None or types_b is None:
        return types_a is None and types_b is None
    if len(types_a) != len(types_b):
        return False
    theirs_types = {str(g.name_hint): d for g, d in types_b.items()}
    return all(_identical(d, theirs_types.get(str(g.name_hint))) for g, d in types_a.items())


def shares_functions(a: tvm.IRModule, b: tvm.IRModule) -> bool:
    """Whether two modules hold a common ``GlobalVar`` object or a common function parameter
    (a ``Var`` object): passes keep the GlobalVars of the functions they rewrite and the
    parameters of the functions, and so does code that changes a module between passes
    (relay.build's memory planning; relay.quantize, whose calibration makes a module anew
    around the same parameters), while a module made anew from new expressions (TVM's test
    helpers, one after another) has neither. Both modules must be alive: objects are compared
    by address."""
    keys = {object_key(gv) for gv in a.get_global_vars()}
    if any(object_key(gv) in keys for gv in b.get_global_vars()):
        return True
    params = {object_key(p) for p in _parameters(a)}
    return any(object_key(p) in params for p in _parameters(b))


def _parameters(mod: tvm.IRModule) -> List[Any]:
    found: List[Any] = []
    for function in mod.functions.values():
        found.extend(getattr(function, "params", None) or ())
    return found
