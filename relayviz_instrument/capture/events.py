"""The pass events of one trace as a state machine over plain Python objects: the records so
far, the events open now (a stack, innermost last), the sink their manifest lines go to, what
the trace's close line will say (complete or not, its problems and notes, the build's failure),
and the rules that end the events TVM will not end.

TVM ends an event by calling the instrument's ``run_after_pass``. It does not when the pass
raised (no after-pass callback follows an exception), when the pass context exits while passes
are still open, or when a Ctrl-C kept a callback from running. Each case has its rule here:

- ``close_ended``: a pass that raised, its exception caught inside the pass context, is over
  once its frame is no longer on the stack of the event beginning now (``pass_frames.py``);
  it is ended with the exception that went through its frame, or as having raised unseen;
- ``close_open_passes``: the pass context exits with every event that began and did not end;
  each is ended with the exception leaving the context (or one still held), or as still
  running; the innermost pass that raised keeps its input module for ``relayviz replay``; an
  error that went through no pass is the build's failure, an interruption a problem;
- ``unmatched_after``: TVM ends an event that is not the innermost open one (a Ctrl-C TVM
  dropped kept callbacks from running): the events inside it are ended, saying so;
- ``end_open``: one event ended with a message, begun first if an interruption cut its begin
  line short, left as it is if its end line was written already;
- ``end_section``: a process trace's inner pass context exits: the events that began inside it.

No TVM object is needed: an event holds its module, context and target only by reference, for
``keep_input`` (the instrument's, which keeps a failing pass's input for replay), and the
tests drive it with frames, records and a memory store.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from types import FrameType
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple

from ..errors import RelayVizError
from ..store import PassRecord, TraceSink
from .pass_frames import (CUT_BY, CUT_SHORT, EXITED_FIRST, RAISED_UNSEEN, caller_frame, error_still_held, error_text,
                          error_through, frames_on_stack, held_exceptions, instrument_that_raised, interruption,
                          own_callback_that_raised, through_tvm)

__all__ = ["OpenEvent", "PassEvents", "InstrumentClock"]


class InstrumentClock(Protocol):
    """What the events read of the instrument's guard: its own seconds so far."""

    @property
    def seconds(self) -> float: ...


@dataclass
class OpenEvent:
    """A pass event that began and has not ended: its record, the snapshot of its input (None
    when it is not snapshotted), and when its own time started."""

    record: PassRecord
    #: The snapshot of the pass's input module (``policy.Snapshot``), None if not snapshotted.
    before: Any
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
        return ms(now - self.started - (instrument_seconds - self.overhead_at_start))

    def drop_references(self) -> None:
        """Hold no IR object, context or frame of the pass any longer."""
        self.mod = self.context = self.target = self.frame = None


