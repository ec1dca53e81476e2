"""The events' state machine (capture/events.py) on its own: records, open events and a memory
sink driven as the instrument drives them, by plain Python frames and exceptions, without a
pass context. Each rule that ends an event TVM will not end is checked on the manifest lines it
writes: a pass that raised and was caught, seen or unseen; the context's exit with events
open; an after-pass callback for an event that is not the innermost; an interruption that cut
a callback short; and the inner events of a process trace's section."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from types import FrameType
from typing import Any, Callable, Dict, List, Optional

from relayviz_instrument.capture.events import OpenEvent, PassEvents
from relayviz_instrument.store import MemoryStore, PassRecord, TraceSink

RAISED_UNSEEN = "raised (the error did not reach the instrument)"
EXITED_FIRST = "did not finish (the pass context exited first)"
CUT_BEFORE_AFTER = ("TVM dropped a Ctrl-C that landed as it called the instrument's run_after_pass (in TVM's own "
                    "Python code, or before the callback's first line), never ran the callback, and went on")


class _Instrument:
    """The owner of the events: not strict, and no pass instrument of TVM's."""

    strict = False


@dataclass
class _Clock:
    """The instrument's seconds: none spent, so an event's time is its own."""

    seconds: float = 0.0


class Harness:
    """A PassEvents with a memory sink, begun as the instrument begins events, and the inputs it
    was asked to keep for replay."""

    def __init__(self, keep: Optional[Callable[[OpenEvent], Dict[str, Any]]] = None) -> None:
        self.kept: List[str] = []
        self.store = MemoryStore()
        self.events = PassEvents(_Instrument(), _Clock(), keep or self._keep)
        self.events.sink = TraceSink(self.store, {"created": "now"})

    def _keep(self, opened: OpenEvent) -> Dict[str, Any]:
        self.kept.append(opened.record.name)
        return {"module": f"kept-{opened.record.name}"}

    def begin(self, name: str, frame: Optional[FrameType], key: int = 0) -> PassRecord:
        """An event begins, run from ``frame`` (what run_before_pass does, without TVM)."""
        events = self.events
        events.close_ended(frame)
        record = events.new_record(name, 0, (), "relay")
        events.records.append(record)
        events.stack.append(OpenEvent(record, None, frame=frame, key=key))
        assert events.sink is not None
        events.sink.begin(record)
        return record

    def lines(self) -> List[Dict[str, Any]]:
        return [json.loads(line) for line in self.store.lines]

    def ends(self) -> Dict[int, Optional[str]]:
        """The error of each end line, by event."""
        return {line["index"]: line.get("error") for line in self.lines() if line["type"] == "end"}


def _run_failing_pass(harness: Harness, name: str, error: Callable[[str], BaseException], message: str) -> None:
    """The frame that asks TVM to run a pass, and the pass raising (made here: a frame that
    held the exception would keep it alive)."""
    harness.begin(name, sys._getframe())
    raise error(message)


def test_a_pass_that_raised_and_was_caught_ends_with_its_error_when_the_next_begins() -> None:
    harness = Harness()
    outer = harness.begin("Sequential", sys._getframe())
    try:
        _run_failing_pass(harness, "FoldConstant", ValueError, "cannot fold")
    except ValueError:
        # The next pass begins while the error is still handled (a pass run in an except block).
        nxt = harness.begin("InferType", sys._getframe())
    assert [(r.index, r.name, r.depth, r.parent) for r in harness.events.records] == [
        (0, "Sequential", 1, None), (1, "FoldConstant", 2, 0), (2, "InferType", 2, 0)]
    assert harness.ends() == {1: "ValueError: cannot fold"}
    assert harness.kept == ["FoldConstant"] and harness.events.records[1].replay == {"module": "kept-FoldConstant"}
    assert [o.record for o in harness.events.stack] == [outer, nxt]
    assert harness.events.complete and harness.events.problems == []


def test_a_pass_whose_error_is_gone_raised_unseen_and_one_still_held_ends_with_it() -> None:
    harness = Harness()
    try:
        _run_failing_pass(harness, "Gone", ValueError, "nobody kept me")
    except ValueError:
        pass
    harness.begin("Next", sys._getframe())
    assert harness.ends() == {0: RAISED_UNSEEN}

    kept: List[BaseException] = []
    try:
        _run_failing_pass(harness, "Held", KeyError, "kept by the caller")
    except KeyError as exc:
        kept.append(exc)  # as pytest.raises keeps it
    harness.begin("Last", sys._getframe())
    assert harness.ends()[2] == "KeyError: 'kept by the caller'"
    # Each was the innermost pass that raised when it was ended: both keep their input.
    assert harness.kept == ["Gone", "Held"]


def test_nested_passes_that_raised_end_innermost_first_and_only_the_innermost_keeps_its_input() -> None:
    harness = Harness()
    outer = harness.begin("Outer", sys._getframe())

    def python_pass() -> None:  # a Python pass running another pass, which raises
        harness.begin("PythonPass", sys._getframe())
        _run_failing_pass(harness, "Inner", RuntimeError, "inner failed")

    try:
        python_pass()
    except RuntimeError:
        harness.begin("After", sys._getframe())
    ended = [line["index"] for line in harness.lines() if line["type"] == "end"]
    assert ended == [2, 1]  # the innermost first
    assert harness.ends() == {2: "RuntimeError: inner failed", 1: "RuntimeError: inner failed"}
    assert harness.kept == ["Inner"]
    # The outer event's frame is still running: it stays open, and the new one nests in it.
    assert [o.record.name for o in harness.events.stack] == ["Outer", "After"]
    assert harness.events.records[3].parent == outer.index


