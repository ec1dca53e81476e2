"""A Ctrl-C may land on any line of the instrument's callbacks: after each one, the trace on disk
is whole (every event begun and ended exactly once, one closing line), and what it says is true.

A real SIGINT lands where the timing puts it (tests/test_faults.py sends some mid relay.build,
and one CI run in a few hundred found an event whose begin line was cut short). Here the
interruption is placed on purpose: a trace function raises KeyboardInterrupt on one line of
``capture/instrument.py`` (or of the capture modules it calls into for its own work),
``capture/guard.py`` or ``store/sink.py`` (as a signal handler would, between two lines),
once for each line those files run while a two-pass Sequential is traced, on both TVMs.
Where the instrument's guard catches it, the compilation stops with CompilationInterrupted.
A line outside the guard sends a bare KeyboardInterrupt to TVM, which TVM 0.16 drops (the
build goes on) and TVM 0.27 turns into a RuntimeError; the trace then says what it missed
instead of reading as complete.
"""

from __future__ import annotations

import dis
import gc
import json
import sys
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
import tvm
from tvm import relax

from relayviz_instrument import RelayVizTrace, load_trace
from relayviz_instrument.capture import events as events_module
from relayviz_instrument.capture import guard as guard_module
from relayviz_instrument.capture import instrument as instrument_module
from relayviz_instrument.capture import lifecycle as lifecycle_module
from relayviz_instrument.capture import pass_info as pass_info_module
from relayviz_instrument.capture import recording as recording_module
from relayviz_instrument.capture import snapshotter as snapshotter_module
from relayviz_instrument.capture import threads as threads_module
from relayviz_instrument.demo.relax_models import relax_workload
from relayviz_instrument.errors import CompilationInterrupted
from relayviz_instrument.store import directory as directory_module
from relayviz_instrument.store import sink as sink_module

#: The instrument's callbacks and every module of capture/ they call into for their own work
#: (not the serializers, the policy or the change test), the guard, and the sink.
_WATCHED = {m.__file__ for m in (instrument_module, recording_module, events_module, lifecycle_module, threads_module,
                                 pass_info_module, snapshotter_module, guard_module, sink_module)}
_WHOLE = [("sequential", 1, None), ("LegalizeOps", 2, 0), ("FoldConstant", 2, 0)]
#: What a reader may never say of a trace an interruption went through: the instrument's own failure.
_BROKEN = ("twice", "never began", "the instrument failed")

Tracer = Callable[[FrameType, str, Any], Any]


