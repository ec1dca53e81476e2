"""A trace's life: opened when its pass context is entered (the header line, the store: a new
directory, the one given, or memory), closed when the context exits (every open event ended,
the close line written), and stopped for good when the instrument fails.

The exit may never reach the trace: an instrument listed before it raised in
``exit_pass_ctx`` (TVM then calls no later one), a Ctrl-C cut the callback short, or the
process ended inside the context. The trace is then closed later, saying so: when the built
graph is recorded (``record_graph``), or when the process ends (every trace whose context was
entered and has not exited is kept here for that).
"""

from __future__ import annotations

import atexit
import os
import sys
import time
import warnings
import weakref
from pathlib import Path
from typing import Any, Callable, Literal, Optional, Tuple, Union

import tvm

from .._version import __version__
from ..errors import TraceIncompleteWarning
from ..store import DirectoryStore, MemoryStore, TraceSink, new_trace_dir
from .contexts import context_instruments
from .events import PassEvents
from .guard import InstrumentGuard
from .pass_frames import ENDED_INSIDE, ENTRY_INTERRUPTED, EXIT_NEVER_CAME
from .snapshotter import Snapshotter
from .threads import RecordedThread

__all__ = ["TraceLifecycle", "OutDir"]

#: Where a trace goes: a directory, None (a new ``relayviz-trace/<timestamp>/``) or False (memory).
OutDir = Union[str, "os.PathLike[str]", None, Literal[False]]


class TraceLifecycle:
    """Opens, closes and stops one trace.

    ``owner``: the instrument (what the current pass context is asked about, whose ``strict``
    lets failures propagate); ``events``: its events, whose sink is made here; ``thread``: the
    thread it records (what it missed of others is said at the close); ``snapshots``: its
    options, in the header; ``guard``: the guard of its callbacks; ``release``: drops what pins
    IR objects, once recording stops.
    """

    def __init__(self, owner: Any, out_dir: OutDir, events: PassEvents, thread: RecordedThread,
                 snapshots: Snapshotter, guard: InstrumentGuard, release: Callable[[], None]) -> None:
        self._owner = owner
        self._out_dir = out_dir
        self._events = events
        self._thread = thread
        self._snapshots = snapshots
        self._guard = guard
        self._release = release
        #: The trace directory, once the pass context was entered (None for memory traces).
        self.path: Optional[Path] = None
        #: How many times the pass context was entered and not exited (a process trace: how
        #: many of its contexts are open).
        self.entered = 0
        #: The close line was written: nothing more is recorded.
        self.finished = False
        #: The instrument failed: nothing more is recorded.
        self.disabled = False
        #: Where an interruption (Ctrl-C) cut enter_pass_ctx or exit_pass_ctx short, before the
        #: trace was closed (then TVM calls no exit, or the exit never closed it): ``entering`` or
        #: ``leaving`` and the exception's class. The trace is closed later, and says so.
        self.context_cut: Optional[Tuple[str, str]] = None

    def open(self) -> None:
        """Make the trace's store and write its header line."""
        snapshots = self._snapshots
        header = {
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "relayviz_instrument": __version__,
            "tvm": getattr(tvm, "__version__", "unknown"),
            "python": sys.version.split()[0],
            "options": {"passes": snapshots.passes.pattern if snapshots.passes else None,
                        "exclude": snapshots.exclude.pattern if snapshots.exclude else None,
                        "tir": snapshots.tir, "full_values": snapshots.full_values},
        }
        if self._out_dir is False:
            self._events.sink = TraceSink(MemoryStore(), header)
            return
        path = new_trace_dir() if self._out_dir is None else Path(self._out_dir)
        self._events.sink = TraceSink(DirectoryStore(path), header)
        self.path = path

    def closed_at_exit(self) -> None:
        """Close the trace when the process ends if its pass context's exit never reaches it."""
        _OPEN.add(self)

    def fail(self, exc: BaseException, pass_name: str, *, stacklevel: int = 2) -> None:
        """The instrument failed: the trace is incomplete and recording stops, with one warning
        naming the pass (``stacklevel`` points it at the callback); ``strict`` raises instead."""
        if self._owner.strict:
            raise exc
        events = self._events
        first = not events.problems
        events.complete = False
        events.problems.append(f"the instrument failed in pass {pass_name}: {type(exc).__name__}: {exc}")
        self.disabled = True
        self._release()
        if first:
            where = f" (trace: {self.path})" if self.path is not None else ""
            warnings.warn(f"relayviz: recording stopped at pass {pass_name}: {type(exc).__name__}: {exc}; "
                          f"the compilation goes on, the trace is incomplete{where}",
                          TraceIncompleteWarning, stacklevel=stacklevel)

    def in_current_context(self) -> bool:
        """Whether the instrument is one of the current PassContext's."""
        try:
            return any(i.same_as(self._owner) for i in context_instruments(tvm.transform.PassContext.current()))
        except Exception:  # cannot tell: the context is taken to be still open
            return True

    def exit_never_came(self, why: str, *, exited: bool = False) -> None:
        """Close the trace whose pass context's exit never reached it, saying ``why``. When the
        context was left (``exited``: it is no longer current) after every event had ended,
        nothing is missing from the trace: ``why`` is a note, and the trace complete."""
        if self.finished:
            return
        self.entered = 0
        events = self._events
        with self._guard("(closing the trace)", then=self.finish):
            if self.context_cut is not None:  # not another instrument: the user interrupted
                when, how = self.context_cut
                why = ENTRY_INTERRUPTED if when == "entering" else (
                    f"the compilation was interrupted ({how}) as its pass context exited; the trace was closed "
                    "later")
            elif exited and not events.stack and not self.disabled:
                events.notes.append(f"{why}; every pass event had ended by then, so the trace misses nothing")
                return
            events.complete = False
            events.problems.append(why)
            if not self.disabled and events.sink is not None:
                events.close_open_passes(None)

    def finish(self) -> None:
        """Close the trace: its last line, and nothing that pins IR objects kept. An interruption
        (Ctrl-C) landing here is let through once the trace is closed all the same."""
        try:
            self._finish_once()
        except (KeyboardInterrupt, SystemExit):
            self._finish_once()  # does what the first did not: the close line is written once
            raise

    def _finish_once(self) -> None:
        self.finished = True
        _OPEN.discard(self)
        events = self._events
        missed = [m for m in self._thread.missed() if m not in events.problems]
        if missed:
            events.complete = False
            events.problems.extend(missed)
        if events.sink is not None:
            try:
                events.sink.close(complete=events.complete, problems=events.problems, events=len(events.records),
                                  build_failure=events.build_failure, notes=events.notes,
                                  instrument_ms=1000.0 * self._guard.seconds)
            except Exception as exc:
                if self._owner.strict:
                    raise
                if not events.problems:
                    self.fail(exc, "(closing the trace)")
        # Keep the sink for reading snapshots back; drop everything that pins IR objects.
        self._release()


#: Traces whose pass context was entered and has not exited.
_OPEN: "weakref.WeakSet[TraceLifecycle]" = weakref.WeakSet()


@atexit.register
def _close_unexited() -> None:
    """At the process's end, close every trace whose pass context's exit never came, saying why."""
    for life in list(_OPEN):
        if life.in_current_context():
            life.exit_never_came(ENDED_INSIDE)
        else:
            life.exit_never_came(EXIT_NEVER_CAME.format(when="when the process ended"), exited=True)