def test_the_context_exit_ends_every_open_event_once() -> None:
    harness = Harness()
    harness.begin("Sequential", sys._getframe())
    harness.begin("FuseOps", sys._getframe())
    harness.events.close_open_passes(None)  # the context exits while both still run
    assert harness.ends() == {1: EXITED_FIRST, 0: EXITED_FIRST}
    assert harness.kept == [] and harness.events.stack == []
    assert harness.events.complete and harness.events.build_failure is None

    def compilation() -> None:
        harness.begin("Build", sys._getframe())
        harness.begin("Lower", sys._getframe())
        raise RuntimeError("lowering failed")

    try:
        compilation()
    except RuntimeError as exc:
        harness.events.close_open_passes(exc)  # the error leaves the context through both
    assert harness.ends()[3] == harness.ends()[2] == "RuntimeError: lowering failed"
    assert harness.kept == ["Lower"]  # the innermost pass that raised
    # An error of the user's own code is no build failure (that is an error raised in TVM).
    assert harness.events.build_failure is None and harness.events.complete


def test_an_after_callback_for_an_outer_event_ends_the_inner_ones_and_the_trace_says_so() -> None:
    harness = Harness()
    frame = sys._getframe()
    harness.begin("Sequential", frame, key=10)
    harness.begin("SimplifyExpr", frame, key=20)
    asked: List[str] = []

    def name() -> str:
        asked.append("name")
        return "Ghost"

    harness.events.unmatched_after(10, name)  # TVM ends the Sequential: SimplifyExpr's end was dropped
    assert harness.ends() == {1: CUT_BEFORE_AFTER}
    assert [o.record.name for o in harness.events.stack] == ["Sequential"] and asked == []
    harness.events.unmatched_after(30, name)  # TVM ends a pass whose beginning was dropped
    assert asked == ["name"] and not harness.events.complete
    assert harness.events.problems == [
        f"pass SimplifyExpr (#1) ended unrecorded: {CUT_BEFORE_AFTER}",
        "pass Ghost ran unrecorded: TVM dropped a Ctrl-C that landed as it called the instrument's "
        "run_before_pass (in TVM's own Python code, or before the callback's first line), never ran the callback, "
        "and went on"]


def test_an_interruption_cut_line_is_written_on_exit_and_an_ended_event_is_not_ended_twice() -> None:
    harness = Harness()
    frame = sys._getframe()
    events = harness.events
    sink = events.sink
    assert sink is not None
    harness.begin("Sequential", frame)
    ended = harness.begin("InferType", frame)
    sink.end(ended)  # its end line was written, then a Ctrl-C kept it on the stack
    cut = events.new_record("FoldConstant", 0, (), "relay")
    events.records.append(cut)  # a Ctrl-C between the record and its begin line
    events.close_open_passes(KeyboardInterrupt())
    lines = harness.lines()
    assert [(line["type"], line["index"]) for line in lines if line["type"] in ("begin", "end")] == [
        ("begin", 0), ("begin", 1), ("end", 1), ("end", 0), ("begin", 2), ("end", 2)]
    # The Sequential's frame is still running: it did not finish; the cut event says why it ended.
    assert harness.ends() == {1: None, 0: EXITED_FIRST, 2: "KeyboardInterrupt: "}
    assert harness.kept == []  # an interruption is not the pass's failure: nothing to replay
    assert not events.complete
    assert events.problems == ["the compilation was interrupted (KeyboardInterrupt) during pass FoldConstant (#2)"]


def test_a_failure_to_keep_the_input_is_a_problem_and_the_event_still_ends() -> None:
    def cannot_keep(opened: OpenEvent) -> Dict[str, Any]:
        raise OSError("disk full")

    harness = Harness(cannot_keep)
    try:
        _run_failing_pass(harness, "Broken", ValueError, "bad")
    except ValueError:
        harness.begin("Next", sys._getframe())
    assert harness.ends() == {0: "ValueError: bad"}
    assert harness.events.records[0].replay is None and not harness.events.complete
    assert harness.events.problems == ["the input module of the failing pass Broken could not be kept for relayviz "
                                       "replay: OSError: disk full"]


def test_a_section_ends_the_events_that_began_inside_it_and_records_name_their_context() -> None:
    harness = Harness()
    frame = sys._getframe()
    harness.begin("Outside", frame)
    harness.events.context = 1  # a process trace entered its second pass context
    harness.begin("Inside", frame)
    harness.begin("Deeper", frame)
    harness.events.end_section(1, None)
    assert harness.ends() == {2: "did not finish (its pass context exited first)",
                              1: "did not finish (its pass context exited first)"}
    assert [o.record.name for o in harness.events.stack] == ["Outside"]
    assert [r.context for r in harness.events.records] == [None, 1, 1]


def test_a_note_after_the_close_line_is_a_second_close_line_once() -> None:
    harness = Harness()
    events = harness.events
    events.note("a note before the close")
    assert events.notes == ["a note before the close"]
    assert [line["type"] for line in harness.lines()] == ["header"]  # the close line will carry it
    assert events.sink is not None
    events.sink.close(complete=True, problems=[], events=0, instrument_ms=0.0, notes=events.notes)
    events.note("the build returned no graph")
    events.note("the build returned no graph")
    events.problems_after_close(["recording the graph failed"])
    closes = [line for line in harness.lines() if line["type"] == "close"]
    assert [(c["complete"], c["problems"], c.get("notes")) for c in closes] == [
        (True, [], ["a note before the close"]),
        (True, [], ["the build returned no graph"]),
        (False, ["recording the graph failed"], None)]
