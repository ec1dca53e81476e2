"""Which events of a Relax build act on its pipeline: ``tvm.compile`` splits the lowered TIR
module with two ``Filter`` runs on it (host functions, then device ones) and goes on with the
host module, so the device module (empty on a CPU) is set aside, not a module the pipeline
emptied and something outside the passes filled again."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")

from relaxprograms import NEW_TVM, add_relu_module
from relayviz_instrument import load_trace
from relayviz_instrument.analysis.pipeline import PIPELINE, SCRATCH, event_roles, pipeline_gaps
from relayviz_instrument.capture import trace_compile
from relayviz_instrument.cli import main
from relayviz_instrument.demo.relax_models import relax_host_target


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``relu(x + y)`` through ``tvm.compile`` with the TIR passes traced."""
    if not NEW_TVM:
        pytest.skip("the host and device split by two Filter runs is tvm.compile's (TVM 0.2x)")
    path = tmp_path_factory.mktemp("tir") / "trace"
    trace_compile(add_relu_module(), target=relax_host_target(), out_dir=path, tir=True)
    return path


def _filters(path: Path) -> Any:
    records = load_trace(path).records
    return records, [r for r in records if r.name.endswith("Filter") and r.depth == 1]


def test_the_device_half_of_the_split_is_set_aside_and_no_change_is_outside_the_passes(compiled: Path) -> None:
    records, filters = _filters(compiled)
    if len(filters) != 2 or filters[0].before != filters[1].before:
        pytest.skip("this TVM does not split the lowered module with two Filter runs on it")
    host, device = filters
    assert host.nodes_after == host.nodes_before and device.nodes_after == 0  # all on the host: a CPU target
    following = next(r for r in records if r.index > device.index and r.depth == 1)
    assert following.before == host.after  # the build goes on with the host module
    roles = event_roles(records)
    assert roles[host.index] == PIPELINE and roles[device.index] == SCRATCH
    assert [g for g in pipeline_gaps(records) if device.after in (g.old, g.new)] == []


def test_show_has_no_row_falling_to_zero_and_names_the_set_aside_filter_scratch(compiled: Path, capsys: Any) -> None:
    _, filters = _filters(compiled)
    if len(filters) != 2:
        pytest.skip("this TVM does not split the lowered module with two Filter runs on it")
    assert main(["show", str(compiled), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    # The one change outside the passes left is real: the VM build keeps the PrimFuncs of the Relax module.
    assert [g for g in shown["gaps"] if filters[1].after in (g["before"], g["after"])] == []
    assert shown["roles"][str(filters[1].index)] == "scratch"
    assert main(["show", str(compiled)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"(?<!\d)0 -> |-> 0(?!\d)", out) is None and "Filter" not in out
    assert main(["show", str(compiled), "--all"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "Filter" in line]
    assert len(rows) == 2 and "scratch" in rows[1] and "scratch" not in rows[0]
