"""The guard every callback of RelayVizTrace runs in: it times the instrument's own work, turns
a failure into one warning and an incomplete trace while the compilation goes on, and carries
Ctrl-C through TVM. First the guard alone, then on real compilations."""

from __future__ import annotations

import gc
import os
import sys
import warnings
import weakref
from pathlib import Path
from typing import Any, List, Optional, Tuple

import pytest
import tvm

from relayviz_instrument import RelayVizTrace, TraceIncompleteWarning, load_trace
from relayviz_instrument.capture import instrument as instrument_module
from relayviz_instrument.capture.guard import InstrumentGuard
from relayviz_instrument.demo.relax_models import relax_workload
from relayviz_instrument.errors import CompilationInterrupted, RelayVizTraceError
from relayviz_instrument.store import TraceSink

HOST = "llvm -mtriple=x86_64-linux-gnu"


class Failures:
    """What a trace's ``fail`` is handed: ``(exception, pass name, stacklevel)`` per call."""

    def __init__(self) -> None:
        self.seen: List[Tuple[Exception, str, int]] = []

    def __call__(self, exc: Exception, pass_name: str, *, stacklevel: int) -> None:
        self.seen.append((exc, pass_name, stacklevel))


class Clock:
    """A pass begun in a guarded call (the instrument's ``_OpenPass`` has the same two fields)."""

    started = 0.0
    overhead_at_start = 0.0


# -- the guard alone ---------------------------------------------------------------------------

def test_a_failure_goes_to_the_trace_named_by_its_pass_and_the_call_returns() -> None:
    failures = Failures()
    guard = InstrumentGuard(failures)
    broken = ValueError("a serializer bug")
    with guard(tvm.transform.PassInfo(2, "FoldConstant", required=[])):
        raise broken
    assert failures.seen == [(broken, "FoldConstant", 3)]  # stacklevel 3: the warning names the callback
    assert guard.seconds > 0.0


def test_an_interruption_is_raised_again_as_compilation_interrupted() -> None:
    failures, clock, then = Failures(), Clock(), []
    guard = InstrumentGuard(failures)
    interrupt = KeyboardInterrupt()
    with pytest.raises(CompilationInterrupted) as caught:
        with guard(tvm.transform.PassInfo(0, "FuseOps", required=[]), then=lambda: then.append(guard.seconds)) as call:
            call.starts(clock)
            raise interrupt
    assert isinstance(caught.value, KeyboardInterrupt) and isinstance(caught.value, Exception)
    assert caught.value.original is interrupt and caught.value.__cause__ is interrupt
    assert str(caught.value).startswith("KeyboardInterrupt during pass FuseOps")
    assert failures.seen == []  # an interruption is not the instrument's failure
    # Whatever stopped the call, what follows it still happens: the trace is closed, the time
    # counted, the begun pass's clock started.
    assert then == [0.0] and guard.seconds > 0.0
    assert clock.overhead_at_start == guard.seconds and clock.started >= call.started


def test_system_exit_is_carried_too() -> None:
    guard = InstrumentGuard(Failures())
    with pytest.raises(CompilationInterrupted, match="^SystemExit during pass .entering the pass context."):
        with guard("(entering the pass context)"):
            raise SystemExit(3)


def test_a_method_the_user_calls_points_its_warning_at_the_caller() -> None:
    # record_graph raised into the user's code (the guard only timed it); it is guarded like
    # every callback, its warning pointing one frame further out.
    failures = Failures()
    guard = InstrumentGuard(failures)
    with guard("(recording the built graph)", stacklevel=4):
        raise ValueError("not a graph")
    with guard("FoldConstant"):
        raise ValueError("a serializer bug")
    assert [(str(e), name, level) for e, name, level in failures.seen] == [
        ("not a graph", "(recording the built graph)", 4), ("a serializer bug", "FoldConstant", 3)]


def test_then_runs_after_the_failure_is_recorded_and_before_the_time_is_counted() -> None:
    order: List[str] = []
    at_then: List[float] = []

    def fail(exc: Exception, pass_name: str, *, stacklevel: int) -> None:
        order.append(f"fail {pass_name}")

    def then() -> None:
        order.append("then")
        at_then.append(guard.seconds)

    guard = InstrumentGuard(fail)
    with guard("(leaving the pass context)", then=then):
        raise OSError("disk full")
    assert order == ["fail (leaving the pass context)", "then"]
    assert at_then == [0.0] and guard.seconds > 0.0


