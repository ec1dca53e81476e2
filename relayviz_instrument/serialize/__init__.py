"""Serializers: IR objects of each dialect to RelayViz documents, one module per dialect.

Which dialect a module holds is read from the classes of its functions, without importing
any dialect, and each dialect's serializer is imported only when a module of that dialect is
seen: the package imports on a TVM that has Relay, Relax, both or neither. Serializers never
write files; :mod:`relayviz_instrument.store` does.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Dict, Protocol, Sequence, Tuple

from ..errors import RelayVizDependencyError, RelayVizSerializeError
from ..format import SMALL_TENSOR_ELEMENTS, Document, encode
from ..format.irs import EMPTY, MODULE_IRS, OTHER, RELAX, RELAY, TIR

__all__ = ["Serializer", "SERIALIZERS", "module_ir", "functions_ir", "serializer_for", "to_relayviz", "dumps"]


class Serializer(Protocol):
    """Writes the modules and expressions of one IR dialect as RelayViz documents.

    One serializer serves a whole compilation: it may remember what it read from IR objects
    that later snapshots share.
    """

    def module(self, mod: Any) -> Document:
        """The document of an ``IRModule``."""
        ...

    def expr(self, obj: Any) -> Document:
        """The document of one function or expression (its node is the root's ``root``)."""
        ...


#: Dialect (as :func:`module_ir` names it) -> ``module:class`` of its serializer. TIR-only
#: modules are snapshotted only with ``RelayVizTrace(tir=True)``.
SERIALIZERS: Dict[str, str] = {
    RELAY: "relay:RelaySerializer",
    RELAX: "relax:RelaxSerializer",
    TIR: "tir:TirSerializer",
}

#: The Python package of each dialect's function classes (``tvm.relay.function.Function``,
#: ``tvm.relax.expr.Function``, ``tvm.tir.function.PrimFunc``; TVM 0.2x calls TIR ``tirx``).
_DIALECT_PACKAGES = {"relay": RELAY, "relax": RELAX, "tir": TIR, "tirx": TIR, "s_tir": TIR}


def _dialect(obj: Any) -> str:
    parts = type(obj).__module__.split(".")
    return _DIALECT_PACKAGES.get(parts[1], OTHER) if len(parts) > 1 and parts[0] == "tvm" else OTHER


def module_ir(mod: Any) -> str:
    """The dialect of an ``IRModule``: ``relay`` or ``relax`` if it holds such a function,
    ``tir`` if it holds only PrimFuncs, ``empty`` if nothing (the device side of a CPU build
    after the host/device split), else ``other``. Imports no dialect."""
    from .reflection import field, map_items  # imports TVM: the package itself imports without it

    return functions_ir([func for _, func in map_items(field(mod, "functions"))])


def functions_ir(functions: Sequence[Any]) -> str:
    """The dialect of a module holding ``functions`` (see :func:`module_ir`), for a caller
    that has read them already."""
    kinds = set()
    for func in functions:
        dialect = _dialect(func)
        if dialect in MODULE_IRS:
            return dialect
        kinds.add(dialect)
    if not kinds:
        return EMPTY
    return TIR if kinds == {TIR} else OTHER


def serializer_for(ir: str, *, full_values: bool = False, small_elements: int = SMALL_TENSOR_ELEMENTS,
                   tir_bodies: bool = True) -> Serializer:
    """A new serializer for dialect ``ir`` (see :func:`module_ir`).

    Raises :class:`RelayVizSerializeError` for a dialect no serializer writes, and
    :class:`RelayVizDependencyError` when the installed TVM lacks what it needs (Relay on
    TVM 0.20 and later): the message says why, for ``relayviz show`` to repeat.
    """
    try:
        module, cls = SERIALIZERS[ir].split(":")
    except KeyError:
        raise RelayVizSerializeError(f"no serializer writes {ir!r} modules") from None
    try:
        found = importlib.import_module(f"{__name__}.{module}")
    except ImportError as exc:
        raise RelayVizDependencyError(f"the installed TVM cannot serialize {ir} modules: {exc}") from None
    serializer: Serializer = getattr(found, cls)(full_values=full_values, small_elements=small_elements,
                                                 tir_bodies=tir_bodies)
    return serializer


def to_relayviz(obj: Any, *, full_values: bool = False,
                small_elements: int = SMALL_TENSOR_ELEMENTS) -> Document:
    """Serialize an ``IRModule``, a function or an expression to a RelayViz document (a dict).

    Tensor constants with more than ``small_elements`` elements carry a content digest
    instead of their values unless ``full_values`` is true. The result is deterministic:
    the same module gives an equal document in every process.
    """
    import tvm

    if isinstance(obj, tvm.IRModule):
        ir = module_ir(obj)
        if ir == EMPTY:
            ir = _default_dialect()
        return serializer_for(ir, full_values=full_values, small_elements=small_elements).module(obj)
    if isinstance(obj, _expression_classes(tvm)):
        ir = _dialect(obj)
        if ir not in SERIALIZERS:
            ir = _default_dialect()
        return serializer_for(ir, full_values=full_values, small_elements=small_elements).expr(obj)
    raise RelayVizSerializeError(
        f"cannot serialize a {type(obj).__name__}: pass an IRModule, a function or an expression "
        "(Relay, Relax or TIR)")


def _expression_classes(tvm: Any) -> Tuple[type, ...]:
    # Relay's and Relax's expressions derive from RelayExpr (TVM <= 0.19); TVM 0.2x has one ir.Expr.
    return tuple(c for c in (getattr(tvm.ir, "RelayExpr", None), getattr(tvm.ir, "Expr", None), tvm.ir.BaseFunc)
                 if isinstance(c, type))


def _default_dialect() -> str:
    """The dialect of an expression whose class does not tell (TVM 0.2x shares Var, Call and
    Tuple between dialects): Relay where this TVM has it, else Relax."""
    return RELAY if importlib.util.find_spec("tvm.relay") is not None else RELAX


def dumps(obj: Any, *, indent: bool = False, full_values: bool = False) -> bytes:
    """Serialize ``obj`` (an IR object, or a document already made) to RelayViz JSON bytes."""
    doc = obj if isinstance(obj, dict) else to_relayviz(obj, full_values=full_values)
    return encode(doc, indent=indent)
