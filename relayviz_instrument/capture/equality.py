"""Whether a pass changed its module: ``tvm.ir.structural_equal`` made cheap where a pass
plainly changed nothing, and safe where TVM cannot compare.

The snapshot policy (policy.py) asks this once per pass event, so the shortcuts matter: two
modules holding the very same function objects are equal without a walk (passes that change
nothing often return a new module around the old functions, and comparing bound weights byte
by byte is what makes ``structural_equal`` cost milliseconds). Late in ``relay.build`` the
module carries an attribute (``main_func_info``, a FunctionInfo) with no structural equality
registered, on which TVM raises after a slow walk (and a slower error message): there the
functions are compared without the module's attributes, and the attributes by identity.

What is read of a module (its functions by identity, its dialect) is read once per module
state and kept for the last few (:class:`ModuleReader`): a module is one event's output and
the next event's input, and in a build of small modules these reads cost more than TVM's walk.

A module *state* is what the module holds, not the module object: an ``IRModule`` is edited in
place by ordinary Python passes (``mod[gv] = f; return mod``, as dlight's
``ApplyDefaultSchedule`` does), by ``update_func`` and ``del mod[gv]``, and by code between
passes. :class:`ModuleContents` holds the objects a module holds (its map of functions, its
attributes, its global infos and type definitions); TVM's maps are copy on write, so while
they are held an edit in place gives the module new ones instead of changing these. Two
states are the same when they hold the same objects, and a state, once read, keeps meaning
what it meant: nothing here trusts the identity of a module object.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple, Type

import tvm

from ..format.irs import RELAX, TIR
from ..serialize import functions_ir
from ..serialize.reflection import dict_attrs_items, field, map_items, object_key, optional_field

__all__ = ["ModuleContents", "ModuleFacts", "ModuleReader", "module_contents", "structurally_equal",
           "shares_functions"]


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
#: The dialects whose modules are compared function by function when they keep their GlobalVars
#: (see ``_each_function_equal``). Not Relay: a Relay module's functions may share a variable
#: (type inference's temporary ``@_tmp`` function shares ``main``'s parameters), which TVM's module
#: comparison maps across functions and a comparison of each function alone cannot see.
_BY_FUNCTION = frozenset({RELAX, TIR})
#: The base class of TVM's objects (``tvm.runtime.Object``; tvm-ffi's ``Object`` on TVM 0.2x).
_OBJECT: Any = getattr(tvm.runtime, "Object", object)


class ModuleContents:
    """What a module object holds at one moment, by the objects that hold it: its map of
    functions, its attributes, its global infos (Relax) and its type definitions (Relay's ADTs,
    TVM <= 0.19), each ``None`` where the module or this TVM has none.

    Holding them keeps them what they were: TVM's maps are copy on write, so an edit of the
    module in place (``mod[gv] = f``, ``update_func``, ``del mod[gv]``, ``mod.update``, a C++
    pass's ``mod->Add``) makes the module hold a new map while this one is referenced here,
    and new attributes are a new object. Copy on write is invisible to everyone else: the
    module, and every holder of it, sees the edit as before."""

    __slots__ = ("functions", "attrs", "infos", "types")

    def __init__(self, functions: Any, attrs: Any, infos: Any, types: Any) -> None:
        self.functions = functions
        self.attrs = attrs
        self.infos = infos
        self.types = types

    def same(self, other: "ModuleContents") -> bool:
        """Whether both hold the very same objects: then they are the same module state."""
        return (_same_object(self.functions, other.functions) and _same_object(self.attrs, other.attrs)
                and _same_object(self.infos, other.infos) and _same_object(self.types, other.types))


def module_contents(mod: tvm.IRModule) -> ModuleContents:
    """What ``mod`` holds now (see :class:`ModuleContents`): four field reads."""
    return ModuleContents(field(mod, "functions"), field(mod, "attrs"), optional_field(mod, "global_infos"),
                          optional_field(mod, "type_definitions"))


def _same_object(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return a is b or bool(a.same_as(b))


class ModuleFacts:
    """What the change test reads of one module state (:class:`ModuleContents`), each fact once
    and only when asked: its dialect, its functions and type definitions by identity (GlobalVar
    address -> function address, name -> definition address). Every fact is read from the held
    contents, never from the module object, which may have been edited in place since; the
    object is kept for reading the module as a whole while it still holds these contents."""

    __slots__ = ("mod", "held", "_ir", "_pairs", "_functions", "_types", "_names")

    def __init__(self, mod: tvm.IRModule, held: Optional[ModuleContents] = None) -> None:
        self.mod = mod
        self.held = module_contents(mod) if held is None else held
        self._ir: Optional[str] = None
        self._pairs: Optional[List[Tuple[Any, Any]]] = None
        self._functions: Optional[Dict[int, int]] = None
        self._types: Any = _UNREAD
        self._names: Optional[Dict[str, int]] = None

    def same(self, other: "ModuleFacts") -> bool:
        """Whether both are one module state (the same contents, whatever the module objects)."""
        return self is other or self.held.same(other.held)

    def current(self) -> bool:
        """Whether the module object still holds these contents (it was not edited in place)."""
        return module_contents(self.mod).same(self.held)

    def whole(self, current: bool = False) -> Optional[tvm.IRModule]:
        """A module holding these contents without attributes, for TVM's comparison of whole
        modules: the module object while it still holds them (``current``: known, not read
        again), else one made anew around the held functions and type definitions; None if that
        cannot stand for it (it held global infos, which a module made anew would lack)."""
        if current or self.current():
            return self.mod
        held = self.held
        if held.infos is not None and len(held.infos):
            return None
        return _bare(held)

    @property
    def pairs(self) -> List[Tuple[Any, Any]]:
        """The module's (GlobalVar, function) pairs."""
        if self._pairs is None:
            self._pairs = map_items(self.held.functions)
        return self._pairs

    @property
    def ir(self) -> str:
        """The module's dialect (``serialize.functions_ir``)."""
        if self._ir is None:
            self._ir = functions_ir([func for _, func in self.pairs])
        return self._ir

    @property
    def attrs(self) -> Any:
        """The module's attributes (a DictAttrs), or None."""
        return self.held.attrs

    @property
    def functions(self) -> Dict[int, int]:
        """The functions by GlobalVar (both by address)."""
        if self._functions is None:
            self._functions = {object_key(gvar): object_key(func) for gvar, func in self.pairs}
        return self._functions

    @property
    def types(self) -> Optional[Dict[str, int]]:
        """Type definitions by name (Relay's ADTs), or None on TVMs whose modules have none."""
        if self._types is _UNREAD:
            types = self.held.types
            self._types = None if types is None else {str(field(g, "name_hint")): object_key(d)
                                                      for g, d in map_items(types)}
        read: Optional[Dict[str, int]] = self._types  # read above (``_types`` is _UNREAD until then)
        return read

    def by_name(self) -> Dict[str, int]:
        """The functions by name (function address), read when the GlobalVars differ."""
        if self._names is None:
            self._names = {str(field(g, "name_hint")): object_key(f) for g, f in self.pairs}
        return self._names


#: A fact not read yet (None is a fact: no attributes).
_UNREAD = object()


class ModuleReader:
    """Reads the facts of the module states passes hand over, each state once.

    The module a pass returns is usually the one the next pass receives, and a module is
    compared twice (as one event's output and the next one's input): the facts of the last
    few module objects used are kept, with what they held, until :meth:`forget` (a pass run
    again and again on one input keeps that input's facts, as the snapshot policy keeps its
    snapshot). Kept facts are handed out again only while the module still holds what they
    were read of: a module edited in place since is read anew.
    """

    def __init__(self, keep: int = 4) -> None:
        self._keep = keep
        self._recent: Dict[int, ModuleFacts] = {}
        #: The facts handed out last: read from their module in the callback now running, where
        #: nothing has edited it since (the policy compares a pass's input with its output then).
        self._fresh: Optional[ModuleFacts] = None

    def facts(self, mod: tvm.IRModule) -> ModuleFacts:
        """The facts of what ``mod`` holds now: those kept for it if it still holds the same
        objects (four field reads tell), else read anew."""
        key = object_key(mod)
        held = module_contents(mod)
        found = self._recent.pop(key, None)
        if found is None or not found.held.same(held):
            found = ModuleFacts(mod, held)
            if len(self._recent) >= self._keep > 0:
                del self._recent[next(iter(self._recent))]  # the least recently used
        if self._keep:
            self._recent[key] = found  # the most recently used, last
        self._fresh = found
        return found

    def alias(self, facts: ModuleFacts, like: ModuleFacts) -> None:
        """Note that ``facts`` are of a module state equal to ``like`` (the policy found them
        equal): its dialect is ``like``'s, not read again when the next pass receives it."""
        if like._ir is not None and facts._ir is None:
            facts._ir = like._ir

    def forget(self) -> None:
        """Drop the modules held (when recording stops), so they can be freed."""
        self._recent = {}
        self._fresh = None

    def equal(self, a: ModuleFacts, b: ModuleFacts) -> Optional[bool]:
        """``tvm.ir.structural_equal`` of two module states, or ``None`` when TVM cannot compare them.

        The same function objects under the same names (and the same attributes) are equal at
        once. Modules with attributes are compared by their functions and type definitions when
        their attributes are the same objects, and are not comparable (``None``) otherwise: an
        attribute may have no structural equality, and printing one to compare it (a
        FunctionInfo) would print a whole function.
        """
        same_attrs = _facts_same_attrs(a, b)
        if same_attrs and _facts_same_functions(a, b):
            return True
        if (same_attrs and a.ir in _BY_FUNCTION and a.functions.keys() == b.functions.keys()
                and a.types == b.types and _same_global_infos(a.held, b.held)):
            return _each_function_equal(a, b)
        if a.attrs is not None or b.attrs is not None:
            return _functions_equal(a.held, b.held) if same_attrs else None
        whole_a, whole_b = a.whole(a is self._fresh), b.whole(b is self._fresh)
        if whole_a is None or whole_b is None:
            return None
        try:
            return bool(_STRUCTURAL_EQUAL(whole_a, whole_b))
        except _TVM_ERRORS:
            return None


def structurally_equal(a: tvm.IRModule, b: tvm.IRModule) -> Optional[bool]:
    """``tvm.ir.structural_equal`` of two modules, or ``None`` when TVM cannot compare them
    (see :meth:`ModuleReader.equal`), reading both modules afresh."""
    return ModuleReader(keep=0).equal(ModuleFacts(a), ModuleFacts(b))


def _bare(held: ModuleContents) -> tvm.IRModule:
    """A module made anew around held functions and type definitions, without attributes."""
    return tvm.IRModule(held.functions, held.types) if held.types is not None else tvm.IRModule(held.functions)


def _functions_equal(a: ModuleContents, b: ModuleContents) -> Optional[bool]:
    """Structural equality of the functions and type definitions of two module states, not their attributes."""
    try:
        return bool(_STRUCTURAL_EQUAL(_bare(a), _bare(b)))
    except _TVM_ERRORS:
        return None


def _each_function_equal(a: ModuleFacts, b: ModuleFacts) -> Optional[bool]:
    """Structural equality of two modules that hold the same GlobalVar objects, the same
    attributes and the same type definitions, function by function: a function object both
    hold is equal without a walk. TVM's module comparison walks every function, those both
    hold too (9 ms for a ResNet-18's 28 functions where 0.5 ms compares the one a pass
    rewrote). With the GlobalVars the same objects, the module's GlobalVar mapping (by name)
    pairs each function with the one under the same GlobalVar, as here; a Relax or TIR function
    binds its own variables (Relax's well-formedness check refuses a variable bound twice), so
    nothing else is mapped across functions. Tested against TVM's module comparison on every
    such pass event of a Llama-shaped and a torch ResNet-18 compile."""
    theirs = {object_key(gvar): func for gvar, func in b.pairs}
    try:
        for gvar, func in a.pairs:
            other = theirs[object_key(gvar)]
            if object_key(func) != object_key(other) and not _STRUCTURAL_EQUAL(func, other):
                return False
    except _TVM_ERRORS:
        return None
    return True


def _same_global_infos(a: ModuleContents, b: ModuleContents) -> bool:
    """Whether two module states' global infos (Relax's virtual devices and the like) are the
    same object, or both are empty or absent (TVM 0.16 without them)."""
    infos_a, infos_b = a.infos, b.infos
    if infos_a is None or infos_b is None:
        return infos_a is None and infos_b is None
    return object_key(infos_a) == object_key(infos_b) or (len(infos_a) == 0 and len(infos_b) == 0)


def _same_attrs(a: tvm.IRModule, b: tvm.IRModule) -> bool:
    """Whether two modules' attributes are the same objects under the same names."""
    return _facts_same_attrs(ModuleFacts(a), ModuleFacts(b))


def _same_functions(a: tvm.IRModule, b: tvm.IRModule) -> bool:
    """Whether two modules hold the same function objects under the same names and the same
    type definitions."""
    return _facts_same_functions(ModuleFacts(a), ModuleFacts(b))


def _facts_same_attrs(a: ModuleFacts, b: ModuleFacts) -> bool:
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


def _facts_same_functions(a: ModuleFacts, b: ModuleFacts) -> bool:
    """Whether two modules (whose attributes are the same, see ``_facts_same_attrs``) hold the
    same function objects under the same names and the same type definitions."""
    if len(a.functions) != len(b.functions):
        return False
    # Passes that change nothing keep the GlobalVars too: compared by address first, the
    # names (a call into TVM each) are read only when the GlobalVars differ.
    if a.functions != b.functions:
        if a.functions.keys() == b.functions.keys():  # the same GlobalVars, other functions
            return False
        if a.by_name() != b.by_name():
            return False
    if a.types is None or b.types is None:
        return a.types is None and b.types is None
    return a.types == b.types


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