def test_a_pass_clock_starts_when_the_call_ends_and_seconds_add_up() -> None:
    guard = InstrumentGuard(Failures())
    clock = Clock()
    with guard("first") as call:
        call.starts(clock)
    first = guard.seconds
    assert clock.overhead_at_start == first > 0.0 and clock.started > call.started
    with guard("second"):
        pass
    assert guard.seconds > first and clock.overhead_at_start == first


def test_a_call_inside_another_is_guarded_on_its_own_and_nothing_outlives_its_call() -> None:
    failures = Failures()
    guard = InstrumentGuard(failures)
    clock = Clock()
    with guard("(outer)") as outer:
        outer.starts(clock)
        with guard("(inner)") as inner:
            assert inner is not outer
            raise ValueError("inner failure")
        inner_seconds = guard.seconds
        assert inner_seconds > 0.0 and outer.started > 0.0
    assert [name for _, name, _ in failures.seen] == ["(inner)"]
    assert guard.seconds > inner_seconds and clock.overhead_at_start == guard.seconds
    # The pass begun in a call (its module, in the instrument) is not kept by the guard after it.
    released = weakref.ref(clock)
    del clock
    gc.collect()
    assert released() is None


def test_a_paused_collector_is_on_again_when_the_call_ends_whatever_ends_it() -> None:
    guard = InstrumentGuard(Failures())
    assert gc.isenabled()
    with guard("(a snapshot)"):
        guard.pause_gc()
        assert not gc.isenabled()
        guard.resume_gc()
        assert gc.isenabled()
    with guard("(a snapshot that failed)"):
        guard.pause_gc()
        raise ValueError("a serializer bug")
    assert gc.isenabled()
    with pytest.raises(CompilationInterrupted):
        with guard("(a snapshot interrupted)"):
            guard.pause_gc()
            raise KeyboardInterrupt
    assert gc.isenabled()


def test_a_process_with_the_garbage_collector_off_keeps_it_off() -> None:
    guard = InstrumentGuard(Failures())
    gc.disable()
    try:
        with guard("(a snapshot)"):
            guard.pause_gc()
            assert not gc.isenabled()
            guard.resume_gc()
        assert not gc.isenabled()  # it resumes only what it paused
    finally:
        gc.enable()


def test_a_pass_name_is_read_only_when_something_fails() -> None:
    class Unnamed:
        @property
        def name(self) -> str:
            raise AssertionError("the name was read although nothing failed")

    guard = InstrumentGuard(Failures())
    with guard(Unnamed()):
        pass
    assert guard.seconds > 0.0


# -- every callback, on real compilations --------------------------------------------------------

def test_no_collection_runs_while_a_snapshot_is_serialized_and_the_build_is_the_same(tmp_path: Path) -> None:
    relax = pytest.importorskip("tvm.relax")
    # The snapshots of a tir=True trace make the most garbage-collector work of any trace.
    serializers = str(Path(instrument_module.__file__).parent.parent / "serialize")
    snapshots: List[str] = []  # where a collection started while a snapshot was serialized
    outside: List[int] = []

    def noted(phase: str, info: Any) -> None:
        if phase != "start":
            return
        stack, frame = [], sys._getframe(1)
        while frame is not None:
            stack.append(frame.f_code)
            frame = frame.f_back
        if any(code.co_name == "_take" for code in stack) and any(
                code.co_filename.startswith(serializers) for code in stack):
            snapshots.append(f"{stack[0].co_filename}:{stack[0].co_name}")
        else:
            outside.append(info["generation"])

    def built(instruments: List[Any]) -> str:
        with tvm.transform.PassContext(opt_level=3, instruments=instruments):
            return str(relax.transform.LegalizeOps()(relax_workload("mlp")))

    plain = built([])
    gc.callbacks.append(noted)
    try:
        traced = built([RelayVizTrace(tmp_path / "t", tir=True)])
        assert gc.isenabled()
        gc.collect(0)  # the hook sees collections outside the instrument
    finally:
        gc.callbacks.remove(noted)
    assert traced == plain
    assert outside and not snapshots, (snapshots, outside)


