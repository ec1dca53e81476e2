"""Events close truthfully (capture/pass_frames.py): a pass that raised, whose exception the
user caught inside the pass context, is ended with that exception when the next event begins,
at the depth it had, and later passes are not its children; a trace whose pass context exited
without telling the instrument is closed at the process's end, saying why. On both TVMs, with
Relax modules (both have Relax)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, List

import pytest
import tvm
from tvm import relax

from relayviz_instrument import RelayVizTrace, load_trace
from relayviz_instrument.capture.pass_frames import RAISED_UNSEEN
from relayviz_instrument.demo.relax_models import relax_workload


@tvm.transform.module_pass(opt_level=0, name="Refuses")
def _refuses(mod: Any, ctx: Any) -> Any:
    raise ValueError("Refuses refuses this module")


def _show(path: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", "show", str(path), "--all"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def _shape(trace: Any) -> List[Any]:
    return [(r.name, r.depth, r.parent) for r in trace.records]


def test_a_caught_failing_pass_then_two_passes_are_three_records_at_depth_1(tmp_path: Path) -> None:
    # Before: the failed pass stayed open, the two passes after it were recorded as its
    # children, and it ended as "did not finish (the pass context exited first)".
    mod = relax_workload("mlp")
    trace = RelayVizTrace(tmp_path / "t")
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        with pytest.raises(ValueError, match="Refuses refuses") as caught:  # which keeps the exception
            _refuses(mod)
        relax.transform.LegalizeOps()(mod)
        relax.transform.DeadCodeElimination()(mod)
    assert _shape(trace) == [("Refuses", 1, None), ("LegalizeOps", 1, None), ("DeadCodeElimination", 1, None)]
    failed, *rest = trace.records
    assert caught.value is not None and failed.error == "ValueError: Refuses refuses this module"
    assert all(r.error is None for r in rest) and rest[0].changed
    assert failed.replay is not None  # its input is kept for relayviz replay, as for any failing pass
    assert trace.complete
    loaded = load_trace(tmp_path / "t")
    assert [r.to_json() for r in loaded.records] == [r.to_json() for r in trace.records]
    assert "pass Refuses (#0) failed: ValueError: Refuses refuses this module" in _show(tmp_path / "t")


def test_a_caught_failure_inside_a_sequential_ends_the_sequential_too() -> None:
    mod = relax_workload("mlp")
    trace = RelayVizTrace(False)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        try:
            tvm.transform.Sequential([relax.transform.LegalizeOps(), _refuses])(mod)
        except ValueError:
            pass  # the exception is gone by the next pass: nothing holds it
        relax.transform.FoldConstant()(mod)
    assert _shape(trace) == [("sequential", 1, None), ("LegalizeOps", 2, 0), ("Refuses", 2, 0),
                             ("FoldConstant", 1, None)]
    sequential, legalize, refuses, fold = trace.records
    assert legalize.error is None and fold.error is None
    # TVM 0.16 still holds the exception somewhere (it is then named); TVM 0.27 does not.
    assert refuses.error in ("ValueError: Refuses refuses this module", RAISED_UNSEEN)
    assert sequential.error == refuses.error


def test_a_pass_run_in_an_except_block_finds_the_exception_still_being_handled() -> None:
    mod = relax_workload("mlp")
    trace = RelayVizTrace(False)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        try:
            _refuses(mod)
        except ValueError:
            relax.transform.LegalizeOps()(mod)  # a fallback, run while the exception is handled
    assert _shape(trace) == [("Refuses", 1, None), ("LegalizeOps", 1, None)]
    assert trace.records[0].error == "ValueError: Refuses refuses this module"


@tvm.transform.module_pass(opt_level=0, name="TriesTwo")
def _tries_two(mod: Any, ctx: Any) -> Any:
    # A Python pass that runs other passes itself, and survives one of them failing.
    try:
        _refuses(mod)
    except ValueError:
        pass
    return relax.transform.LegalizeOps()(mod)


def test_passes_nested_by_a_python_pass_stay_its_children_after_one_failed() -> None:
    mod = relax_workload("mlp")
    trace = RelayVizTrace(False)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        _tries_two(mod)
        relax.transform.FoldConstant()(mod)
    assert _shape(trace) == [("TriesTwo", 1, None), ("Refuses", 2, 0), ("LegalizeOps", 2, 0),
                             ("FoldConstant", 1, None)]
    tries, refuses, legalize, fold = trace.records
    assert refuses.error is not None and tries.error is None and legalize.error is None
    assert tries.changed and trace.complete


def test_an_exception_leaving_the_context_ends_only_the_passes_it_went_through() -> None:
    mod = relax_workload("mlp")
    trace = RelayVizTrace(False)
    with pytest.raises(RuntimeError, match="later"):
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            kept = []
            try:
                _refuses(mod)
            except ValueError as exc:
                kept.append(exc)
            tvm.transform.Sequential([relax.transform.LegalizeOps()])(mod)
            raise RuntimeError("a later error of the user's own")
    assert _shape(trace) == [("Refuses", 1, None), ("sequential", 1, None), ("LegalizeOps", 2, 1)]
    refuses, sequential, legalize = trace.records
    assert refuses.error == "ValueError: Refuses refuses this module"  # named when the next pass began
    assert sequential.error is None and legalize.error is None  # the user's error went through no pass


_EXIT_NEVER_COMES = """
import sys
import tvm
from tvm import relax
from relayviz_instrument import RelayVizTrace
from relayviz_instrument.demo.relax_models import relax_workload


