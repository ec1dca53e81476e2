"""Tracing a process without editing it: a :class:`ProcessTrace` in every pass context it enters,
and what each build returned recorded.

How it gets into every context, through TVM's Python API and no file of TVM:

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
- ``relay.build``, ``relay.vm.compile`` and ``relax.build`` (which ``tvm.compile`` calls for a
  Relax module; where they exist) are wrapped to record what they return, as ``record_graph``
  would.

Modules of TVM imported after :func:`start` are handled when their import ends (a finder on
``sys.meta_path``), so that starting costs nothing in a process that never imports TVM.
A trace records one thread: the first to enter a pass context (the one that starts tracing,
usually the main thread). Passes that other threads run are counted by thread, and the trace
names them as not recorded (TVM's pass contexts are per thread, and interleaving two
threads' passes would nest one thread's passes inside the other's). TVM's default context
is one per thread too, and only this thread's has the instrument: ``Pass.__call__`` is
wrapped so that a pass another thread calls outside any context is counted as unseen.

Everything installed here is process-wide on purpose (the process is what is traced): one
:class:`_Tracing` object holds it, and :func:`stop` takes it all away again.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import os
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Sequence

__all__ = ["start", "stop", "active", "start_from_environment", "ENV_TRACE", "ENV_TIR", "ENV_PASSES",
           "ENV_QUIET"]

#: The trace directory of a process traced from its environment (``RELAYVIZ_TRACE=DIR python s.py``).
ENV_TRACE = "RELAYVIZ_TRACE"
#: ``1``: also snapshot TIR-only modules (``relayviz run --tir``).
ENV_TIR = "RELAYVIZ_TRACE_TIR"
#: A regular expression on pass names: only those are snapshotted (``relayviz run --passes``).
ENV_PASSES = "RELAYVIZ_TRACE_PASSES"
#: ``1``: print nothing at exit (``relayviz run`` prints the pass table itself).
ENV_QUIET = "RELAYVIZ_TRACE_QUIET"

#: Functions whose result is what a compilation built, by the module that defines them.
_BUILDS = {"tvm.relay.build_module": "build", "tvm.relay.backend.vm": "compile", "tvm.relax.vm_build": "build"}
#: The packages that re-export them (``relay.build``, ``relax.build``: ``tvm.compile`` looks the
#: latter up there each time it runs).
_REEXPORTS = {"tvm.relay.build_module": ("tvm.relay",), "tvm.relax.vm_build": ("tvm.relax",)}


class _Tracing:
    """What :func:`start` installed: the trace (made when TVM is imported), and how to take each
    patch away again."""

    def __init__(self, out_dir: Any, options: Dict[str, Any]) -> None:
        self.out_dir = out_dir
        self.options = options
        self.trace: Any = None
        self.undo: List[Callable[[], None]] = []
        self.finder: Optional[_AfterImport] = None


_tracing: Optional[_Tracing] = None


def active() -> Any:
    """The :class:`ProcessTrace` this process records into, or None (none started, or TVM not
    imported yet)."""
    return _tracing.trace if _tracing is not None else None


def start(out_dir: Any = None, **options: Any) -> None:
    """Start tracing this process into ``out_dir`` (options as for :class:`RelayVizTrace`). The
    :class:`ProcessTrace` and its directory are made when TVM is imported (at once if it is
    already): a process that never imports TVM pays for nothing. Refused while a trace is active."""
    global _tracing
    from .errors import RelayVizUsageError

    if _tracing is not None:
        raise RelayVizUsageError("this process is traced already; stop() the active trace first")
    tracing = _Tracing(out_dir, options)
    _tracing = tracing
    actions: Dict[str, Callable[[ModuleType], None]] = {"tvm": lambda module: _install_contexts(tracing)}
    for name in _BUILDS:
        actions[name] = functools.partial(_wrap_build, tracing, name)
    waiting = {}
    for name, action in actions.items():
        if name in sys.modules and (name != "tvm" or "tvm.ir.transform" in sys.modules):
            action(sys.modules[name])
        else:
            waiting[name] = action
    if waiting:
        tracing.finder = _AfterImport(waiting)
        sys.meta_path.insert(0, tracing.finder)


def stop() -> Any:
    """Close the active trace (every open event ends, the close line is written) and take every
    patch away; return the trace, or None if none was made (no trace started, or TVM never
    imported)."""
    global _tracing
    tracing, _tracing = _tracing, None
    if tracing is None:
        return None
    if tracing.finder is not None and tracing.finder in sys.meta_path:
        sys.meta_path.remove(tracing.finder)
    for undo in reversed(tracing.undo):
        undo()
    if tracing.trace is not None:
        tracing.trace.finish()
    return tracing.trace


def start_from_environment() -> None:
    """Start tracing if ``RELAYVIZ_TRACE`` names a directory (the startup hook calls this), with
    ``RELAYVIZ_TRACE_TIR`` and ``RELAYVIZ_TRACE_PASSES``; the trace is closed at exit, and
    unless ``RELAYVIZ_TRACE_QUIET`` is set, one line on standard error says where it is."""
    out_dir = os.environ.get(ENV_TRACE)
    if not out_dir or _tracing is not None:
        return None
    start(out_dir, tir=os.environ.get(ENV_TIR) == "1", passes=os.environ.get(ENV_PASSES) or None)
    atexit.register(_stop_at_exit, os.environ.get(ENV_QUIET) == "1")


def _stop_at_exit(quiet: bool) -> None:
    trace = stop()
    if trace is None or quiet or trace.path is None:
        return
    sys.stderr.write(f"relayviz: {len(trace.records)} pass events traced in {trace.path} "
                     f"(relayviz show {trace.path})\n")


# -- pass contexts ---------------------------------------------------------------------------

def _install_contexts(tracing: _Tracing) -> None:
    """Put the trace into TVM's default context and into every PassContext made or entered."""
    from tvm import transform

    from .capture.contexts import context_instruments, hide_instruments
    from .capture.process_trace import ProcessTrace

    context_class = transform.PassContext
    trace = ProcessTrace(tracing.out_dir, **tracing.options)
    tracing.trace = trace
    made = context_class.__init__
    entered = context_class.__enter__
    exited = context_class.__exit__
    signature = inspect.signature(made)

    @functools.wraps(made)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if _tracing is tracing:
            bound = signature.bind(self, *args, **kwargs)
            given = list(bound.arguments.get("instruments") or [])
            if not any(_same(i, trace) for i in given):
                bound.arguments["instruments"] = [*given, trace]
            made(*bound.args, **bound.kwargs)
        else:
            made(self, *args, **kwargs)

    @functools.wraps(entered)
    def __enter__(self: Any) -> Any:
        if _tracing is tracing:
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
            if _tracing is tracing:
                trace.left(self)

    pass_class = transform.Pass
    run = pass_class.__call__

    def in_traced_context() -> bool:
        return any(_same(i, trace) for i in context_instruments(context_class.current()))

    @functools.wraps(run)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _tracing is tracing:  # another thread's passes outside any context: counted, as unseen
            trace.note_pass_called(in_traced_context)
        return run(self, *args, **kwargs)

    context_class.__init__ = __init__  # type: ignore[method-assign]
    context_class.__enter__ = __enter__  # type: ignore[method-assign]
    context_class.__exit__ = __exit__  # type: ignore[method-assign]
    pass_class.__call__ = __call__  # type: ignore[method-assign]

    def undo() -> None:
        context_class.__init__ = made  # type: ignore[method-assign]
        context_class.__enter__ = entered  # type: ignore[method-assign]
        context_class.__exit__ = exited  # type: ignore[method-assign]
        pass_class.__call__ = run  # type: ignore[method-assign]

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


