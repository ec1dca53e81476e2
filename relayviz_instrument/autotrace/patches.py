"""What :func:`~relayviz_instrument.autotrace.start` changes in TVM, through its Python API and no
file of TVM, and how each change is undone:

- TVM's default pass context (current outside any ``with PassContext``) gets the instrument
  with ``PassContext.override_instruments``, so passes run outside a ``with`` block are seen;
- every ``PassContext`` made afterwards is made with the instrument added to its
  ``instruments`` argument (``PassContext.__init__`` is wrapped at the Python level), so the
  contexts a library opens for itself (``relay.quantize``, a frontend, a test helper) are seen;
- ``PassContext.__enter__`` is wrapped to tell the instrument where each context is opened,
  and to say in the trace when a context made before tracing began is entered (its passes
  cannot be seen); ``__exit__`` to end the context's section when TVM never told the trace
  the context was left (an instrument listed before it raised in ``exit_pass_ctx``);
- the instrument is invisible to the program: ``PassContext.instruments`` reads, in every
  context, as it would untraced (``capture/contexts.py``), so a program (or TVM's own tests)
  checking a context's instruments finds only its own;
- ``Pass.__call__`` is wrapped so that a pass another thread calls outside any context is
  counted as unseen (TVM's default context is one per thread, and only this thread's has the
  instrument);
- ``relay.build``, ``relay.vm.compile`` and ``relax.build`` (which ``tvm.compile`` calls for a
  Relax module; where they exist) are wrapped to record what they return, as ``record_graph``
  would.

Every wrapper does its part only while its :class:`Tracing` is on: :func:`stop` turns it off
first, then undoes the changes.
"""

from __future__ import annotations

import functools
import inspect
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from .after_import import AfterImport

if TYPE_CHECKING:  # imported with TVM, when TVM is (see install_contexts)
    from .process_trace import ProcessTrace

__all__ = ["Tracing", "BUILDS", "install_contexts", "wrap_build"]

#: Functions whose result is what a compilation built, by the module that defines them.
BUILDS = {"tvm.relay.build_module": "build", "tvm.relay.backend.vm": "compile", "tvm.relax.vm_build": "build"}
#: The packages that re-export them (``relay.build``, ``relax.build``: ``tvm.compile`` looks the
#: latter up there each time it runs).
_REEXPORTS = {"tvm.relay.build_module": ("tvm.relay",), "tvm.relax.vm_build": ("tvm.relax",)}


class Tracing:
    """What :func:`~relayviz_instrument.autotrace.start` installed: the trace (made when TVM is
    imported), whether its wrappers act (``on``), and how to take each change away again."""

    def __init__(self, out_dir: Any, options: Dict[str, Any]) -> None:
        self.out_dir = out_dir
        self.options = options
        self.trace: Optional[ProcessTrace] = None
        #: Whether this is the process's active tracing: its wrappers act only then.
        self.on = True
        self.undo: List[Callable[[], None]] = []
        self.finder: Optional[AfterImport] = None


def install_contexts(tracing: Tracing) -> None:
    """Put the trace into TVM's default context and into every PassContext made or entered."""
    from tvm import transform

    from ..capture.contexts import context_instruments, hide_instruments
    from .process_trace import ProcessTrace

    context_class = transform.PassContext
    trace = ProcessTrace(tracing.out_dir, **tracing.options)
    tracing.trace = trace
    made = context_class.__init__
    entered = context_class.__enter__
    exited = context_class.__exit__
    signature = inspect.signature(made)

    @functools.wraps(made)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if tracing.on:
            bound = signature.bind(self, *args, **kwargs)
            given = list(bound.arguments.get("instruments") or [])
            if not any(_same(i, trace) for i in given):
                bound.arguments["instruments"] = [*given, trace]
            made(*bound.args, **bound.kwargs)
        else:
            made(self, *args, **kwargs)

    @functools.wraps(entered)
    def __enter__(self: Any) -> Any:
        if tracing.on:
            caller = sys._getframe(1)
            where = f"{caller.f_code.co_filename}:{caller.f_lineno}"
            if any(_same(i, trace) for i in context_instruments(self)):
                trace.opening(self, where)
            else:
                trace.note_unseen(f"a pass context made before tracing began was entered at {where}: "
                                  "its passes are not in the trace")
        return entered(self)

    @functools.wraps(exited)
    def __exit__(self: Any, *exc_info: Any) -> Any:
        try:
            return exited(self, *exc_info)
        finally:
            if tracing.on:
                trace.left(self)

    pass_class = transform.Pass
    run = pass_class.__call__

    def in_traced_context() -> bool:
        return any(_same(i, trace) for i in context_instruments(context_class.current()))

    @functools.wraps(run)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if tracing.on:  # another thread's passes outside any context: counted, as unseen
            trace.note_pass_called(in_traced_context)
        return run(self, *args, **kwargs)

    context_class.__init__ = __init__
    context_class.__enter__ = __enter__
    context_class.__exit__ = __exit__
    pass_class.__call__ = __call__

    def undo() -> None:
        context_class.__init__ = made
        context_class.__enter__ = entered
        context_class.__exit__ = exited
        pass_class.__call__ = run

    tracing.undo.append(undo)
    tracing.undo.append(hide_instruments(context_class, lambda instrument: _same(instrument, trace)))
    default = context_class.current()
    before = context_instruments(default)
    default.override_instruments([*before, trace])

    def leave_default() -> None:
        current = context_instruments(default)
        default.override_instruments([i for i in current if not _same(i, trace)])

    tracing.undo.append(leave_default)


def _same(instrument: Any, trace: Any) -> bool:
    """Whether an instrument of a context is ``trace`` (TVM may hand back another Python object
    for the same instrument)."""
    return instrument is trace or (hasattr(instrument, "same_as") and bool(instrument.same_as(trace)))


def wrap_build(tracing: Tracing, module_name: str, module: ModuleType) -> None:
    """Wrap the build function of ``module`` (and its re-exports) to record what it returns."""
    attribute = BUILDS[module_name]
    original = getattr(module, attribute, None)
    if original is None:
        return

    @functools.wraps(original)
    def traced(*args: Any, **kwargs: Any) -> Any:
        built = original(*args, **kwargs)
        if tracing.on and tracing.trace is not None:
            tracing.trace.record_built(built)
        return built

    def holders() -> List[ModuleType]:
        # found again when undone: a package still importing when the function was wrapped (tvm.relay
        # while tvm.relay.build_module ran) binds the wrapper later, and must get the original back
        return [module] + [sys.modules[p] for p in _REEXPORTS.get(module_name, ()) if p in sys.modules]

    for holder in holders():
        if getattr(holder, attribute, None) is original:
            setattr(holder, attribute, traced)

    def undo() -> None:
        for holder in holders():
            if getattr(holder, attribute, None) is traced:
                setattr(holder, attribute, original)

    tracing.undo.append(undo)