class PlainBase:
    pass


class ExitRaiser(PlainBase, tvm.instrument.PassInstrument):
    # Another instrument, listed before the trace, that raises when the context exits: TVM
    # then calls no later instrument's exit_pass_ctx.
    def exit_pass_ctx(self):
        raise RuntimeError("ExitRaiser refuses to leave")


trace = RelayVizTrace(sys.argv[1])
try:
    with tvm.transform.PassContext(opt_level=3, instruments=[ExitRaiser(), trace]):
        relax.transform.LegalizeOps()(relax_workload("mlp"))
except RuntimeError as exc:
    print("CAUGHT", exc)
"""


def test_a_trace_whose_exit_never_came_is_closed_at_the_end_of_the_process(tmp_path: Path) -> None:
    # Before: no close line, and show said "the process stopped during the compilation"; then a
    # close line calling the trace incomplete, though every pass event had been recorded.
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(_EXIT_NEVER_COMES))
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "t")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "CAUGHT ExitRaiser refuses to leave" in done.stdout
    lines = [json.loads(line) for line in (tmp_path / "t" / "manifest.jsonl").read_text().splitlines()]
    assert lines[-1]["type"] == "close" and [line["type"] for line in lines].count("close") == 1
    loaded = load_trace(tmp_path / "t")
    assert "LegalizeOps" in {r.name for r in loaded.records} and all(r.error is None for r in loaded.records)
    assert loaded.complete and loaded.problems == []
    assert loaded.notes == ["the pass context exited without calling this instrument's exit_pass_ctx (an "
                            "instrument listed before it raised there, and TVM then calls no later one), or a "
                            "Ctrl-C cut that callback short before it closed the trace; the trace was closed "
                            "when the process ended; every pass event had ended by then, so the trace misses "
                            "nothing"]
    shown = " ".join(_show(tmp_path / "t").split())
    assert "note: the pass context exited without calling this instrument's exit_pass_ctx" in shown
    assert "incomplete" not in shown and "the process stopped" not in shown


@pytest.mark.parametrize("written", [False, True], ids=["before-the-line-is-written", "after-it-is-written"])
def test_an_interruption_while_an_end_line_is_appended_closes_every_event_once(tmp_path: Path, written: bool) -> None:
    """Ctrl-C landing in the instrument while a pass's end line is appended, just before it is
    written or just after (a real SIGINT mid relay.build found both): the context's exit ends
    every event still open exactly once, and the trace says it was interrupted, not that an
    event ended twice."""
    mod = relax_workload("mlp")
    seq = tvm.transform.Sequential([relax.transform.LegalizeOps(), relax.transform.FoldConstant()])
    trace = RelayVizTrace(tmp_path / "t")
    with pytest.raises(KeyboardInterrupt):
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            assert trace._events.sink is not None
            store = trace._events.sink.store
            append = store.append
            fired: List[bool] = []

            def interrupted(line: Any) -> None:
                legalize_end = line.get("type") == "end" and line.get("index") == 1 and not fired
                fired.extend([True] if legalize_end else [])  # one signal: the exit's own lines go through
                if legalize_end and not written:
                    raise KeyboardInterrupt  # where a signal may land: nothing written yet
                append(line)
                if legalize_end:
                    raise KeyboardInterrupt  # the line is written, the sink has not noted it

            store.append = interrupted  # type: ignore[method-assign]  # the interruption is the point
            seq(mod)
    lines = [json.loads(line) for line in (tmp_path / "t" / "manifest.jsonl").read_text().splitlines()]
    begun = [line["index"] for line in lines if line["type"] == "begin"]
    ended = [line["index"] for line in lines if line["type"] == "end"]
    assert sorted(ended) == sorted(begun) == [0, 1] and len(set(ended)) == len(ended)  # every event ended, once
    loaded = load_trace(tmp_path / "t")
    assert [r.name for r in loaded.records] == ["sequential", "LegalizeOps"]
    assert not loaded.complete and any("interrupted" in p for p in loaded.problems), loaded.problems
    assert not any("ended twice" in p for p in loaded.problems), loaded.problems
    legalize = loaded.records[1]
    assert (legalize.error is None) is written  # ended by TVM when its line was written; else on the way out


def test_passes_made_anew_again_and_again_are_named_right_and_their_pass_infos_not_all_kept() -> None:
    """TVM makes the TIR passes anew for each function (1,806 PassInfos in a Llama-shaped
    compile), relay.build all of its passes anew for each build: the trace keeps a bounded
    number of them read, and names every pass right, one read before the oldest left."""
    from relayviz_instrument.capture.pass_info import PASS_INFOS_KEPT

    mod = relax_workload("mlp")
    first = tvm.transform.module_pass(lambda m, _: m, opt_level=0, name="Kept0")
    trace = RelayVizTrace(False)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        first(mod)
        for i in range(1, PASS_INFOS_KEPT + 44):
            tvm.transform.module_pass(lambda m, _: m, opt_level=i % 4, name=f"Kept{i}")(mod)
        assert len(trace._recorder.pass_infos) == PASS_INFOS_KEPT
        first(mod)  # its PassInfo was read first and has left: read again
    names = [r.name for r in trace.records]
    assert names == [f"Kept{i}" for i in range(PASS_INFOS_KEPT + 44)] + ["Kept0"]
    assert [r.opt_level for r in trace.records[1:5]] == [1, 2, 3, 0]
    assert trace.complete


def test_a_relay_build_with_the_aot_executor_is_complete_and_says_it_has_no_graph(tmp_path: Path) -> None:
    """``relay.build`` with the AOT executor returns compiled code and no graph (TVM's own
    test_build_module.py::test_schedule_record builds so): every pass is recorded, and the
    trace says why it ends at the last module instead of calling itself incomplete."""
    relay = pytest.importorskip("tvm.relay", reason="needs Relay (TVM <= 0.19; the .venv leg runs it)")
    import tvm.relay.testing
    from tvm.relay.backend import Executor, Runtime

    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    trace = RelayVizTrace(tmp_path / "t")
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        built = relay.build(mod, target="llvm -mtriple=x86_64-linux-gnu", params=params, executor=Executor("aot"),
                            runtime=Runtime("cpp"))
    assert trace.record_graph(built) is None
    assert type(built).__name__ == "AOTExecutorFactoryModule"
    loaded = load_trace(tmp_path / "t")
    assert loaded.complete and loaded.problems == []
    assert loaded.notes == ["what the build returned, AOTExecutorFactoryModule (the AOT executor), has no graph "
                            "to record: the trace ends at the last module the compilation's passes made"]
    shown = " ".join(_show(tmp_path / "t").split())
    assert "note: what the build returned, AOTExecutorFactoryModule (the AOT executor), has no graph" in shown
    assert "incomplete" not in shown and "was not recorded" not in shown
