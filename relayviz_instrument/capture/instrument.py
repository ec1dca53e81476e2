"""RelayVizTrace: the pass instrument. It adapts TVM's callbacks to the trace and does
nothing else: each callback runs in the guard (guard.py) and hands its event to the recorder
(recording.py: the pass's record, its snapshots through the policy, its input kept for replay),
which drives the events' state machine (events.py: the records, the open events, the rules that
end those TVM does not); the trace is opened, closed and stopped by its lifecycle
(lifecycle.py); what a compilation built is artifacts.py's, where the trace goes the sink's
(store/), and what the passes did is derived when the trace is read.

How it stays harmless. Every callback runs inside one guard: a failure inside the instrument
(a serializer bug, a full disk, an unwritable directory) becomes one
:class:`TraceIncompleteWarning` naming the pass, the trace is marked incomplete, the
instrument stops recording, and the compilation goes on exactly as without it. With
``strict=True`` the exception propagates instead. The instrument never implements
``should_run``, so it cannot skip a pass (:class:`~relayviz_instrument.capture.RelayVizBisect`
does, and tells the trace what it skipped).

Ctrl-C is the one exception the instrument does not keep to itself: TVM's FFI drops a
``KeyboardInterrupt`` raised inside a Python callback (the compilation goes on, or TVM
crashes), so one that arrives while a callback runs is raised again as
:class:`~relayviz_instrument.errors.CompilationInterrupted`, a ``KeyboardInterrupt`` TVM carries
to the caller (the guard does both, and times the callback). Whatever point a callback stopped
at, the pass context's exit ends every event that began, so the manifest never holds an event
left half-open.

When a pass raises, the trace also keeps that pass's input module as ``tvm.ir.save_json``
wrote it, with the PassContext and the target (``reproducer.py``): written only then, it
costs nothing otherwise. ``keep_modules`` keeps them before chosen passes run as well.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence, Union

import tvm

from ..errors import CompilationInterrupted, RelayVizTraceError, RelayVizUsageError
from ..format import Document
from ..store import PassRecord
from .artifacts import artifact_document, record_artifact, without_graph
from .guard import InstrumentGuard, carried_interruption
from .lifecycle import TraceLifecycle
from .pass_frames import ENTRY_INTERRUPTED, EXIT_NEVER_CAME, caller_frame
from .recording import PassRecorder
from .snapshotter import Snapshotter, pass_pattern
from .threads import RecordedThread

__all__ = ["RelayVizTrace"]


class _PlainAttributes:
    """A plain Python base: it gives instances the ``__dict__`` that TVM 0.2x's object classes
    (tvm-ffi, ``__slots__`` all the way down) do not have. TVM's own ``pass_instrument``
    decorator builds its instruments the same way."""


class RelayVizTrace(_PlainAttributes, tvm.instrument.PassInstrument):  # type: ignore[misc]  # TVM's classes are Any (pyproject.toml)
    """A pass instrument that records every pass event of a compilation as a trace.

    ``out_dir``: where the trace goes. ``None`` (the default) makes a new
    ``relayviz-trace/<timestamp>/`` in the working directory when the pass context is
    entered; ``False`` keeps everything in memory. Either way ``trace.records`` holds the
    records and ``trace.snapshot(ref)`` the documents.

    ``passes`` / ``exclude``: regular expressions (``re.search``) on pass names; a pass left
    out is counted and timed, but not compared or snapshotted. ``tir``: also snapshot modules
    that hold only TIR PrimFuncs. ``strict``: let exceptions inside the instrument
    propagate. ``full_values``: write every constant's values. ``progress``: called with
    each :class:`PassRecord` when its pass ends (the CLI uses it for its progress display).
    ``keep_modules``: regular expressions on pass names whose input module is kept in TVM's
    own form (``tvm.ir.save_json``) before the pass runs, so that ``relayviz replay --pass``
    can run them again; it copies every weight bound in the module, once per distinct module.
    The input of a pass that raises is kept in any case.

    The graph ``relay.build`` returns is not a pass's output: record it with
    :meth:`record_graph` (``trace_build`` does).
    """

    def __init__(
        self,
        out_dir: Union[str, "os.PathLike[str]", None, bool] = None,
        *,
        passes: Union[str, Sequence[str], None] = None,
        exclude: Union[str, Sequence[str], None] = None,
        tir: bool = False,
        strict: bool = False,
        full_values: bool = False,
        progress: Optional[Callable[[PassRecord], None]] = None,
        keep_modules: Union[str, Sequence[str], None] = None,
    ) -> None:
        if out_dir is True:
            raise RelayVizUsageError("out_dir must be a path, None (a new relayviz-trace/<timestamp>/) or False")
        self._snapshots = Snapshotter(pass_pattern(passes, "passes"), pass_pattern(exclude, "exclude"), tir=tir,
                                      full_values=full_values)
        keep = pass_pattern(keep_modules, "keep_modules")
        self.strict = strict
        #: Times every callback and keeps its failures from the compilation.
        self._guard = InstrumentGuard(self._fail)
        self._recorder = PassRecorder(self, self._snapshots, keep, progress, self._guard)
        #: The records, the open events, the sink, and what the close line will say.
        self._events = self._recorder.events
        #: The thread the trace records, and what it counts of the others.
        self._thread = RecordedThread()
        self._life = TraceLifecycle(self, out_dir, self._events, self._thread, self._snapshots, self._guard,
                                    self._recorder.release)
        super().__init__()

    # -- comparing (``assert trace == relayviz_snapshot``) -------------------------------------

    def __eq__(self, other: object) -> bool:
        """A trace is equal to itself; compared with anything else (a regression snapshot),
        it lets the other side answer, as Python does when ``==`` returns NotImplemented.
        TVM's objects answer ``==`` by identity themselves and never ask the other side."""
        if isinstance(other, RelayVizTrace):
            return self is other
        return NotImplemented

    def __hash__(self) -> int:
        return id(self)

    # -- reading the trace ------------------------------------------------------------------

    @property
    def records(self) -> List[PassRecord]:
        """Every pass event so far, in the order the passes started."""
        return self._events.records

    @property
    def complete(self) -> bool:
        """False once the trace misses something (the instrument failed, a callback was cut
        short, ...); ``problems`` says what."""
        return self._events.complete

    @complete.setter
    def complete(self, value: bool) -> None:
        self._events.complete = value

    @property
    def problems(self) -> List[str]:
        """Why the trace is incomplete (written in its close line)."""
        return self._events.problems

    @property
    def notes(self) -> List[str]:
        """What a reader should know of the trace, complete or not (written in its close line)."""
        return self._events.notes

    @property
    def build_failure(self) -> Optional[str]:
        """The error that ended the compilation after its last pass (in code generation), if any."""
        return self._events.build_failure

    @property
    def path(self) -> Optional[Path]:
        """The trace directory, once the pass context was entered (None for memory traces)."""
        return self._life.path

    @property
    def tir(self) -> bool:
        """Whether modules that hold only TIR PrimFuncs are snapshotted too."""
        return self._snapshots.tir

    @property
    def full_values(self) -> bool:
        """Whether every constant's values are written."""
        return self._snapshots.full_values

    def snapshot(self, ref: str) -> Document:
        """The RelayViz document stored under ``ref`` (a record's ``before`` or ``after``)."""
        if self._events.sink is None:
            raise RelayVizTraceError("this trace has recorded nothing yet")
        return self._events.sink.get(ref)

    @property
    def instrument_seconds(self) -> float:
        """Wall time spent inside the instrument's callbacks."""
        return self._guard.seconds

    # -- the built graph --------------------------------------------------------------------

    def record_graph(self, built: Any) -> Optional[PassRecord]:
        """Add what a compilation built as an event after its last module.

        ``built`` is what ``relay.build`` returned (anything with ``get_graph_json()``), the
        graph executor JSON itself, the ``Executable`` of ``relay.vm.compile``, or the VM
        ``Executable`` of ``tvm.compile`` / ``relax.build``. The graph becomes a
        ``GraphExecutorCodegen`` event (a VM executable a ``VMCompiler`` event) whose
        ``before`` is the last module of the compilation that built it: with several
        compilations in one context, the one whose functions the artifact runs (matched by
        content, not by order). Call it inside or after the pass context; the same artifact
        is recorded once. Returns the record (the existing one for an artifact recorded
        already), or None if the trace stopped recording.

        Like every callback, it never raises into the build's code: a failure (a full disk, a
        graph that cannot be read) is one :class:`TraceIncompleteWarning` and an incomplete
        trace, and it returns None; ``strict=True`` raises instead.
        """
        life, sink = self._life, self._events.sink
        if life.disabled or sink is None:
            return None
        if not life.finished and life.entered > 0 and not life.in_current_context():
            life.exit_never_came(EXIT_NEVER_CAME.format(when="when the built graph was recorded"), exited=True)
        without = without_graph(built)
        if without is not None:
            self._events.note(without)
            return None
        known = len(self.problems)
        record: Optional[PassRecord] = None
        with self._guard("(recording the built graph)", stacklevel=4):  # the warning points at the caller
            name, ir, doc = artifact_document(built)
            record = record_artifact(self.records, sink, name, ir, doc)
        if len(self.problems) > known:
            self._events.problems_after_close(self.problems[known:])
        return record

    # -- PassInstrument callbacks -------------------------------------------------------------

    def enter_pass_ctx(self) -> None:
        try:  # first: a Ctrl-C that came while TVM ran fires in here (see carried_interruption)
            if self._thread.other():
                return
            life = self._life
            life.entered += 1
            if life.entered > 1 or life.disabled:
                return
            life.closed_at_exit()  # if the context's exit never reaches us
            try:
                with self._guard("(entering the pass context)"):
                    if life.finished:
                        raise RelayVizUsageError("a RelayVizTrace records one pass context; "
                                                 "make a new RelayVizTrace for each compilation")
                    life.open()
            except CompilationInterrupted:  # Ctrl-C: TVM calls no exit_pass_ctx after an enter that raised
                life.entered -= 1
                life.exit_never_came(ENTRY_INTERRUPTED)
                raise
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            if not self._life.finished:
                self._life.context_cut = ("entering", type(exc).__name__)
            raise carried_interruption(exc, "(entering the pass context)") from exc

    def exit_pass_ctx(self) -> None:
        try:  # first: a Ctrl-C that came while TVM ran fires in here (see carried_interruption)
            if not self._thread.other():
                self._exit_context()
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            if not self._life.finished:  # it came before the trace was closed: closed later, saying so
                self._life.context_cut = ("leaving", type(exc).__name__)
            raise carried_interruption(exc, "(leaving the pass context)") from exc

    def _exit_context(self) -> None:
        """Leave one pass context; the trace is closed when the outermost is left."""
        life = self._life
        life.entered -= 1
        if life.entered > 0:
            return
        # The trace is closed after a failure here is recorded, and before the time is counted.
        with self._guard("(leaving the pass context)", then=life.finish):
            if not life.disabled:
                self._events.close_open_passes(sys.exc_info()[1])

    def run_before_pass(self, mod: tvm.IRModule, info: Any) -> None:
        try:  # first: a Ctrl-C that came while TVM ran fires in here (see carried_interruption)
            if self._life.disabled or self._thread.other(event=True):
                return
            with self._guard(info) as guard:
                self._recorder.begin(mod, info, caller_frame(), guard)
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            raise carried_interruption(exc, info) from exc

    def run_after_pass(self, mod: tvm.IRModule, info: Any) -> None:
        try:  # first: a Ctrl-C that came while TVM ran fires in here (see carried_interruption)
            if self._life.disabled or self._thread.other():
                return
            with self._guard(info) as guard:
                self._recorder.end(mod, info, guard.started)
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            raise carried_interruption(exc, info) from exc

    # -- what RelayVizBisect tells the trace ----------------------------------------------------

    def note_bisect(self, mod: tvm.IRModule, info: Any, number: int, skipped: bool) -> None:
        """Record a :class:`RelayVizBisect` decision about the pass about to begin: its number
        among the passes bisection may skip, and whether it is skipped. A skipped pass never
        reaches ``run_before_pass``, so it is recorded here, as an event that begins and ends
        at once with ``skipped`` set; a pass that runs gets its number when it begins."""
        if self._life.disabled or self._events.sink is None or self._thread.other(event=skipped):
            return
        with self._guard(info):
            self._recorder.bisect(mod, info, number, skipped, caller_frame() if skipped else None)

    def _fail(self, exc: BaseException, pass_name: str, *, stacklevel: int = 2) -> None:
        """The guard's failure: the lifecycle stops the trace (``stacklevel`` counted from here)."""
        self._life.fail(exc, pass_name, stacklevel=stacklevel + 1)
