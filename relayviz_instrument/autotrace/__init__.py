"""Tracing a whole process without editing it: one home for ``relayviz run``, ``RELAYVIZ_TRACE``
and ``pytest --relayviz-trace``. A :class:`ProcessTrace` is put into every pass context the
process enters, and what each build returned is recorded::

    __init__.py       start / stop / active / start_from_environment: the process's one tracing
    patches.py        what start() changes in TVM (pass contexts, passes, builds), and its undoing
    after_import.py   the finder that applies the patches when TVM's modules are imported
    process_trace.py  ProcessTrace: every pass context of the process, each a section of one trace
    environment.py    RELAYVIZ_TRACE and the variables beside it
    run.py            ``relayviz run``'s use case: a command run with its process traced
    pytest_option.py  ``pytest --relayviz-trace``: each test traced into a folder of its own
    startup/          the startup hook: the ``sitecustomize`` ``relayviz run`` puts on the
                      command's path, and the ``.pth`` an install puts into site-packages

Modules of TVM imported after :func:`start` are handled when their import ends (a finder on
``sys.meta_path``), so that starting costs nothing in a process that never imports TVM.
A trace records one thread: the first to enter a pass context (the one that starts tracing,
usually the main thread). Passes that other threads run are counted by thread, and the trace
names them as not recorded (TVM's pass contexts are per thread, and interleaving two
threads' passes would nest one thread's passes inside the other's).

Everything installed here is process-wide on purpose (the process is what is traced): one
:class:`~relayviz_instrument.autotrace.patches.Tracing` object holds it, and :func:`stop`
takes it all away again. This package imports TVM (and ``capture/``) only once the process
imports TVM; nothing in ``capture/`` imports it.
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from .environment import ENV_PASSES, ENV_QUIET, ENV_TIR, ENV_TRACE
from .after_import import AfterImport
from .patches import BUILDS, Tracing, install_contexts, wrap_build

if TYPE_CHECKING:  # imported with TVM, when TVM is
    from .process_trace import ProcessTrace

__all__ = ["start", "stop", "active", "start_from_environment", "ENV_TRACE", "ENV_TIR", "ENV_PASSES",
           "ENV_QUIET"]

#: The process's tracing, while one is started (``relayviz doctor`` reads it in a new process).
_tracing: Optional[Tracing] = None


def active() -> Optional[ProcessTrace]:
    """The :class:`ProcessTrace` this process records into, or None (none started, or TVM not
    imported yet)."""
    return _tracing.trace if _tracing is not None else None


def start(out_dir: Any = None, **options: Any) -> None:
    """Start tracing this process into ``out_dir`` (options as for :class:`RelayVizTrace`). The
    :class:`ProcessTrace` and its directory are made when TVM is imported (at once if it is
    already): a process that never imports TVM pays for nothing. Refused while a trace is active."""
    global _tracing
    from ..errors import RelayVizUsageError

    if _tracing is not None:
        raise RelayVizUsageError("this process is traced already; stop() the active trace first")
    tracing = Tracing(out_dir, options)
    _tracing = tracing
    actions: Dict[str, Callable[[ModuleType], None]] = {"tvm": lambda module: install_contexts(tracing)}
    for name in BUILDS:
        actions[name] = functools.partial(wrap_build, tracing, name)
    waiting = {}
    for name, action in actions.items():
        if name in sys.modules and (name != "tvm" or "tvm.ir.transform" in sys.modules):
            action(sys.modules[name])
        else:
            waiting[name] = action
    if waiting:
        tracing.finder = AfterImport(waiting)
        sys.meta_path.insert(0, tracing.finder)


def stop() -> Optional[ProcessTrace]:
    """Close the active trace (every open event ends, the close line is written) and take every
    patch away; return the trace, or None if none was made (no trace started, or TVM never
    imported)."""
    global _tracing
    tracing, _tracing = _tracing, None
    if tracing is None:
        return None
    tracing.on = False
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