def _interrupting(at: int, lines: Dict[Tuple[str, int], int], code: Optional[CodeType] = None) -> Tracer:
    """A trace function raising KeyboardInterrupt on the ``at``-th line run in the watched files,
    or in the function ``code`` only (none for 0, which notes where each line first ran in ``lines``)."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
            lines.setdefault((Path(frame.f_code.co_filename).name, frame.f_lineno), count)
            if count == at:
                raise KeyboardInterrupt  # the trace function is unset: one interruption per run
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Optional[Tracer]:
        if code is not None:
            return local if frame.f_code is code else None
        return local if frame.f_code.co_filename in _WATCHED else None

    return calls


def _trace_interrupted_at(at: int, where: Path, lines: Dict[Tuple[str, int], int],
                          code: Optional[CodeType] = None) -> Tuple[RelayVizTrace, str]:
    mod = relax_workload("mlp")
    seq = tvm.transform.Sequential([relax.transform.LegalizeOps(), relax.transform.FoldConstant()])
    trace = RelayVizTrace(where)
    outcome = "built"
    sys.settrace(_interrupting(at, lines, code))
    try:
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            seq(mod)
    except CompilationInterrupted:
        outcome = "interrupted"
    except Exception as exc:  # TVM 0.27 turns a bare KeyboardInterrupt from a callback into this
        outcome = type(exc).__name__
    finally:
        sys.settrace(None)
    if not trace._life.finished:  # as at the end of the process, where a trace never closed is closed
        lifecycle_module._close_unexited()
    return trace, outcome


def _what_is_wrong(trace: RelayVizTrace, outcome: str, where: Path) -> Optional[str]:
    """What is wrong with the trace at ``where`` after one interruption, or None."""
    manifest = where / "manifest.jsonl"
    if not manifest.exists():  # cut short before the trace had a manifest: it says so, or the build failed
        said = " ".join(trace.problems)
        if outcome == "built" and "the trace never opened" not in said:
            return f"no manifest, the build went on, and the trace said {trace.problems}"
        return None
    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    kinds = [line["type"] for line in lines]
    begun = [line["index"] for line in lines if line["type"] == "begin"]
    ended = [line["index"] for line in lines if line["type"] == "end"]
    if "close" not in kinds:  # only while the trace opened, and the caller was told
        if begun or outcome != "interrupted":
            return f"no close line: {kinds}, {outcome}"
        return None
    if kinds.count("close") != 1 or kinds[-1] != "close":
        return f"close lines: {kinds}"
    if len(set(begun)) != len(begun) or len(set(ended)) != len(ended) or set(begun) != set(ended):
        return f"events begun {begun}, ended {ended}"
    loaded = load_trace(where)
    if any(word in problem for problem in loaded.problems for word in _BROKEN):
        return f"problems {loaded.problems}"
    shape = [(r.name, r.depth, r.parent) for r in loaded.records]
    if loaded.complete and loaded.build_failure is None and (
            shape != _WHOLE or any(r.error is not None for r in loaded.records)):
        return f"complete, yet {[(r.name, r.depth, r.error) for r in loaded.records]}"
    if outcome == "built" and shape != _WHOLE and loaded.complete:
        return f"built and complete, yet {shape}"
    return None


# TVM 0.16 prints and drops a bare KeyboardInterrupt from a callback; the trace's warnings are expected.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore::relayviz_instrument.errors.TraceIncompleteWarning")
def test_a_ctrl_c_on_any_line_of_the_instrument_leaves_a_whole_and_truthful_trace(tmp_path: Path) -> None:
    lines: Dict[Tuple[str, int], int] = {}
    trace, outcome = _trace_interrupted_at(0, tmp_path / "uninterrupted", lines)
    assert outcome == "built" and _what_is_wrong(trace, outcome, tmp_path / "uninterrupted") is None
    assert trace.complete and [(r.name, r.depth, r.parent) for r in trace.records] == _WHOLE
    # Each line, where it first ran (the Sequential's events come first: the context, a
    # beginning at depth 1, then at depth 2, ends at both depths, the exit).
    positions = sorted(set(lines.values()))
    assert len(positions) > 150, len(positions)  # the callbacks, the guard and the sink all ran
    wrong: List[str] = []
    outcomes: Dict[str, int] = {}
    for at in positions:
        where = tmp_path / f"at{at}"
        trace, outcome = _trace_interrupted_at(at, where, {})
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        found = _what_is_wrong(trace, outcome, where)
        if not gc.isenabled():  # the trace pauses the garbage collector while it serializes a snapshot
            gc.enable()
            found = f"the garbage collector was left off; {found}"
        if found is not None:
            line = next(key for key, first in lines.items() if first == at)
            wrong.append(f"line {line[0]}:{line[1]} ({outcome}): {found}")
    assert not wrong, "\n".join(wrong)
    # Most lines are inside the guard, which carries the interruption to the caller.
    assert outcomes.get("interrupted", 0) > len(positions) // 2, outcomes


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore::relayviz_instrument.errors.TraceIncompleteWarning")
def test_a_ctrl_c_on_any_line_of_any_manifest_append_leaves_a_whole_and_truthful_trace(tmp_path: Path) -> None:
    # The store counts the manifest's bytes instead of asking the file at every line, and the
    # sink settles a line cut short by that count: an interruption between the count and the
    # write must not make an unwritten line count as written (its event would then lack a
    # line), nor a written one as unwritten (a second line). The test above interrupts each
    # line where it first runs (the header's append); here every run of every line of
    # append, whichever line it writes.
    append = directory_module.DirectoryStore.append.__code__
    wrong = []
    for at in range(1, 1000):  # until the at-th line is past the last one append runs
        where = tmp_path / f"at{at}"
        trace, outcome = _trace_interrupted_at(at, where, {}, append)
        if outcome == "built":
            break
        found = _what_is_wrong(trace, outcome, where)
        if found is not None:
            wrong.append(f"line run {at} ({outcome}): {found}")
    assert not wrong, "\n".join(wrong)
    # Every line of the header's, the six event lines' and the close's appends was interrupted.
    assert at > 8 * 6 and trace.complete and _what_is_wrong(trace, outcome, where) is None, at


@pytest.mark.skipif(sys.version_info >= (3, 11), reason="CPython 3.11 handles a pending signal at RESUME, "
                                                        "before any try (the Relay leg, Python 3.10, runs this)")
def test_every_callback_begins_with_the_try_that_carries_a_ctrl_c_pending_on_entry() -> None:
    # A Ctrl-C that came while TVM's C++ code ran fires at the first instruction of the Python
    # callback TVM calls next, unless that instruction begins a try block (CPython 3.10 holds
    # pending signals there): a body grown past 255 instructions begins with EXTENDED_ARG instead.
    from relayviz_instrument.autotrace.process_trace import ProcessTrace
    from relayviz_instrument.capture.bisect import RelayVizBisect

    callbacks = [getattr(cls, name) for cls in (RelayVizTrace, ProcessTrace, RelayVizBisect)
                 for name in ("enter_pass_ctx", "exit_pass_ctx", "should_run", "run_before_pass", "run_after_pass")
                 if name in vars(cls)]
    assert len(callbacks) == 11
    first = {f.__qualname__: next(iter(dis.get_instructions(f))).opname for f in callbacks}
    assert set(first.values()) == {"SETUP_FINALLY"}, first


def test_a_pass_failing_under_trace_build_is_its_failure_not_an_interruption(tmp_path: Path) -> None:
    # The pass's exception goes through trace_build and compile_relax, which live beside the
    # callbacks in capture/: only a callback's own frame marks a Ctrl-C that TVM turned into
    # another error.
    relay = pytest.importorskip("tvm.relay", reason="trace_build needs Relay (the .venv leg runs it)")
    from relayviz_instrument.capture import trace_build

    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(3,))
    mod = tvm.IRModule.from_expr(relay.Function([x, y], relay.add(x, y)))  # shapes that cannot broadcast
    with pytest.raises(Exception) as caught:
        trace_build(mod, target="llvm -mtriple=x86_64-linux-gnu", out_dir=tmp_path / "t")
    assert not isinstance(caught.value, KeyboardInterrupt)
    loaded = load_trace(tmp_path / "t")
    failed = [r for r in loaded.records if r.error is not None]
    assert failed and all("Ctrl-C" not in r.error for r in failed), [r.error for r in failed]
    assert not any("interrupted" in p for p in loaded.problems), loaded.problems