# -- builds ----------------------------------------------------------------------------------

def _wrap_build(tracing: _Tracing, module_name: str, module: ModuleType) -> None:
    """Wrap the build function of ``module`` (and its re-exports) to record what it returns."""
    attribute = _BUILDS[module_name]
    original = getattr(module, attribute, None)
    if original is None:
        return

    @functools.wraps(original)
    def traced(*args: Any, **kwargs: Any) -> Any:
        built = original(*args, **kwargs)
        if _tracing is tracing and tracing.trace is not None:
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


class _AfterImport:
    """A ``sys.meta_path`` finder that runs an action on a module when its import ends.

    It finds the module with the finders after it and wraps its loader's ``exec_module``; it
    never loads anything itself, and forgets each name once its action ran."""

    def __init__(self, actions: Dict[str, Callable[[ModuleType], None]]) -> None:
        self._actions = actions

    def find_spec(self, name: str, path: Optional[Sequence[str]], target: Any = None) -> Optional[ModuleSpec]:
        action = self._actions.get(name)
        if action is None:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module
        actions = self._actions

        def exec_module(module: ModuleType) -> None:
            run(module)
            if actions.pop(name, None) is None:
                return
            try:
                action(module)
            except Exception as exc:  # never break the script's import: it runs untraced, and says so
                sys.stderr.write(f"relayviz: {name} is not traced: {type(exc).__name__}: {exc}\n")

        try:
            loader.exec_module = exec_module
        except AttributeError:  # a loader that takes no attributes: the module is not watched
            return spec
        return spec
