"""Several compilations in one pass context: each is a section of its own, and what each built
is attached to it by content, whatever order it is recorded in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Tuple

import pytest
import tvm
import tvm.relay.testing
from tvm import relay

from relayviz_instrument import OpDeltaTable, RelayVizTrace, load_trace, report_trace
from relayviz_instrument import diff
from relayviz_instrument.store.builds import split_builds
from relayviz_instrument.analysis.pipeline import pipeline_gaps

TARGET = "llvm -mtriple=x86_64-linux-gnu"


def _kernels(lib: Any) -> set:
    """The kernels a built graph runs, read from its graph executor JSON."""
    return {n["attrs"]["func_name"] for n in json.loads(lib.get_graph_json())["nodes"] if n["op"] == "tvm_op"}


def _show(path: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", "show", str(path), *args],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, Any, Any]:
    """An MLP, then a SqueezeNet, built in one context; their graphs recorded in reverse order."""
    mlp, mlp_params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    squeeze, squeeze_params = tvm.relay.testing.squeezenet.get_workload(batch_size=1, image_shape=(3, 64, 64))
    path = tmp_path_factory.mktemp("builds") / "trace"
    trace = RelayVizTrace(path)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        first = relay.build(mlp, target=TARGET, params=mlp_params)
        second = relay.build(squeeze, target=TARGET, params=squeeze_params)
    trace.record_graph(second)
    trace.record_graph(first)
    return path, first, second


def test_each_build_is_a_section_with_its_own_graph(two_builds) -> None:
    path, first, second = two_builds
    trace = load_trace(path)
    builds = split_builds(trace.records)
    assert [b.number for b in builds] == [1, 2]
    mlp_build, squeeze_build = builds
    (mlp_graph,), (squeeze_graph,) = mlp_build.artifacts, squeeze_build.artifacts
    assert trace.snapshot(mlp_graph.after)["nodes"] and mlp_graph.index > squeeze_graph.index  # recorded last
    kernels = {n["name"] for n in trace.snapshot(mlp_graph.after)["nodes"] if n["node_kind"] == "Op"}
    assert kernels == _kernels(first)  # the MLP's graph...
    last_mlp_module = [trace.records[i] for i in mlp_build.events if trace.records[i].after and
                       trace.records[i].ir == "relay"][-1]
    assert mlp_graph.before == last_mlp_module.after  # ...diffed against the MLP's last module, not SqueezeNet's
    shown = _show(path)
    assert f"build 1: events #{mlp_build.first} to #{mlp_build.last} (built: GraphExecutorCodegen #{mlp_graph.index})" \
        in shown
    assert f"build 2: events #{squeeze_build.first} to #{squeeze_build.last} (built: GraphExecutorCodegen " \
           f"#{squeeze_graph.index})" in shown
    assert "not recorded" not in shown
    # relay.build adds the memory plan of main to the module between two passes: a visible change
    for build in builds:
        members = [trace.records[i] for i in build.events]
        for gap in pipeline_gaps(members):
            result = diff(trace.snapshot(gap.old), trace.snapshot(gap.new))
            assert result.summary["unchanged"] == len(trace.snapshot(gap.old)["nodes"])
            assert [m.field for m in result.module] == ["attrs.main_func_info"]
    graph_row = next(line for line in shown.splitlines() if line.lstrip().startswith(f"{mlp_graph.index} "))
    assert " — " in graph_row  # not a pass: no time of its own, never "0.0"


def test_the_operator_table_of_each_build_sums_only_that_build(two_builds) -> None:
    path, first, second = two_builds
    report = report_trace(load_trace(path))
    assert len(report.builds) == 2
    for build, lib in zip(report.builds, (first, second)):
        counted = {op for op, (plus, _, _) in OpDeltaTable(build.op_deltas).rows.items() if plus and (
            op.startswith("tvmgen_") or op == "__nop")}
        assert counted == _kernels(lib)  # each table holds its own build's kernels, and only those


def test_a_vm_compile_records_its_bytecode_and_the_type_definitions_it_added(tmp_path: Path) -> None:
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    trace = RelayVizTrace(tmp_path / "trace")
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        exe = relay.vm.compile(mod, target=TARGET, params=params)
    assert "its built graph was not recorded" in _show(tmp_path / "trace")
    record = trace.record_graph(exe)
    assert record.name == "VMCompiler" and record.ir == "vm_executable"
    doc = trace.snapshot(record.after)
    kernels = {n["name"] for n in doc["nodes"] if n["node_kind"] == "Op" and not n["name"].startswith("vm.")}
    assert kernels == set(exe.primitive_ops)
    assert sum(1 for n in doc["nodes"] if n["node_kind"] == "Call") == sum(
        1 for line in exe.bytecode.splitlines() if "#" in line and line.split("#")[1].split()[:1] != ["kill_register"]
        and line.split("#")[1].split()[:1] not in (["ret"], ["inst(text):"]) and line.strip()[0].isdigit())
    shown = _show(tmp_path / "trace")
    assert "not recorded" not in shown and "VMCompiler" in shown
    # ManifestAllocImportStorage adds the Storage type definition and nothing else: a visible change
    report = report_trace(load_trace(tmp_path / "trace"), "^ManifestAllocImportStorage$")
    (change,) = [c for c in report.passes if c.diff.module]
    assert [m.field for m in change.diff.module] == ["type_definitions.Storage"]
    assert change.diff.module[0].before is None and change.diff.module[0].after is not None  # added
    from rich.console import Console

    console = Console(width=120, record=True, color_system=None)
    console.print(report)
    assert "module  type_definitions.Storage added" in console.export_text()


def test_a_module_holding_only_a_type_definition_is_recorded_and_nothing_was_lowered(tmp_path: Path) -> None:
    # Before: such a module was "empty" (no snapshot), and a trace of empty modules read as a
    # model lowered by relay.build.
    mod = tvm.IRModule()
    box = relay.GlobalTypeVar("Box")
    a = relay.TypeVar("a")
    mod[box] = relay.TypeData(box, [a], [relay.Constructor("box", [a], box)])
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(tmp_path / "trace")]):
        relay.transform.InferType()(mod)
        relay.transform.FoldConstant()(mod)
    trace = load_trace(tmp_path / "trace")
    assert [r.ir for r in trace.records] == ["relay"] * 3 and all(r.before for r in trace.records)
    assert trace.snapshot(trace.records[0].before)["type_definitions"] == {
        "Box": {"type_params": ["a"], "constructors": [{"name": "box", "inputs": [{"kind": "typevar", "name": "a"}]}]}}
    assert [b.lowered for b in split_builds(trace.records)] == [False]
    assert "relay.build" not in _show(tmp_path / "trace")


def test_tir_passes_on_their_own_lower_no_model(tmp_path: Path) -> None:
    a = tvm.te.placeholder((4, 4), name="a")
    b = tvm.te.compute((4, 4), lambda i, j: a[i, j] * 2.0 + 0.0, name="b")
    lowered = tvm.IRModule({"main": tvm.te.create_prim_func([a, b])})
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(tmp_path / "trace", tir=True)]):
        tvm.tir.transform.Simplify()(lowered)
    trace = load_trace(tmp_path / "trace")
    assert {r.ir for r in trace.records} == {"tir"} and trace.records[0].before
    assert [b.lowered for b in split_builds(trace.records)] == [False]
    assert "relay.build" not in _show(tmp_path / "trace")
