"""The one guard around the instrument's own work: every TVM callback of :class:`RelayVizTrace`
(and what RelayVizBisect and the user call on it) runs inside it.

It does three things, the same way for every callback (and a fourth on request):

- it times the callback: the instrument's own seconds (``instrument_seconds``, the manifest's
  ``instrument_ms``), which a pass's duration leaves out;
- an ``Exception`` becomes the trace's failure (the instrument's ``fail``: one
  :class:`~relayviz_instrument.errors.TraceIncompleteWarning` naming the pass, the trace marked
  incomplete, recording stopped; ``strict=True`` raises it instead), so the compilation goes on
  exactly as without the instrument;
- any other ``BaseException`` (Ctrl-C, ``SystemExit``) is raised again as
  :class:`~relayviz_instrument.errors.CompilationInterrupted`: TVM's FFI drops a bare
  ``KeyboardInterrupt`` raised in a Python callback (hhb-tvm turns it into an unrelated
  ``InternalError``), and carries this one to the caller;
- it pauses Python's cyclic garbage collector while a snapshot is made (:meth:`InstrumentGuard.pause_gc`),
  and sees that it is on again when the call ends, whatever ended it.

A guard is a plain class with ``__slots__`` rather than ``contextlib.contextmanager``: it runs
twice per pass event, thousands of times in one ``relay.build``, and a generator-based context
manager costs about twice as much per use.
"""

from __future__ import annotations

import gc
import time
from types import TracebackType
from typing import Any, Callable, Optional, Protocol, Type, Union

from ..errors import CompilationInterrupted

__all__ = ["InstrumentGuard", "GuardedCall", "PassClock", "carried_interruption"]


def _register_with_the_ffi() -> None:
    """Have TVM 0.2x's FFI (tvm-ffi) rebuild a CompilationInterrupted that crossed it as one:
    it rebuilds an exception raised in a callback by its class name, and one it does not know
    becomes a RuntimeError, which ``except KeyboardInterrupt`` does not catch. TVM 0.19 and
    older carry the Python object itself."""
    try:
        from tvm_ffi import register_error
    except ImportError:
        return
    register_error(CompilationInterrupted)


_register_with_the_ffi()


class PassClock(Protocol):
    """A pass whose own time starts when the callback that began it ends: its start, and the
    instrument's seconds at that moment (what the instrument spends later is subtracted)."""

    started: float
    overhead_at_start: float


class _Named(Protocol):
    """What TVM hands a callback about its pass (``PassInfo``): only its name is read."""

    @property
    def name(self) -> Any: ...


#: Where a guarded call runs: a pass (its ``PassInfo``, named only if something fails) or a
#: phrase such as ``"(entering the pass context)"``.
Where = Union[str, _Named]


class _Fail(Protocol):
    def __call__(self, exc: Exception, pass_name: str, *, stacklevel: int) -> None: ...


class InstrumentGuard:
    """The guard of one trace: the seconds its callbacks took, and what to do when one fails.

    ``fail(exc, pass_name, stacklevel=...)`` turns an exception into the trace's failure (and
    raises it under ``strict``). Call the guard to get the context manager of one callback:
    ``with guard(info): ...``.

    The guard hands out the same :class:`GuardedCall` again and again: a new object per
    callback makes the garbage collector run more often, and each full collection walks every
    record of the trace so far. A guarded call made while that one is in use (a progress
    callback that records a graph) gets an object of its own.
    """

    __slots__ = ("seconds", "_fail", "_spare", "_gc_paused")

    def __init__(self, fail: _Fail) -> None:
        #: Wall time spent inside guarded calls so far.
        self.seconds = 0.0
        self._fail = fail
        self._spare: Optional[GuardedCall] = GuardedCall(self)
        #: The garbage collector is off, by pause_gc, until resume_gc.
        self._gc_paused = False

    def __call__(self, where: Where, *, then: Optional[Callable[[], None]] = None,
                 stacklevel: int = 3) -> GuardedCall:
        """The guard of one call at ``where``. ``then`` runs when the call ends, whatever
        happened, after a failure was recorded and before the time is counted (the pass
        context's exit closes the trace there). ``stacklevel`` is the warning's, counted from
        the guard's exit: 3 points at the function holding the ``with`` (a callback), 4 at its
        caller (``record_graph``, a method the user calls)."""
        call = self._spare
        if call is None:  # a guarded call inside another one
            call = GuardedCall(self)
        else:
            self._spare = None
        call._where, call._then, call._stacklevel = where, then, stacklevel
        return call

    def pause_gc(self) -> None:
        """Turn the garbage collector off until :meth:`resume_gc` (unless the process has it off),
        around a snapshot, inside a guarded call.

        A snapshot makes tens of thousands of short-lived dicts and lists. Every 700 allocations
        start a collection, every tenth of those a bigger one, and those lead to full collections
        that walk every object of the user's process (a PyTorch process holds millions): a
        ``tir=True`` trace of a ResNet-18 ran three more of them, about a second. Paused, what
        the snapshot left is collected once, after it. Reference counting still frees what it
        frees, and the guarded call's end resumes the collector if an interruption skipped
        :meth:`resume_gc`: it is on again before the pass goes on.
        """
        if gc.isenabled():
            self._gc_paused = True  # first: whatever comes next, the call's end resumes it
            gc.disable()

    def resume_gc(self) -> None:
        """Turn the garbage collector on again if :meth:`pause_gc` turned it off."""
        if self._gc_paused:
            gc.enable()
            self._gc_paused = False