class PassEvents:
    """The events of one trace and the rules that end those TVM will not end.

    ``owner`` is the instrument recording them (an exception one of its own callbacks raised
    is told apart from another instrument's, see ``pass_frames.py``); ``clock`` its guard,
    whose seconds a pass's own time leaves out; ``keep_input(event)`` keeps the input module
    of the innermost pass that raised for ``relayviz replay`` and returns the record's
    ``replay`` facts. ``sink`` is set when the trace opens.
    """

    def __init__(self, owner: object, clock: InstrumentClock,
                 keep_input: Callable[[OpenEvent], Dict[str, Any]]) -> None:
        #: Every pass event so far, in the order the passes started.
        self.records: List[PassRecord] = []
        #: The events open now, innermost last.
        self.stack: List[OpenEvent] = []
        self.sink: Optional[TraceSink] = None
        #: False once the trace misses something; ``problems`` says what.
        self.complete = True
        self.problems: List[str] = []
        #: What a reader should know of the trace, complete or not (written in its close line).
        self.notes: List[str] = []
        #: The error that ended the compilation after its last pass (in code generation), if any.
        self.build_failure: Optional[str] = None
        #: The pass context events begin in now, in a trace of a whole process (its section).
        self.context: Optional[int] = None
        self._owner = owner
        self._clock = clock
        self._keep_input = keep_input

    def new_record(self, name: str, opt_level: int, required: Tuple[str, ...], ir: str) -> PassRecord:
        """The record of a pass event beginning now, nested in the innermost open one, in the
        current pass context (not yet among the records)."""
        stack = self.stack
        return PassRecord(index=len(self.records), name=name, opt_level=opt_level, required=required,
                          depth=len(stack) + 1, parent=stack[-1].record.index if stack else None, ir=ir,
                          context=self.context)

    def note(self, note: str) -> None:
        """Say ``note`` in the trace (once): in its close line, or in one more if it is closed."""
        if note in self.notes:
            return
        self.notes.append(note)
        if self.sink is None or not self.sink.closed:
            return  # the close line, still to come, will carry it
        try:
            self.sink.close_again(complete=self.complete, problems=[], events=len(self.records),
                                  instrument_ms=1000.0 * self._clock.seconds, notes=[note])
        except Exception:  # nothing more can be written; the trace in memory says it
            pass

    def problems_after_close(self, problems: List[str]) -> None:
        """Tell a closed trace's manifest about ``problems`` that arose after its close line
        (a second close line, whose problems a reader adds to the first's), as far as the
        store still takes a line: the disk that failed the recording may refuse this too,
        and the warning already said it."""
        if self.sink is None or not self.sink.closed:
            return  # the close line, still to come, will carry them
        try:
            self.sink.close_again(complete=False, problems=problems, events=len(self.records),
                                  instrument_ms=1000.0 * self._clock.seconds)
        except Exception:  # nothing more can be written; the trace in memory says it
            pass

    # -- the rules ------------------------------------------------------------------------------

    def close_ended(self, frame: Optional[FrameType]) -> None:
        """End the open events whose pass is over though TVM sent no after-pass callback (it
        raised, and the exception was caught inside the pass context): those whose frame is no
        longer on the stack of ``frame``, the innermost frame of the event beginning now."""
        stack = self.stack
        if not stack or stack[-1].frame is frame:
            return
        live = frames_on_stack(frame)
        ended = []
        while stack and stack[-1].frame is not None and id(stack[-1].frame) not in live:
            ended.append(stack.pop())
        if ended:
            # An exception still being handled here (a pass run in an except block) may be theirs.
            self.end_events(ended, sys.exc_info()[1], exiting=False)

    def close_open_passes(self, exc: Optional[BaseException]) -> None:
        """End every event that began and did not end, when the pass context exits with ``exc``
        (or none): the passes an exception went through, passes that raised earlier, or passes
        a callback was interrupted in. The innermost pass that raised keeps its input module
        for ``relayviz replay``; an interruption marks the trace incomplete. An error TVM raised
        that went through no pass (code generation after the last pass) is the build's failure."""
        sink = self.sink
        assert sink is not None
        opened, self.stack = list(reversed(self.stack)), []
        self.end_events(opened, exc, exiting=True)
        # Events whose beginning was itself interrupted: they began last, inside every other.
        cut = [r for r in reversed(self.records) if not sink.has_ended(r.index)]
        for record in cut:
            record.error = error_text(exc) if exc is not None else EXITED_FIRST
            if not sink.has_begun(record.index):
                sink.begin(record)
            sink.end(record)
        owner = self._owner
        ours = own_callback_that_raised(exc, owner)
        if (exc is not None and not interruption(exc) and not isinstance(exc, RelayVizError) and through_tvm(exc)
                and instrument_that_raised(exc, owner) is ours is None
                and not any(o.record.error == error_text(exc) for o in opened) and not cut):
            self.build_failure = error_text(exc)
        if interruption(exc) or ours is not None:
            assert exc is not None
            self.complete = False
            hit = cut + [o.record for o in opened if (o.record.error or "").startswith(error_text(exc))]
            where = f" during pass {hit[0].name} (#{hit[0].index})" if hit else ""
            how = type(exc).__name__ if ours is None else CUT_BY.format(callback=ours, error=type(exc).__name__)
            self.problems.append(f"the compilation was interrupted ({how}){where}")

    def end_events(self, ended: Sequence[OpenEvent], exc: Optional[BaseException], *, exiting: bool) -> None:
        """End the events ``ended`` (innermost first), which TVM will not end: each with the
        exception among ``exc`` and its causes that went through its frame, or with what the
        trace knows (it raised unseen; it was still running when the context exited). Their
        time runs until now: when the instrument learnt that they had ended."""
        sink = self.sink
        assert sink is not None
        owner = self._owner
        now = time.perf_counter()
        live = frames_on_stack(caller_frame()) if exiting else set()
        replay_kept = False
        held: Optional[List[BaseException]] = None
        error: Optional[BaseException] = None
        for opened in ended:
            record = opened.record
            if sink.has_ended(record.index):
                # Its end line was written, then an interruption (Ctrl-C) cut the callback short
                # before the event left the stack: TVM ended it, there is nothing to add.
                # (An interruption before the line was written leaves it to be ended here; one
                # before its begin line was written, to be begun and ended: see end_open.)
                opened.drop_references()
                continue
            error = error_through(opened.frame, exc) if opened.frame is not None else exc
            if error is None and opened.frame is not None and id(opened.frame) not in live:
                if held is None:  # one search for all of them, only when a pass raised unseen
                    held = held_exceptions()
                error = error_still_held(opened.frame, held)
            culprit = instrument_that_raised(error, owner)
            ours = own_callback_that_raised(error, owner) if culprit is None else None
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
                    record.replay = self._keep_input(opened)
                except Exception as failure:  # the trace still names the pass and holds its snapshot
                    self.complete = False
                    self.problems.append(f"the input module of the failing pass {record.name} could not "
                                         f"be kept for relayviz replay: {type(failure).__name__}: {failure}")
            self.end_open(opened, message, now)
            opened.drop_references()
        del held, error  # hold no user's exception (nor its frames) past this call

    def unmatched_after(self, key: int, name: Callable[[], str]) -> None:
        """TVM ended a pass (``key``: its PassInfo's address; ``name()`` reads its name) that is
        not the innermost open event. Only a Ctrl-C that TVM 0.19 and older dropped does that:
        landing in TVM's Python code that converts a callback's arguments (a real SIGINT mid
        relay.build lands there often), it kept the callback that began this pass, or those that
        ended the passes inside it, from running. Those inner events are ended here, saying so;
        a pass never begun is missing. Either way the trace is incomplete and says why."""
        stack = self.stack
        self.complete = False
        inside = next((i for i in range(len(stack) - 1, -1, -1) if stack[i].key == key), None)
        if inside is None:
            self.problems.append(f"pass {name()} ran unrecorded: {CUT_SHORT.format(callback='run_before_pass')}")
            return
        now = time.perf_counter()
        for opened in reversed(stack[inside + 1:]):
            self.end_open(opened, CUT_SHORT.format(callback="run_after_pass"), now)
            self.problems.append(f"pass {opened.record.name} (#{opened.record.index}) ended unrecorded: "
                                 f"{CUT_SHORT.format(callback='run_after_pass')}")
        del stack[inside + 1:]

    def end_open(self, opened: OpenEvent, error: str, now: float) -> None:
        """End an open event TVM will not end, with ``error``, its time running until ``now``:
        begun first if an interruption cut its begin line short, and left as it is if its end
        line was written already (TVM ended it before an interruption cut the callback short)."""
        sink = self.sink
        assert sink is not None
        record = opened.record
        if not sink.has_begun(record.index):
            sink.begin(record)
        if not sink.has_ended(record.index):
            record.duration_ms = opened.own_ms(now, self._clock.seconds)
            record.error = error
            sink.end(record)

    def end_section(self, stack_depth: int, exc: Optional[BaseException]) -> None:
        """End the events that began inside a pass context entered when ``stack_depth`` events
        were open, as it exits with ``exc`` (or none); the events around it stay open."""
        now = time.perf_counter()
        message = error_text(exc) if exc is not None else "did not finish (its pass context exited first)"
        while len(self.stack) > stack_depth:
            self.end_open(self.stack.pop(), message, now)


def ms(seconds: float) -> float:
    """Seconds as milliseconds, as the manifest records a duration."""
    return round(1000.0 * seconds, 4)
