"""RelayVizTrace: the pass instrument. It adapts TVM's callbacks to the trace and does
nothing else: what to snapshot is the policy's business (policy.py), whether a pass changed
its module equality.py's, what a compilation built artifacts.py's, where the trace goes the
sink's (store/), and what the passes did is derived when the trace is read.

How it stays harmless. Every callback runs inside one guard (guard.py): a failure inside the
instrument (a serializer bug, a full disk, an unwritable directory) becomes one
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

import atexit
import os
import re
import sys
import threading
import time
import warnings
import weakref
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Dict, List, Optional, Pattern, Sequence, Tuple, Union

import tvm

from .._version import __version__
from ..format import Document
from ..format.irs import EMPTY, MODULE_IRS, OTHER, RELAY, TIR
from ..errors import (CompilationInterrupted, RelayVizDependencyError, RelayVizError, RelayVizSerializeError,
                      RelayVizTraceError, RelayVizUsageError, TraceIncompleteWarning)
from ..serialize import Serializer, serializer_for
from ..serialize.reflection import field, object_key
from ..store import DirectoryStore, MemoryStore, PassRecord, TraceSink, new_trace_dir
from ..store.records import NO_GRAPH
from .artifacts import artifact_document, record_artifact
from .contexts import context_instruments
from .equality import ModuleFacts, ModuleReader, shares_functions
from .guard import GuardedCall, InstrumentGuard, carried_interruption
from .pass_frames import (CUT_BY, CUT_SHORT, ENDED_INSIDE, ENTRY_INTERRUPTED, EXIT_NEVER_CAME, EXITED_FIRST,
                          NEVER_OPENED, RAISED_UNSEEN, caller_frame, code_between, error_still_held, error_text,
                          error_through, frames_on_stack, held_exceptions, instrument_that_raised, interruption,
                          own_callback_that_raised, stack_of, through_tvm)
from .policy import Snapshot, SnapshotPolicy
from .reproducer import replay_facts

__all__ = ["RelayVizTrace"]

#: How many PassInfos a trace keeps read (see ``_pass_info``): enough for every pass of a
#: pipeline; TVM makes the TIR passes anew for each function, relay.build all of them anew for
#: each build, and a trace of a whole process would otherwise hold every PassInfo it saw.
_PASS_INFOS_KEPT = 256


@dataclass
class _OpenPass:
    record: PassRecord
    before: Optional[Snapshot]
    started: float = 0.0
    overhead_at_start: float = 0.0
    #: The pass's input module, and the PassContext and target current when it began: what a
    #: reproducer needs if the pass raises (references only; nothing is copied unless it does).
    mod: Any = None
    context: Any = None
    target: Any = None
    #: The Python frame that ran the pass (see pass_frames.py): on the stack while it runs.
    frame: Optional[FrameType] = None
    #: The address of the pass's PassInfo, which TVM hands to its after-pass callback again.
    key: int = 0

    def own_ms(self, now: float, instrument_seconds: float) -> float:
        """The pass's own time until ``now``, in ms: what the instrument spent since it began
        (``instrument_seconds`` is its total now) left out."""
        return _ms(now - self.started - (instrument_seconds - self.overhead_at_start))


class _PlainAttributes:
    """A plain Python base: it gives instances the ``__dict__`` that TVM 0.2x's object classes
    (tvm-ffi, ``__slots__`` all the way down) do not have. TVM's own ``pass_instrument``
    decorator builds its instruments the same way."""


class RelayVizTrace(_PlainAttributes, tvm.instrument.PassInstrument):
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
        self._out_dir = out_dir
        self._passes = _compile(passes, "passes")
        self._exclude = _compile(exclude, "exclude")
        self._keep = _compile(keep_modules, "keep_modules")
        self.tir = tir
        self.strict = strict
        self.full_values = full_values
        self._progress = progress
        #: Every pass event so far, in the order the passes started.
        self.records: List[PassRecord] = []
        #: False once the instrument failed; ``problems`` says why.
        self.complete = True
        self.problems: List[str] = []
        #: What a reader should know of the trace, complete or not (written in its close line).
        self.notes: List[str] = []
        #: The error that ended the compilation after its last pass (in code generation), if any.
        self.build_failure: Optional[str] = None
        #: The trace directory, once the pass context was entered (None for memory traces).
        self.path: Optional[Path] = None
        self._sink: Optional[TraceSink] = None
        self._serializers: Dict[str, Union[Serializer, str]] = {}  # dialect -> serializer, or why none
        self._pass_infos: Dict[int, Tuple[Any, Tuple[str, int, Tuple[str, ...]]]] = {}  # see _pass_info
        #: Each module state's dialect and functions, read once (see capture/equality.py).
        self._modules = ModuleReader()
        self._policy = SnapshotPolicy(self._take, self._modules.equal)
        self._stack: List[_OpenPass] = []
        #: The module the last pass run directly in the context returned, its snapshot, and the
        #: stack of frames that ran it: what a new module is told apart from (see
        #: ``PassRecord.new_module``), and where a change made after it ran (``PassRecord.between``).
        self._last_top: Optional[Tuple[Any, str, List[FrameType]]] = None
        self._entered = 0
        self._finished = False
        self._disabled = False
        #: Where an interruption (Ctrl-C) cut enter_pass_ctx or exit_pass_ctx short, before the
        #: trace was closed (then TVM calls no exit, or the exit never closed it): ``entering`` or
        #: ``leaving`` and the exception's class. The trace is closed later, and says so.
        self._context_cut: Optional[Tuple[str, str]] = None
        #: Times every callback and keeps its failures from the compilation.
        self._guard = InstrumentGuard(self._fail)
        #: A RelayVizBisect's number for the pass about to begin: ``(PassInfo, number)``.
        self._bisect_next: Optional[Tuple[Any, int]] = None
        #: The thread the trace records (the first to call it back), and the pass events of
        #: other threads, not recorded, by thread name.
        self._owner: Optional[int] = None
        self._owner_name = ""
        self._elsewhere: Counter[str] = Counter()
        #: Passes other threads ran where no instrument sees them (a process trace counts them).
        self._unseen_in_threads: Counter[str] = Counter()
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

    def snapshot(self, ref: str) -> Document:
        """The RelayViz document stored under ``ref`` (a record's ``before`` or ``after``)."""
        if self._sink is None:
            raise RelayVizTraceError("this trace has recorded nothing yet")
        return self._sink.get(ref)

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
        if self._disabled or self._sink is None:
            return None
        if not self._finished and self._entered > 0 and not self._in_current_context():
            self._exit_never_came(EXIT_NEVER_CAME.format(when="when the built graph was recorded"), exited=True)
        without = without_graph(built)
        if without is not None:
            self._note(without)
            return None
        known = len(self.problems)
        record: Optional[PassRecord] = None
        with self._guard("(recording the built graph)", stacklevel=4):  # the warning points at the caller
            name, ir, doc = artifact_document(built)
            record = record_artifact(self.records, self._sink, name, ir, doc)
        if len(self.problems) > known:
            self._problems_after_close(self.problems[known:])
        return record

    # -- PassInstrument callbacks -------------------------------------------------------------

    def enter_pass_ctx(self) -> None:
        try:  # first: a Ctrl-C that came while TVM ran fires in here (see carried_interruption)
            if self._in_other_thread():
                return
            self._entered += 1
            if self._entered > 1 or self._disabled:
                return
            _OPEN.add(self)  # closed when the process ends, if the context's exit never reaches us
            try:
                with self._guard("(entering the pass context)"):
                    if self._finished:
                        raise RelayVizUsageError("a RelayVizTrace records one pass context; "
                                                 "make a new RelayVizTrace for each compilation")
                    self._open()
            except CompilationInterrupted:  # Ctrl-C: TVM calls no exit_pass_ctx after an enter that raised
                self._entered -= 1
                self._exit_never_came(ENTRY_INTERRUPTED)
                raise
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            if not self._finished:
                self._context_cut = ("entering", type(exc).__name__)
            raise carried_interruption(exc, "(entering the pass context)") from exc

    def exit_pass_ctx(self) -> None:
        try:  # first: a Ctrl-C that came while TVM ran fires in here (see carried_interruption)
            if not self._in_other_thread():
                self._exit_context()
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            if not self._finished:  # it came before the trace was closed: closed later, saying so
                self._context_cut = ("leaving", type(exc).__name__)
            raise carried_interruption(exc, "(leaving the pass context)") from exc

    def _exit_context(self) -> None:
        """Leave one pass context; the trace is closed when the outermost is left."""
        self._entered -= 1
        if self._entered > 0:
            return
        # The trace is closed after a failure here is recorded, and before the time is counted.
        with self._guard("(leaving the pass context)", then=self._finish):
            if not self._disabled:
                self._close_open_passes(sys.exc_info()[1])

    def run_before_pass(self, mod: tvm.IRModule, info: Any) -> None:
        try:  # first: a Ctrl-C that came while TVM ran fires in here (see carried_interruption)
            if self._disabled or self._in_other_thread(event=True):
                return
            with self._guard(info) as guard:
                self._begin(mod, info, caller_frame(), guard)
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            raise carried_interruption(exc, info) from exc

    def _begin(self, mod: tvm.IRModule, info: Any, frame: Optional[FrameType], guard: GuardedCall) -> None:
        """A pass event begins: the pass that ``frame`` ran (in ``run_before_pass``'s guard)."""
        if self._sink is None:
            raise RelayVizTraceError(NEVER_OPENED)
        if self._stack and self._stack[-1].frame is not frame:
            self._close_ended(frame)
        state = self._modules.facts(mod)  # what the module holds now, read once per callback
        record = self._new_record(mod, info, state)
        if self._bisect_next is not None and self._bisect_next[0].same_as(info):
            record.bisect = self._bisect_next[1]
        self._bisect_next = None
        self.records.append(record)  # first: a failure below still leaves the event on record
        context = tvm.transform.PassContext.current()
        target = tvm.target.Target.current(allow_none=True)
        if self._keep is not None and self._keep.search(record.name):
            self._keep_for_replay(record, mod, context, target)
        before = self._before(record, state, frame) if self._wanted(record) else None
        opened = _OpenPass(record, before, mod=mod, context=context, target=target, frame=frame,
                           key=object_key(info))
        self._stack.append(opened)
        guard.starts(opened)
        assert self._sink is not None
        self._sink.begin(record)

    def _before(self, record: PassRecord, state: ModuleFacts, frame: Optional[FrameType]) -> Snapshot:
        """The snapshot of a pass's input module (``state``: what it holds), noted in its record;
        ``frame`` ran the pass."""
        mod = state.mod
        before = self._policy.before(state)
        record.before, record.nodes_before = before.ref, before.nodes
        last = self._last_top
        if record.depth == 1 and last is not None and before.ref != last[1]:
            if not shares_functions(last[0], mod):
                record.new_module = True  # a module the caller made anew: a pipeline of its own
            else:  # changed since the last pass: by the code that ran both
                record.between = code_between(last[2], frame)
        return before

    def _keep_for_replay(self, record: PassRecord, mod: tvm.IRModule, context: Any, target: Any) -> None:
        """Keep the input module of a pass ``keep=`` names, for ``relayviz replay``."""
        try:
            record.replay = self._replay_facts(mod, context, target)
        except Exception as failure:  # a module no safe form carries here: not kept, recording goes on
            if self.strict:
                raise
            self.complete = False
            why = f"could not be kept for relayviz replay: {type(failure).__name__}: {failure}"
            if not any(problem.endswith(why) for problem in self.problems):  # once per reason
                self.problems.append(f"the input module of pass {record.name} (#{record.index}), and of "
                                     f"any later pass for the same reason, {why}")

    def run_after_pass(self, mod: tvm.IRModule, info: Any) -> None:
        try:  # first: a Ctrl-C that came while TVM ran fires in here (see carried_interruption)
            if self._disabled or self._in_other_thread():
                return
            with self._guard(info) as guard:
                self._end(mod, info, guard.started)
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            raise carried_interruption(exc, info) from exc

    def _end(self, mod: tvm.IRModule, info: Any, now: float) -> None:
        """A pass event ends, ``now`` (in ``run_after_pass``'s guard)."""
        key = object_key(info)
        if not self._stack or self._stack[-1].key != key:
            self._unmatched_after(info, key)
            if not self._stack or self._stack[-1].key != key:
                return
        opened = self._stack[-1]
        record = opened.record
        record.duration_ms = opened.own_ms(now, self._guard.seconds)
        if opened.before is not None:
            state = self._modules.facts(mod)
            after, changed = self._policy.after(opened.before, state)
            record.after, record.nodes_after, record.changed = after.ref, after.nodes, changed
            if not changed:  # the next pass receives it: its dialect is known
                self._modules.alias(state, opened.before.state)
        assert self._sink is not None
        self._sink.end(record)
        if record.depth == 1 and record.after is not None:
            self._last_top = (mod, record.after, stack_of(caller_frame()))
        self._stack.pop()  # last: an interruption above leaves the pass open, to be closed on exit
        if self._progress is not None:
            self._progress(record)

    def _unmatched_after(self, info: Any, key: int) -> None:
        """TVM ended a pass that is not the innermost open event. Only a Ctrl-C that TVM 0.19 and
        older dropped does that: landing in TVM's Python code that converts a callback's
        arguments (a real SIGINT mid relay.build lands there often), it kept the callback that
        began this pass, or those that ended the passes inside it, from running. Those inner
        events are ended here, saying so; a pass never begun is missing. Either way the trace is
        incomplete and says why."""
        assert self._sink is not None
        self.complete = False
        inside = next((i for i in range(len(self._stack) - 1, -1, -1) if self._stack[i].key == key), None)
        if inside is None:
            name = self._pass_info(info)[0]
            self.problems.append(f"pass {name} ran unrecorded: {CUT_SHORT.format(callback='run_before_pass')}")
            return
        now = time.perf_counter()
        for opened in reversed(self._stack[inside + 1:]):
            self._end_open(opened, CUT_SHORT.format(callback="run_after_pass"), now)
            self.problems.append(f"pass {opened.record.name} (#{opened.record.index}) ended unrecorded: "
                                 f"{CUT_SHORT.format(callback='run_after_pass')}")
        del self._stack[inside + 1:]

    def _end_open(self, opened: _OpenPass, error: str, now: float) -> None:
        """End an open event TVM will not end, with ``error``, its time running until ``now``:
        begun first if an interruption cut its begin line short, and left as it is if its end
        line was written already (TVM ended it before an interruption cut the callback short)."""
        assert self._sink is not None
        record = opened.record
        if not self._sink.has_begun(record.index):
            self._sink.begin(record)
        if not self._sink.has_ended(record.index):
            record.duration_ms = opened.own_ms(now, self._guard.seconds)
            record.error = error
            self._sink.end(record)

    # -- what RelayVizBisect tells the trace ----------------------------------------------------

    def note_bisect(self, mod: tvm.IRModule, info: Any, number: int, skipped: bool) -> None:
        """Record a :class:`RelayVizBisect` decision about the pass about to begin: its number
        among the passes bisection may skip, and whether it is skipped. A skipped pass never
        reaches ``run_before_pass``, so it is recorded here, as an event that begins and ends
        at once with ``skipped`` set; a pass that runs gets its number when it begins."""
        if self._disabled or self._sink is None or self._in_other_thread(event=skipped):
            return
        with self._guard(info):
            if not skipped:
                self._bisect_next = (info, number)
                return
            frame = caller_frame()
            if self._stack and self._stack[-1].frame is not frame:
                self._close_ended(frame)
            record = self._new_record(mod, info)
            record.skipped, record.bisect = True, number
            self.records.append(record)
            self._sink.begin(record)
            self._sink.end(record)

    def _in_other_thread(self, *, event: bool = False) -> bool:
        """Whether this callback runs in a thread other than the one the trace records: the
        first that called it back. TVM runs a pass's callbacks in the thread that runs the
        pass, and one trace records one thread's nesting of events; the other threads' events
        (``event``: this callback begins one) are counted by thread, and the trace says so."""
        ident = threading.get_ident()
        if ident == self._owner:
            return False
        if self._owner is None:
            self._owner, self._owner_name = ident, threading.current_thread().name
            return False
        if event:
            self._elsewhere[threading.current_thread().name] += 1
        return True

    def _new_record(self, mod: tvm.IRModule, info: Any, state: Optional[ModuleFacts] = None) -> PassRecord:
        """The record of a pass event beginning now on ``mod`` (``state``: what it holds, if
        read already), nested in the innermost open one."""
        parent = self._stack[-1].record.index if self._stack else None
        name, opt_level, required = self._pass_info(info)
        return PassRecord(index=len(self.records), name=name, opt_level=opt_level, required=required,
                          depth=len(self._stack) + 1, parent=parent,
                          ir=_module_ir(self._modules.facts(mod) if state is None else state))

    def _pass_info(self, info: Any) -> Tuple[str, int, Tuple[str, ...]]:
        """A pass's name, opt_level and required passes, read from its (immutable) PassInfo once:
        a pass in a loop or a Sequential run again hands the same PassInfo to every event."""
        key = object_key(info)
        known = self._pass_infos.get(key)
        if known is None:
            required = field(info, "required")
            known = (info, (str(field(info, "name")), int(field(info, "opt_level")),
                            tuple(str(required[i]) for i in range(len(required)))))
            if len(self._pass_infos) >= _PASS_INFOS_KEPT:  # passes made anew per function or per build
                del self._pass_infos[next(iter(self._pass_infos))]  # the oldest, and its PassInfo
            self._pass_infos[key] = known  # holds the PassInfo: its address is not reused meanwhile
        return known[1]

    # -- snapshots ----------------------------------------------------------------------------

    def _wanted(self, record: PassRecord) -> bool:
        if record.ir == OTHER:
            record.note = "not snapshotted: the module holds functions of a dialect relayviz does not know"
            return False
        if record.ir not in MODULE_IRS and not (record.ir == TIR and self.tir):
            return False
        if self._passes is not None and not self._passes.search(record.name):
            return False
        if self._exclude is not None and self._exclude.search(record.name):
            return False
        serializer = self._serializer(record.ir)
        if isinstance(serializer, str):
            record.note = serializer
            return False
        return True

    def _serializer(self, ir: str) -> Union[Serializer, str]:
        """The serializer of dialect ``ir``, made once; or why there is none (the record's note)."""
        found = self._serializers.get(ir)
        if found is None:
            try:
                found = serializer_for(ir, full_values=self.full_values, tir_bodies=self.tir)
            except (RelayVizDependencyError, RelayVizSerializeError) as exc:
                found = f"not snapshotted: {exc}"
            self._serializers[ir] = found
        return found

    def _take(self, state: ModuleFacts) -> Snapshot:
        assert self._sink is not None
        ir, mod = _module_ir(state), state.mod
        serializer = self._serializer(ir)
        if isinstance(serializer, str) and ir == EMPTY:  # a pass removed every function: any serializer
            serializer = next((s for s in self._serializers.values() if not isinstance(s, str)), serializer)
        if isinstance(serializer, str):  # a pass turned the module into a dialect without a serializer
            raise RelayVizSerializeError(serializer)
        self._guard.pause_gc()
        try:
            doc = serializer.module(mod)
        finally:
            self._guard.resume_gc()
        return Snapshot(state, self._sink.put(doc), doc)

    # -- opening, closing, failing --------------------------------------------------------------

    def _open(self) -> None:
        header = {
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "relayviz_instrument": __version__,
            "tvm": getattr(tvm, "__version__", "unknown"),
            "python": sys.version.split()[0],
            "options": {"passes": self._passes.pattern if self._passes else None,
                        "exclude": self._exclude.pattern if self._exclude else None,
                        "tir": self.tir, "full_values": self.full_values},
        }
        if self._out_dir is False:
            self._sink = TraceSink(MemoryStore(), header)
            return
        path = new_trace_dir() if self._out_dir is None else Path(self._out_dir)
        self._sink = TraceSink(DirectoryStore(path), header)
        self.path = path

    def _close_ended(self, frame: Optional[FrameType]) -> None:
        """End the open events whose pass is over though TVM sent no after-pass callback (it
        raised, and the exception was caught inside the pass context): those whose frame is no
        longer on the stack of ``frame``, the innermost frame of the event beginning now."""
        live = frames_on_stack(frame)
        ended = []
        while self._stack and self._stack[-1].frame is not None and id(self._stack[-1].frame) not in live:
            ended.append(self._stack.pop())
        if ended:
            # An exception still being handled here (a pass run in an except block) may be theirs.
            self._end_events(ended, sys.exc_info()[1], exiting=False)

    def _close_open_passes(self, exc: Optional[BaseException]) -> None:
        """End every event that began and did not end, when the pass context exits with ``exc``
        (or none): the passes an exception went through, passes that raised earlier, or passes
        a callback was interrupted in. The innermost pass that raised keeps its input module
        for ``relayviz replay``; an interruption marks the trace incomplete. An error TVM raised
        that went through no pass (code generation after the last pass) is the build's failure."""
        assert self._sink is not None
        opened, self._stack = list(reversed(self._stack)), []
        self._end_events(opened, exc, exiting=True)
        # Events whose beginning was itself interrupted: they began last, inside every other.
        cut = [r for r in reversed(self.records) if not self._sink.has_ended(r.index)]
        for record in cut:
            record.error = error_text(exc) if exc is not None else EXITED_FIRST
            if not self._sink.has_begun(record.index):
                self._sink.begin(record)
            self._sink.end(record)
        ours = own_callback_that_raised(exc, self)
        if (exc is not None and not interruption(exc) and not isinstance(exc, RelayVizError) and through_tvm(exc)
                and instrument_that_raised(exc, self) is ours is None
                and not any(o.record.error == error_text(exc) for o in opened) and not cut):
            self.build_failure = error_text(exc)
        if interruption(exc) or ours is not None:
            assert exc is not None
            self.complete = False
            hit = cut + [o.record for o in opened if (o.record.error or "").startswith(error_text(exc))]
            where = f" during pass {hit[0].name} (#{hit[0].index})" if hit else ""
            how = type(exc).__name__ if ours is None else CUT_BY.format(callback=ours, error=type(exc).__name__)
            self.problems.append(f"the compilation was interrupted ({how}){where}")

    def _end_events(self, ended: List[_OpenPass], exc: Optional[BaseException], *, exiting: bool) -> None:
        """End the events ``ended`` (innermost first), which TVM will not end: each with the
        exception among ``exc`` and its causes that went through its frame, or with what the
        trace knows (it raised unseen; it was still running when the context exited). Their
        time runs until now: when the instrument learnt that they had ended."""
        assert self._sink is not None
        now = time.perf_counter()
        live = frames_on_stack(caller_frame()) if exiting else set()
        replay_kept = False
        held: Optional[List[BaseException]] = None
        error: Optional[BaseException] = None
        for opened in ended:
            record = opened.record
            if self._sink.has_ended(record.index):
                # Its end line was written, then an interruption (Ctrl-C) cut the callback short
                # before the event left the stack: TVM ended it, there is nothing to add.
                # (An interruption before the line was written leaves it to be ended here; one
                # before its begin line was written, to be begun and ended: see _end_open.)
                opened.mod = opened.context = opened.target = opened.frame = None
                continue
            error = error_through(opened.frame, exc) if opened.frame is not None else exc
            if error is None and opened.frame is not None and id(opened.frame) not in live:
                if held is None:  # one search for all of them, only when a pass raised unseen
                    held = held_exceptions()
                error = error_still_held(opened.frame, held)
            culprit = instrument_that_raised(error, self)
            ours = own_callback_that_raised(error, self) if culprit is None else None
            if error is not None:
                message = error_text(error)
                if culprit is not None:
                    message = f"raised by another pass instrument ({culprit}), not by the pass: {message}"
                elif ours is not None:
                    message = f"{message} ({CUT_BY.format(callback=ours, error=type(error).__name__)})"
            elif opened.frame is not None and id(opened.frame) in live:
                message = EXITED_FIRST
            else:
                message = RAISED_UNSEEN
            if (not replay_kept and message != EXITED_FIRST and not interruption(error) and culprit is ours is None
                    and not isinstance(error, RelayVizError) and record.replay is None):
                replay_kept = True  # the innermost pass that raised
                try:
                    record.replay = self._replay_facts(opened.mod, opened.context, opened.target)
                except Exception as failure:  # the trace still names the pass and holds its snapshot
                    self.complete = False
                    self.problems.append(f"the input module of the failing pass {record.name} could not "
                                         f"be kept for relayviz replay: {type(failure).__name__}: {failure}")
            self._end_open(opened, message, now)
            opened.mod = opened.context = opened.target = opened.frame = None
        del held, error  # hold no user's exception (nor its frames) past this call

    def _replay_facts(self, mod: tvm.IRModule, context: Any, target: Any) -> Dict[str, Any]:
        """What ``relayviz replay`` needs to run a pass on ``mod`` again; the module is stored."""
        assert self._sink is not None
        facts, module_json = replay_facts(mod, context, target)
        facts["module"] = self._sink.put_module(module_json)
        return facts

    def _fail(self, exc: BaseException, pass_name: str, *, stacklevel: int = 2) -> None:
        """The instrument failed: the trace is incomplete and recording stops, with one warning
        naming the pass (``stacklevel`` points it at the callback); ``strict`` raises instead."""
        if self.strict:
            raise exc
        first = not self.problems
        self.complete = False
        self.problems.append(f"the instrument failed in pass {pass_name}: {type(exc).__name__}: {exc}")
        self._disabled = True
        self._release()
        if first:
            where = f" (trace: {self.path})" if self.path is not None else ""
            warnings.warn(f"relayviz: recording stopped at pass {pass_name}: {type(exc).__name__}: {exc}; "
                          f"the compilation goes on, the trace is incomplete{where}",
                          TraceIncompleteWarning, stacklevel=stacklevel)

    def _note(self, note: str) -> None:
        """Say ``note`` in the trace (once): in its close line, or in one more if it is closed."""
        if note in self.notes:
            return
        self.notes.append(note)
        if self._sink is None or not self._sink.closed:
            return  # the close line, still to come, will carry it
        try:
            self._sink.close_again(complete=self.complete, problems=[], events=len(self.records),
                                   instrument_ms=1000.0 * self._guard.seconds, notes=[note])
        except Exception:  # nothing more can be written; the trace in memory says it
            pass

    def _problems_after_close(self, problems: List[str]) -> None:
        """Tell a closed trace's manifest about ``problems`` that arose after its close line
        (a second close line, whose problems a reader adds to the first's), as far as the
        store still takes a line: the disk that failed the recording may refuse this too,
        and the warning already said it."""
        if self._sink is None or not self._sink.closed:
            return  # the close line, still to come, will carry them
        try:
            self._sink.close_again(complete=False, problems=problems, events=len(self.records),
                                   instrument_ms=1000.0 * self._guard.seconds)
        except Exception:  # nothing more can be written; the trace in memory says it
            pass

    def _in_current_context(self) -> bool:
        """Whether this instrument is one of the current PassContext's."""
        try:
            return any(i.same_as(self) for i in context_instruments(tvm.transform.PassContext.current()))
        except Exception:  # cannot tell: the context is taken to be still open
            return True

    def _exit_never_came(self, why: str, *, exited: bool = False) -> None:
        """Close the trace whose pass context's exit never reached it, saying ``why``. When the
        context was left (``exited``: it is no longer current) after every event had ended,
        nothing is missing from the trace: ``why`` is a note, and the trace complete."""
        if self._finished:
            return
        self._entered = 0
        with self._guard("(closing the trace)", then=self._finish):
            if self._context_cut is not None:  # not another instrument: the user interrupted
                when, how = self._context_cut
                why = ENTRY_INTERRUPTED if when == "entering" else (
                    f"the compilation was interrupted ({how}) as its pass context exited; the trace was closed "
                    "later")
            elif exited and not self._stack and not self._disabled:
                self.notes.append(f"{why}; every pass event had ended by then, so the trace misses nothing")
                return
            self.complete = False
            self.problems.append(why)
            if not self._disabled and self._sink is not None:
                self._close_open_passes(None)

    def _finish(self) -> None:
        """Close the trace: its last line, and nothing that pins IR objects kept. An interruption
        (Ctrl-C) landing here is let through once the trace is closed all the same."""
        try:
            self._finish_once()
        except (KeyboardInterrupt, SystemExit):
            self._finish_once()  # does what the first did not: the close line is written once
            raise

    def _finish_once(self) -> None:
        self._finished = True
        _OPEN.discard(self)
        missed = [m for m in self._threads_missed() if m not in self.problems]
        if missed:
            self.complete = False
            self.problems.extend(missed)
        if self._sink is not None:
            try:
                self._sink.close(complete=self.complete, problems=self.problems, events=len(self.records),
                                 build_failure=self.build_failure, notes=self.notes,
                                 instrument_ms=1000.0 * self._guard.seconds)
            except Exception as exc:
                if self.strict:
                    raise
                if not self.problems:
                    self._fail(exc, "(closing the trace)")
        # Keep the sink for reading snapshots back; drop everything that pins IR objects.
        self._release()

    def _threads_missed(self) -> List[str]:
        """What the trace misses of other threads (see ``_in_other_thread``), as problems."""
        missed = []
        for counted, what in (
                (self._elsewhere, "pass events (and builds) run in other threads were not recorded (a trace records "
                                  "one thread, the first to enter a pass context: {owner})"),
                (self._unseen_in_threads, "passes run outside any pass context in other threads than {owner} cannot "
                                          "be seen (TVM's default context is one per thread), counted as Python "
                                          "called them, each with the passes inside it")):
            if counted:
                counts = ", ".join(f"{name}: {n}" for name, n in sorted(counted.items()))
                missed.append(f"{what.format(owner=self._owner_name)}: {counts}")
        return missed

    def _release(self) -> None:
        self._serializers = {}
        self._pass_infos = {}
        self._stack = []
        self._last_top = None
        self._policy.forget()
        self._modules.forget()


#: Traces whose pass context was entered and has not exited.
_OPEN: "weakref.WeakSet[RelayVizTrace]" = weakref.WeakSet()


@atexit.register
def _close_unexited() -> None:
    """At the process's end, close every trace whose pass context's exit never came, saying why."""
    for trace in list(_OPEN):
        if trace._in_current_context():
            trace._exit_never_came(ENDED_INSIDE)
        else:
            trace._exit_never_came(EXIT_NEVER_CAME.format(when="when the process ended"), exited=True)


def without_graph(built: Any) -> Optional[str]:
    """Why what a build returned has no graph to record (``relay.build`` with the AOT executor
    returns an ``AOTExecutorFactoryModule``: compiled code and no graph), as a note; None for
    anything ``artifact_document`` reads (a graph, its JSON, a VM executable)."""
    cls = type(built).__name__
    if not cls.endswith("ExecutorFactoryModule") or hasattr(built, "get_graph_json"):
        return None  # a graph (or its JSON, or a VM executable): artifact_document reads it
    what = " (the AOT executor)" if cls.startswith("AOT") else ""
    return (f"what the build returned, {cls}{what}, {NO_GRAPH}: the trace ends at the last module the "
            "compilation's passes made")


def _compile(patterns: Union[str, Sequence[str], None], what: str) -> Optional[Pattern[str]]:
    if patterns is None:
        return None
    if isinstance(patterns, str):
        patterns = [patterns]
    try:
        return re.compile("|".join(f"(?:{p})" for p in patterns))
    except re.error as exc:
        raise RelayVizUsageError(f"{what}: invalid regular expression: {exc}") from None


def _module_ir(state: ModuleFacts) -> str:
    """A module state's dialect (``serialize.module_ir``), where a module holding type definitions
    and no function is Relay: its type definitions (Relay's algebraic data types) are recorded."""
    if state.ir == EMPTY and state.types:
        return RELAY
    return state.ir


def _ms(seconds: float) -> float:
    return round(1000.0 * seconds, 4)