def test_note_bisect_is_timed_like_every_other_callback() -> None:
    # note_bisect had a guard of its own, without timing: its time was missing from
    # instrument_seconds (and the manifest's instrument_ms).
    mod = relax_workload("mlp")
    trace = RelayVizTrace(False)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        before = trace.instrument_seconds
        trace.note_bisect(mod, tvm.transform.PassInfo(1, "FoldConstant", required=[]), 0, True)
        spent = trace.instrument_seconds - before
    assert spent > 0.0
    assert trace.records[-1].name == "FoldConstant" and trace.records[-1].skipped and trace.complete


def test_ctrl_c_while_bisection_records_a_skipped_pass_reaches_the_caller(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # note_bisect had no BaseException branch: a KeyboardInterrupt left RelayVizBisect.should_run
    # bare, and TVM turned it into an unrelated InternalError.
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument import RelayVizBisect

    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    trace = RelayVizTrace(tmp_path / "t")
    bisect = RelayVizBisect(0, trace=trace)
    write_begin = TraceSink.begin
    interrupted: List[str] = []

    def begin(sink: TraceSink, record: Any) -> None:
        if record.skipped and not interrupted:  # Ctrl-C as the first skipped event is written
            interrupted.append(record.name)
            raise KeyboardInterrupt
        write_begin(sink, record)

    monkeypatch.setattr(TraceSink, "begin", begin)
    with pytest.raises(CompilationInterrupted) as caught:
        with tvm.transform.PassContext(opt_level=3, instruments=[trace, bisect]):
            relay.optimize(mod, target=HOST, params=params)
    assert isinstance(caught.value.original, KeyboardInterrupt)
    assert str(caught.value).startswith(f"KeyboardInterrupt during pass {interrupted[0]} ")
    assert [name for _, name, _ in bisect.decisions] == interrupted  # the compilation stopped there
    loaded = load_trace(tmp_path / "t")
    assert not loaded.complete
    last = loaded.records[-1]
    assert last.skipped and last.name == interrupted[0]
    assert f"CompilationInterrupted: KeyboardInterrupt during pass {interrupted[0]} " in last.error
    assert any(p.startswith("the compilation was interrupted (CompilationInterrupted)") for p in loaded.problems)
    lines = (tmp_path / "t" / "manifest.jsonl").read_text().splitlines()
    assert sum('"type":"begin"' in line for line in lines) == sum('"type":"end"' in line for line in lines)


def _same_build(a: Any, b: Any) -> bool:
    from tvm import relay

    return bool(a.get_graph_json() == b.get_graph_json()
                and relay.save_param_dict(a.get_params()) == relay.save_param_dict(b.get_params()))


def _build(mod: Any, params: Any, instruments: Optional[List[Any]] = None) -> Any:
    from tvm import relay

    with tvm.transform.PassContext(opt_level=3, instruments=instruments or []):
        return relay.build(mod, target="llvm", params=params)


def test_unwritable_output_directory_warns_once_and_the_build_succeeds(tmp_path: Path) -> None:
    import tvm.relay.testing

    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the trace directory should go")
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    plain = _build(mod, params)
    trace = RelayVizTrace(blocker / "trace")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib = _build(mod, params, [trace])
    ours = [w for w in caught if issubclass(w.category, TraceIncompleteWarning)]
    assert len(ours) == 1
    assert "not-a-directory" in str(ours[0].message)
    assert Path(ours[0].filename).name == "instrument.py"  # the callback that failed, not the guard
    assert trace.complete is False and trace.problems
    assert _same_build(lib, plain)


@tvm.transform.module_pass(opt_level=0, name="BreakTheDisk")
def _break_the_disk(mod: Any, ctx: Any) -> Any:
    # Mid-compilation the snapshot folder becomes a file: every later snapshot write fails,
    # as it would on a full or vanished disk.
    target = Path(os.environ["RELAYVIZ_TEST_SNAPSHOTS"])
    if not target.is_dir():  # the reference run, without a trace
        return mod
    for child in target.iterdir():
        child.unlink()
    target.rmdir()
    target.write_text("")
    return mod


def test_write_failure_mid_compilation_is_one_warning_and_an_incomplete_trace(resnet18: Any, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from tvm import relay

    mod, _ = resnet18
    monkeypatch.setenv("RELAYVIZ_TEST_SNAPSHOTS", str(tmp_path / "t" / "snapshots"))
    seq = tvm.transform.Sequential([relay.transform.InferType(), _break_the_disk,
                                    relay.transform.SimplifyInference(), relay.transform.FoldConstant()])
    with tvm.transform.PassContext(opt_level=3):
        expected = seq(mod)
    trace = RelayVizTrace(tmp_path / "t")
    monkeypatch.setenv("RELAYVIZ_TEST_SNAPSHOTS", str(tmp_path / "t" / "snapshots"))
    with pytest.warns(TraceIncompleteWarning, match="recording stopped at pass") as caught:
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            out = seq(mod)
    ours = [w for w in caught if issubclass(w.category, TraceIncompleteWarning)]
    assert len(ours) == 1
    assert tvm.ir.structural_equal(out, expected)
    # The warning names the first pass that needed a snapshot after the disk broke.
    names = [r.name for r in trace.records]
    stopped_at = names[-1]
    assert names.index("BreakTheDisk") < len(names) - 1
    assert f"recording stopped at pass {stopped_at}:" in str(ours[0].message)
    loaded = load_trace(tmp_path / "t")
    assert not loaded.complete
    assert any(f"failed in pass {stopped_at}" in p for p in loaded.problems)


def test_strict_mode_raises_instead(tmp_path: Path) -> None:
    import tvm.relay.testing

    blocker = tmp_path / "file"
    blocker.write_text("")
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    with pytest.raises(RelayVizTraceError, match="cannot create the trace directory"):
        _build(mod, params, [RelayVizTrace(blocker / "trace", strict=True)])


# -- RelayVizBisect on every TVM, and Ctrl-C while it decides -----------------------------------

def _relax_pipeline() -> Any:
    from tvm import relax

    return tvm.transform.Sequential([relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
                                     relax.transform.FoldConstant(), relax.transform.FuseOps()])


def test_bisection_limits_a_relax_pipeline_on_every_tvm() -> None:
    # On TVM 0.27 the instrument could not be made: tvm-ffi's object classes have no __dict__,
    # and setting its limit raised AttributeError.
    from relayviz_instrument import RelayVizBisect

    mod = relax_workload("mlp")
    trace = RelayVizTrace(False)
    bisect = RelayVizBisect(1, trace=trace, min_opt_level=0)  # Relax passes are at opt_level 0
    with tvm.transform.PassContext(opt_level=3, instruments=[trace, bisect]):
        _relax_pipeline()(mod)
    assert bisect.limit == 1 and [skipped for _, _, skipped in bisect.decisions][:2] == [False, True]
    assert [r.name for r in trace.records if r.skipped] == [name for _, name, skipped in bisect.decisions if skipped]
    assert trace.complete


def test_ctrl_c_while_bisection_decides_reaches_the_caller() -> None:
    # should_run's own code ran outside any guard: a KeyboardInterrupt there reached TVM bare,
    # which drops it (hhb-tvm turns it into an unrelated InternalError).
    from relayviz_instrument import RelayVizBisect

    class InterruptedWhileDeciding(RelayVizBisect):
        def _skippable(self, mod: Any, info: Any, name: str) -> bool:
            if name == "FoldConstant":
                raise KeyboardInterrupt
            return super()._skippable(mod, info, name)

    bisect = InterruptedWhileDeciding(None, min_opt_level=0)
    with pytest.raises(CompilationInterrupted) as caught:
        with tvm.transform.PassContext(opt_level=3, instruments=[bisect]):
            _relax_pipeline()(relax_workload("mlp"))
    # TVM 0.2x's FFI rebuilds the exception from its class name: the interrupt itself stays behind.
    assert caught.value.original is None or isinstance(caught.value.original, KeyboardInterrupt)
    assert str(caught.value).startswith("KeyboardInterrupt during pass FoldConstant ")
