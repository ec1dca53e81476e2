"""Which events act on the pipeline, who did the work, and what changed outside any pass, on
real compilations: the table and the report credit each pass with what it did."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tvm
import tvm.relay.testing
from tvm import relay

from relayviz_instrument import OpDeltaTable, RelayVizTrace, load_trace, report_trace, show_trace
from relayviz_instrument.analysis.pass_diffs import PassDiffs
from relayviz_instrument.analysis.pipeline import FINISHING, PIPELINE, SCRATCH, credits, event_roles, pipeline_gaps

TARGET = "llvm -mtriple=x86_64-linux-gnu"


def _optimize(mod: Any, path: Path, params: Any = None) -> Path:
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(path)]):
        relay.optimize(mod, target=TARGET, params=params)
    return path


@pytest.fixture(scope="module")
def typed_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """relay.optimize of ResNet-18 (32x32) as tvm.relay.testing makes it: already type-checked."""
    mod, _ = tvm.relay.testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    return _optimize(mod, tmp_path_factory.mktemp("typed") / "trace")


@pytest.fixture(scope="module")
def untyped_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """relay.optimize of a model built with the Relay API, as frontends hand models over: no
    expression has been type-checked yet."""
    x, w = relay.var("x", shape=(1, 3, 16, 16)), relay.var("w", shape=(8, 3, 3, 3))
    g, b = relay.var("g", shape=(8,)), relay.var("b", shape=(8,))
    conv = relay.nn.conv2d(x, w, padding=(1, 1), channels=8, kernel_size=(3, 3))
    body = relay.nn.relu(relay.nn.batch_norm(conv, g, b, g, b)[0])
    mod = tvm.IRModule.from_expr(relay.Function([x, w, g, b], body))
    assert all(t is None for t in _checked_types(mod))  # nothing has a type yet
    return _optimize(mod, tmp_path_factory.mktemp("untyped") / "trace")


def _checked_types(mod: Any) -> list:
    found = []
    relay.analysis.post_order_visit(mod["main"].body, lambda e: found.append(getattr(e, "_checked_type_", None))
                                    if isinstance(e, relay.Call) else None)
    return found


def _show(path: Path, *args: str, columns: int = 80) -> str:
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", "show", str(path), *args],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": str(columns)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_live_trace_shows_the_snapshot_files_of_the_trace_read_back(tmp_path: Path) -> None:
    from rich.console import Console

    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    live = RelayVizTrace(tmp_path / "t")
    with tvm.transform.PassContext(opt_level=3, instruments=[live]):
        relay.optimize(mod, target=TARGET, params=params)

    def shown(trace: Any) -> str:
        console = Console(width=400, color_system=None, record=True)
        console.print(show_trace(trace, paths=True))
        return console.export_text()

    text = shown(live)
    assert text == shown(load_trace(tmp_path / "t"))
    files = [word for word in text.split() if word.endswith(".json.zst")]
    assert files and all(Path(f).is_file() for f in files)


def test_scratch_type_checks_are_folded_and_labelled(typed_trace: Path) -> None:
    trace = load_trace(typed_trace)
    roles = event_roles(trace.records)
    # SimplifyExpr type-checks a temporary module of its own: 133 -> 246 nodes, never the pipeline's
    scratch = [r for r in trace.records if roles.get(r.index) == SCRATCH]
    grown = [r for r in scratch if r.changed and r.nodes_after > r.nodes_before]
    assert grown and all(r.name == "InferType" and trace.records[r.parent].name in ("SimplifyExpr",
                                                                                   "SimplifyExprPostAlterOp")
                         for r in grown)
    rows = {row.record.index: row for s in show_trace(trace).sections for row in s.rows if row.record}
    assert not any(r.index in rows for r in scratch)  # folded by default...
    everything = {row.record.index: row for s in show_trace(trace, everything=True).sections
                  for row in s.rows if row.record}
    assert all(everything[r.index].note == "scratch" for r in scratch)  # ...labelled with --all
    shown = _show(typed_trace, "--all", columns=200)
    line = next(line for line in shown.splitlines() if line.lstrip().startswith(f"{grown[0].index} "))
    assert "InferType (scratch)" in line and f"{grown[0].nodes_before} -> {grown[0].nodes_after}" in line
    report = report_trace(trace)
    assert not any(change.record.index in {r.index for r in scratch} for change in report.passes)
    assert {c.record.index for c in report_trace(trace, everything=True).passes} >= {r.index for r in grown}


def test_operator_totals_count_nothing_twice(typed_trace: Path) -> None:
    trace = load_trace(typed_trace)
    report = report_trace(trace)
    (build,) = report.builds
    net = {op: plus - minus for op, (plus, minus, _) in OpDeltaTable(build.op_deltas).rows.items()}
    first = trace.snapshot(trace.records[0].before)
    last = trace.snapshot([r for r in trace.records if r.after][-1].after)

    def calls(doc: Any) -> dict:
        out: dict = {}
        for node in doc["nodes"]:
            if node["node_kind"] == "Call" and doc["nodes"][node["op"]]["node_kind"] == "Op":
                name = doc["nodes"][node["op"]]["name"]
                out[name] = out.get(name, 0) + 1
        return out

    before, after = calls(first), calls(last)
    expected = {op: after.get(op, 0) - before.get(op, 0) for op in set(before) | set(after)}
    assert {op: n for op, n in net.items() if n} == {op: n for op, n in expected.items() if n}


def test_a_function_pass_is_credited_with_its_rewrite_and_its_infertype_with_the_types(typed_trace: Path) -> None:
    trace = load_trace(typed_trace)
    roles = event_roles(trace.records)
    simplify = next(r for r in trace.records if r.name == "SimplifyInference")
    closing = next(r for r in trace.records if r.parent == simplify.index)
    assert roles[closing.index] == FINISHING and closing.after == simplify.after
    assert credits(trace.records)[simplify.index].parts == ((simplify.before, closing.before, True),)
    diffs = PassDiffs(trace)
    own = diffs.credited_diffs(credits(trace.records)[simplify.index])[0]
    # its own rewrite: every batch_norm replaced, and no type appears from nowhere
    assert {h.kind for h in own.hunks} == {"replaced"}
    assert not any(c.field == "type" for m in own.changed for c in m.fields)
    # the InferType nested in it filled in the types of what it created
    types = diffs.pair_diff(closing.before, closing.after)
    assert types.changed and all({c.field for c in m.fields} <= {"type", "ret_type"} for m in types.changed)
    assert all(c.before is None for m in types.changed for c in m.fields if c.field == "type")
    everything = {row.record.index: row for s in show_trace(trace, everything=True).sections
                  for row in s.rows if row.record}
    assert everything[closing.index].note == "types of SimplifyInference"


def test_type_inference_of_an_untyped_model_is_not_credited_to_qnn_legalize(untyped_trace: Path) -> None:
    trace = load_trace(untyped_trace)
    records = trace.records
    legalize = next(r for r in records if r.name == "qnn.Legalize")
    assert legalize.changed  # the module changed while it ran: its first nested InferType typed it
    infer = next(r for r in records if r.parent == legalize.index and r.name == "InferType")
    assert infer.changed and event_roles(records)[infer.index] == PIPELINE
    assert credits(records)[legalize.index].by_nested_passes
    rows = {row.record.index: row for s in show_trace(trace).sections for row in s.rows if row.record}
    assert rows[legalize.index].summary == {} and rows[legalize.index].note == "by nested passes"
    summary = rows[infer.index].summary
    assert summary["changed"] > 0 and summary["added"] == summary["removed"] == 0
    shown = _show(untyped_trace, columns=200)
    row = next(line for line in shown.splitlines() if " qnn.Legalize" in line)
    assert "qnn.Legalize (by nested passes)" in row
    after_changed = row.split(" yes ")[1].split()
    assert after_changed == [str(legalize.nodes_before)]  # node count, and no + - ~ of its own
    report = report_trace(trace)
    assert all(c.record.index != legalize.index for c in report.passes)
    typed = next(c for c in report.passes if c.record.index == infer.index)
    assert all(f.field == "type" or f.field == "ret_type" for m in typed.diff.changed for f in m.fields)


def test_a_change_outside_any_pass_is_a_row_and_relay_quantize_is_said_aloud(tmp_path: Path) -> None:
    """relay.quantize runs its annotate, calibrate and realize passes under a PassContext of its
    own: the trace cannot see them, and says so where the module changed without a pass."""
    data = relay.var("data", shape=(1, 3, 16, 16))
    w1, w2 = relay.var("conv1_weight", shape=(8, 3, 3, 3)), relay.var("conv2_weight", shape=(8, 8, 3, 3))
    body = relay.nn.relu(relay.nn.conv2d(data, w1, padding=(1, 1), channels=8, kernel_size=(3, 3)))
    body = relay.nn.conv2d(body, w2, padding=(1, 1), channels=8, kernel_size=(3, 3))
    mod, params = tvm.relay.testing.create_workload(relay.Function(relay.analysis.free_vars(body), body))
    path = tmp_path / "trace"
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(path)]):
        with relay.quantize.qconfig(calibrate_mode="global_scale", global_scale=8.0, skip_conv_layers=[]):
            quantized = relay.quantize.quantize(mod, params)
        relay.optimize(quantized, target=TARGET)
    trace = load_trace(path)
    (gap,) = pipeline_gaps(trace.records)
    old, new = trace.snapshot(gap.old), trace.snapshot(gap.new)
    ops = {n["name"] for n in new["nodes"] if n["node_kind"] == "Op"}
    assert "relay.op.annotation.simulated_quantize" in ops or "cast" in ops or "right_shift" in ops
    assert len(new["nodes"]) > len(old["nodes"])
    shown = _show(path, columns=300)
    assert "(outside any pass)" in shown and f"{len(old['nodes'])} -> {len(new['nodes'])}" in shown
    assert "relay.quantize" in shown and "PassContext of their own" in shown


def test_a_snapshot_is_read_as_a_graph_once_for_views_and_diffs(typed_trace: Path) -> None:
    trace = load_trace(typed_trace)
    simplify = next(r for r in trace.records if r.name == "SimplifyInference")
    diffs = PassDiffs(trace, keep_documents=None)
    graph = diffs.graph(simplify.after)
    assert graph.size == len(diffs.document(simplify.after)["nodes"])
    assert diffs.graph(simplify.after) is graph
    # the diff's index takes the graph made for the view, and views then come from the index
    assert diffs.indexed(simplify.after).graph is graph
    assert diffs.graph(simplify.after) is graph
    # a document read again (the cache keeps one) is indexed from itself, not from an old graph
    small = PassDiffs(trace, keep_documents=1)
    old = small.graph(simplify.after)
    small.document(simplify.before)  # evicts the document the graph was made from
    index = small.indexed(simplify.after)
    assert index.graph is not old and index.graph.nodes[0] is index.doc["nodes"][index.graph.doc_id[0]]
    assert diffs.pair_diff(simplify.before, simplify.after).summary == \
        small.pair_diff(simplify.before, simplify.after).summary


def _run_opt_pass(expr: Any, opt_pass: Any) -> Any:
    """TVM's own test helper (tests/python/relay/test_pass_*.py): a module made from an
    expression, type-checked, then the pass."""
    mod = tvm.IRModule.from_expr(expr)
    mod = relay.transform.InferType()(mod)
    return opt_pass(mod)["main"]


def _three_unrelated_expressions() -> list:
    x = relay.var("x", shape=(1, 16))
    add_zero = relay.Function([x], relay.add(relay.multiply(x, relay.const(1.0)), relay.const(0.0)))
    c = relay.add(relay.const(1.0), relay.const(2.0))
    y = relay.var("y", shape=(4, 4))
    folded = relay.Function([y], relay.add(y, relay.multiply(c, relay.const(3.0))))
    z = relay.var("z", shape=(2, 3, 8, 8))
    pooled = relay.Function([z], relay.nn.relu(relay.nn.max_pool2d(relay.nn.relu(z), pool_size=(2, 2))))
    return [add_zero, folded, pooled]


def test_passes_on_unrelated_modules_in_one_context_are_one_pipeline_each(tmp_path: Path) -> None:
    # The usual pattern of TVM's own tests: one module after another under one PassContext.
    # Before, each new module was read as a change of the last one made outside any pass.
    path = tmp_path / "trace"
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(path)]):
        for expr in _three_unrelated_expressions():
            _run_opt_pass(expr, tvm.transform.Sequential([relay.transform.SimplifyExpr(),
                                                          relay.transform.FoldConstant()]))
    trace = load_trace(path)
    tops = [r for r in trace.records if r.depth == 1]
    assert [r.name for r in tops] == ["InferType", "sequential"] * 3
    assert [r.new_module for r in tops] == [False, False, True, False, True, False]
    assert pipeline_gaps(trace.records) == []
    assert "outside any pass" not in _show(path, "--all", columns=300)
    assert not any("outside any recorded pass" in note for note in show_trace(trace).notes)


def test_a_pass_run_again_on_an_earlier_module_is_no_change_outside_the_passes(tmp_path: Path) -> None:
    x = relay.var("x", shape=(1, 16))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.add(relay.multiply(x, relay.const(1.0)), relay.const(0.0)))))
    path = tmp_path / "trace"
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(path)]):
        simplified = relay.transform.SimplifyExpr()(mod)
        relay.transform.FoldConstant()(mod)  # on the module SimplifyExpr received, not on its result
    trace = load_trace(path)
    assert not tvm.ir.structural_equal(simplified, mod) and not any(r.new_module for r in trace.records)
    assert pipeline_gaps(trace.records) == []
