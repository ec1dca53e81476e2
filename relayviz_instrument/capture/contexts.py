"""A PassContext's instruments as TVM holds them, and as a traced program is shown them.

A process trace (``relayviz run``, ``RELAYVIZ_TRACE``, ``pytest --relayviz-trace``) is put into
every pass context of the process, TVM's default one included. The traced program must not see
it: code that reads ``PassContext.current().instruments`` (TVM's own tests check that a context
whose instrument failed is left with none) reads what it would untraced. So the class attribute
``PassContext.instruments`` is replaced, while a process is traced, by :class:`HiddenInstruments`,
which leaves out the instruments it is told to hide; TVM's C++ side, which calls the
instruments, is untouched. The trace's own code reads the real list with
:func:`context_instruments`.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

import tvm

from ..errors import RelayVizDependencyError

__all__ = ["context_instruments", "HiddenInstruments", "hide_instruments"]

#: TVM <= 0.19 reads a reflected field through ``NodeGetAttr`` once Python's own lookup failed.
_NODE_GET_ATTR: Optional[Callable[[Any, str], Any]] = getattr(getattr(tvm.runtime, "_ffi_node_api", None),
                                                              "NodeGetAttr", None)


def _reader(found: Any) -> Callable[[Any], Any]:
    """How to read the instruments past ``found`` (what the class holds under the name now)."""
    if isinstance(found, HiddenInstruments):
        return found.read
    if found is not None and hasattr(found, "__get__"):  # TVM 0.2x: a tvm-ffi field property
        return lambda context: found.__get__(context, type(context))
    if _NODE_GET_ATTR is None:
        raise RelayVizDependencyError("this TVM's PassContext has no instruments field relayviz can read: tracing a "
                                      "whole process needs a TVM whose PassContext exposes its instruments")
    node_get_attr = _NODE_GET_ATTR
    return lambda context: node_get_attr(context, "instruments")


def context_instruments(context: Any) -> List[Any]:
    """Every instrument of ``context``, those hidden from the traced program included."""
    return list(_reader(type(context).__dict__.get("instruments"))(context) or ())


class HiddenInstruments:
    """The ``instruments`` of a PassContext without those ``hidden(instrument)`` says to leave
    out: an array of TVM's (what reading the field gives) when nothing is left out, a new one
    otherwise."""

    def __init__(self, read: Callable[[Any], Any], hidden: Callable[[Any], bool]) -> None:
        self.read = read
        self.hidden = hidden

    def __get__(self, context: Any, owner: Any = None) -> Any:
        if context is None:
            return self
        found = self.read(context)
        if not found or not any(self.hidden(i) for i in found):
            return found
        return tvm.runtime.convert([i for i in found if not self.hidden(i)])


def hide_instruments(context_class: Any, hidden: Callable[[Any], bool]) -> Callable[[], None]:
    """Show the program ``context_class``'s instruments without those ``hidden`` says; returns
    what puts the class back as it was."""
    own = context_class.__dict__.get("instruments")
    context_class.instruments = HiddenInstruments(_reader(own), hidden)

    def undo() -> None:
        if own is None:
            delattr(context_class, "instruments")
        else:
            context_class.instruments = own

    return undo
