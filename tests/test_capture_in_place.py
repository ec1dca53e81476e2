"""A module edited in place is a changed module: by a pass that returns its input edited (as
dlight's ApplyDefaultSchedule does, ``mod[gv] = f; return mod``), and by code between passes.
On each leg: a Relay module on TVM 0.16, a ``tvm.relax.frontend.nn`` module on TVM 0.2x."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Tuple

import orjson
import pytest
import tvm

from conftest import HAS_RELAY
from relayviz_instrument import RelayVizTrace, load_trace
from relayviz_instrument.analysis.pipeline import pipeline_gaps
from relayviz_instrument.cli import main


def _workload() -> Tuple[Any, Callable[[Any], Any], Any, str]:
    """``(module, edit, next pass, what the edit adds)``: a typed module, an edit of its entry
    function (:func:`_entry`) that a diff shows, a pass that changes something else, and the
    edit's mark (an operator it adds, or an attribute it sets)."""
    if HAS_RELAY:
        from tvm import relay

        x = relay.var("x", shape=(1, 8), dtype="float32")
        w = relay.var("w", shape=(4, 8), dtype="float32")
        body = relay.add(relay.nn.relu(relay.nn.dense(x, w)), relay.const(0.0))
        mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], body)))

        def edit(func: Any) -> Any:
            return relay.Function(func.params, relay.nn.softmax(func.body), None, func.type_params, func.attrs)

        return mod, edit, relay.transform.SimplifyExpr(), "nn.softmax"
    from tvm import relax

    from relayviz_instrument.demo.relax_models import relax_workload

    def edit(func: Any) -> Any:
        return func.with_attr("edited_in_place", "yes")

    return relax_workload("mlp"), edit, relax.transform.LegalizeOps(), "edited_in_place"


def _entry(mod: Any) -> Any:
    """The GlobalVar of the module's entry function: Relay's ``main``, the nn module's ``forward``."""
    return mod.get_global_var("main" if HAS_RELAY else "forward")


def _introduces(shown: Any, mark: str) -> bool:
    """Whether a pass's report (``report --json``) adds a node or sets a field that is the edit's."""
    return (any(mark in orjson.dumps(node).decode() for node in shown["added"])
            or any(mark in name for node in shown["changed"] for name in node["fields"]))


@tvm.transform.module_pass(opt_level=0, name="EditInPlace")
class EditInPlace:
    """A Python module pass written the usual way: ``mod[gv] = f; return mod``."""

    def __init__(self, edit: Callable[[Any], Any]) -> None:
        self.edit = edit

    def transform_module(self, mod: Any, ctx: Any) -> Any:
        gvar = _entry(mod)
        mod[gvar] = self.edit(mod[gvar])
        return mod


def _report(path: Path, pattern: str, capsys: pytest.CaptureFixture[str]) -> Any:
    assert main(["report", str(path), "--pass", pattern, "--json"]) == 0
    return orjson.loads(capsys.readouterr().out)


def test_a_pass_that_edits_its_input_in_place_is_recorded_with_exactly_its_edit(tmp_path, capsys) -> None:
    mod, edit, following, mark = _workload()
    path = tmp_path / "trace"
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(path)]):
        edited = EditInPlace(edit)(mod)
        assert edited.same_as(mod)  # the very object it was given
        following(edited)
    trace = load_trace(path)
    first, second = (r for r in trace.records if r.depth == 1)
    assert first.name == "EditInPlace" and first.changed is True and first.before != first.after
    assert second.before == first.after  # the next pass received what the edit made
    report = _report(path, "EditInPlace", capsys)
    (shown,) = report["passes"]
    assert shown["index"] == first.index
    assert _introduces(shown, mark) and shown["summary"]["removed"] == 0
    # The next pass's report holds none of the edit.
    later = _report(path, f"^{second.name}$", capsys)["passes"]
    assert later and not any(_introduces(p, mark) for p in later)
    assert pipeline_gaps(trace.records) == []


def test_code_that_edits_the_module_between_two_passes_is_a_change_outside_any_pass(tmp_path, capsys) -> None:
    mod, edit, following, mark = _workload()
    path = tmp_path / "trace"
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(path)]):
        mod = following(mod)
        gvar = _entry(mod)
        mod[gvar] = edit(mod[gvar])  # the user's code, between two passes
        following(mod)
    trace = load_trace(path)
    (gap,) = pipeline_gaps(trace.records)
    assert gap.between is not None and gap.between["function"].endswith(
        "test_code_that_edits_the_module_between_two_passes_is_a_change_outside_any_pass")
    assert gap.between["file"] == __file__
    assert mark in orjson.dumps(trace.snapshot(gap.new)).decode()
    assert mark not in orjson.dumps(trace.snapshot(gap.old)).decode()
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "(outside any pass)" in shown
    assert "note: the module changed 1 time(s) outside any recorded pass" in " ".join(shown.split())
    assert "test_capture_in_place.py:" in shown  # where: the line that ran the next pass