class GuardedCall:
    """The context manager of one guarded call (handed out by :class:`InstrumentGuard`)."""

    __slots__ = ("_guard", "_where", "_then", "_stacklevel", "started", "_clock")

    def __init__(self, guard: InstrumentGuard) -> None:
        self._guard = guard
        self._where: Where = ""
        self._then: Optional[Callable[[], None]] = None
        self._stacklevel = 3
        #: When the call began (``time.perf_counter()``).
        self.started = 0.0
        self._clock: Optional[PassClock] = None

    def __enter__(self) -> GuardedCall:
        self.started = time.perf_counter()
        return self

    def starts(self, clock: PassClock) -> None:
        """Start ``clock`` (a pass that began in this call) when the call ends, even if it is
        interrupted: an interrupted pass is ended, with its duration, when the context exits."""
        self._clock = clock

    def __exit__(self, kind: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> bool:
        guard = self._guard
        guard.resume_gc()  # a snapshot an interruption or a failure cut short leaves it paused
        try:
            if exc is None:
                return False
            if isinstance(exc, Exception):
                # stacklevel 3: the warning points at the callback, not at this guard.
                guard._fail(exc, _name(self._where), stacklevel=self._stacklevel)
                return True
            raise carried_interruption(exc, self._where) from exc
        finally:
            if self._then is not None:
                self._run_then()
            now = time.perf_counter()
            guard.seconds += now - self.started
            if self._clock is not None:
                self._clock.started, self._clock.overhead_at_start = now, guard.seconds
            # Back to the guard, holding nothing: a pass's module must not outlive its event here.
            self._where, self._then, self._clock = "", None, None
            guard._spare = self

    def _run_then(self) -> None:
        """Run ``then`` (closing the trace): a Ctrl-C landing in it is carried, not dropped by TVM."""
        assert self._then is not None
        try:
            self._then()
        except Exception:
            raise
        except BaseException as late:
            raise carried_interruption(late, self._where) from late


def carried_interruption(exc: BaseException, where: Where) -> BaseException:
    """The exception to raise for a ``KeyboardInterrupt`` (or ``SystemExit``) that arrived
    inside a callback at ``where`` (its PassInfo, or a phrase): one TVM carries to the caller
    instead of dropping it. An ``Exception`` (CompilationInterrupted among them) is itself.

    Every callback's first statement is a ``try`` ending in this: a Ctrl-C that came while TVM's
    C++ code ran is pending when TVM calls back into Python, and CPython 3.10 handles it at the
    callback's first instruction unless that instruction begins a ``try`` block: it then fires
    inside the block, where it is carried. (CPython 3.11 handles it before any instruction;
    the trace then learns of it afterwards, see ``own_callback_that_raised``.)"""
    if isinstance(exc, Exception):
        return exc
    carried = CompilationInterrupted(f"{type(exc).__name__} during pass {_name(where)} "
                                     "(raised again by relayviz so that TVM passes it on)")
    carried.original = exc
    return carried


def _name(where: Where) -> str:
    if isinstance(where, str):
        return where
    try:
        return str(where.name)
    except Exception:  # a name that cannot be read must not hide the interruption
        return "(unknown)"
