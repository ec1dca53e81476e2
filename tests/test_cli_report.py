"""``relayviz report TRACE`` on a trace of real passes over ResNet-18."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict

import pytest

from relayviz_instrument.cli import main
from relayviz_instrument.store import load_trace


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SimplifyInference then FuseOps on ResNet-18 (32x32), traced by RelayVizTrace."""
    import tvm
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument.capture import RelayVizTrace

    mod, _ = tvm.relay.testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    path = tmp_path_factory.mktemp("report") / "trace"
    passes = tvm.transform.Sequential([relay.transform.SimplifyInference(), relay.transform.FuseOps(2)])
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(path)]):
        passes(mod)
    return path


def batch_norms(doc: Dict[str, Any]) -> int:
    nodes = doc["nodes"]
    return sum(1 for n in nodes if n["node_kind"] == "Call" and nodes[n["op"]].get("name") == "nn.batch_norm")


def sections(out: str) -> Dict[str, str]:
    """The report's text per pass, keyed by its header's first word (``name#index``)."""
    found: Dict[str, str] = {}
    key = None
    for line in out.splitlines():
        head = re.match(r"(\S+)  #(\d+)  depth", line)
        if head:
            key = f"{head.group(1)}#{head.group(2)}"
            found[key] = ""
        elif line.startswith("operator calls"):
            key = "table"
            found[key] = ""
        if key:
            found[key] += line + "\n"
    return found


def test_report_prints_each_changed_pass_and_the_operator_table(trace_dir: Path, capsys) -> None:
    trace = load_trace(trace_dir)
    changed = [r for r in trace.records if r.changed]
    simplify = next(r for r in changed if r.name == "SimplifyInference")
    norms = batch_norms(trace.snapshot(simplify.before))
    assert norms == 18 and batch_norms(trace.snapshot(simplify.after)) == 0

    # By default the passes that did the work; the InferType each function pass runs on its own
    # result is folded into that pass, and --all shows it too.
    nested = [r for r in changed if r.name == "InferType" and r.parent is not None
              and trace.records[r.parent].name in ("SimplifyInference", "FuseOps")]
    assert len(nested) == 2 and all(r.after == trace.records[r.parent].after for r in nested)
    assert main(["report", str(trace_dir), "--all"]) == 0
    assert list(sections(capsys.readouterr().out)) == [f"{r.name}#{r.index}" for r in changed] + ["table"]
    assert main(["report", str(trace_dir)]) == 0
    out = sections(capsys.readouterr().out)
    # ... and the Sequential around them did nothing of its own
    assert list(out) == [f"{r.name}#{r.index}" for r in changed if r not in nested and r.name != "sequential"] + [
        "table"]

    text = out[f"SimplifyInference#{simplify.index}"]
    counts = [int(m.group(1) or 1) for m in re.finditer(r"── replaced(?: ×(\d+))?  nn\.batch_norm", text)]
    assert sum(counts) == norms
    assert not re.search(r"^[├└]── (?!replaced)", text, re.M)

    fuse = next(r for r in changed if r.name == "FuseOps")
    tops = re.findall(r"^[├└]── (\w+)", out[f"FuseOps#{fuse.index}"], re.M)
    assert tops and set(tops) == {"wrapped"}

    row = next(line for line in out["table"].splitlines() if "nn.batch_norm" in line)
    assert [cell.strip() for cell in row.split("│")] == ["nn.batch_norm", "0", str(norms), f"−{norms}",
                                                          "SimplifyInference"]


def test_pass_option_selects_by_name(trace_dir: Path, capsys) -> None:
    assert main(["report", str(trace_dir), "--pass", "^Fuse"]) == 0
    out = sections(capsys.readouterr().out)
    # FuseOps only wraps calls: no operator is added or removed, and an empty table is not printed
    assert [key.split("#")[0] for key in out] == ["FuseOps"]


def test_json_is_each_pass_diff(trace_dir: Path, capsys) -> None:
    trace = load_trace(trace_dir)
    assert main(["show", str(trace_dir), "--json"]) == 0
    overview = json.loads(capsys.readouterr().out)
    shown, roles = overview["summaries"], overview["roles"]
    assert main(["report", str(trace_dir), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    records = {r.index: r for r in trace.records}
    # the pipeline passes that did something of their own (a Sequential's work is its passes')
    assert [p["index"] for p in out["passes"]] == [r.index for r in trace.records if r.changed
                                                   and roles[str(r.index)] == "pipeline" and shown[str(r.index)]]
    assert [b["operators"] for b in out["builds"]] and all(p["role"] == "pipeline" for p in out["passes"])
    for entry in out["passes"]:
        record = records[entry["index"]]
        assert {"added", "removed", "changed", "rewired", "hunks", "module", "summary"} <= set(entry)
        assert entry["name"] == record.name and entry["nodes_before"] == record.nodes_before
        # the summary `relayviz show` prints for the pass is this diff's (one derivation, cached)
        assert entry["summary"] == shown[str(record.index)]


def test_a_bad_regular_expression_is_a_usage_error(trace_dir: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["report", str(trace_dir), "--pass", "("])
    assert exc.value.code == 2


def test_operator_totals_of_a_build_are_the_change_from_the_input_to_the_built_graph(resnet18, resnet18_traced):
    """Passes that rewrite temporary modules (the InferType inside SimplifyExpr checks a ``_tmp``
    module) are left out of the totals: what is left sums to the built graph's kernels less
    the input's operator calls, counted without RelayViz."""
    import collections

    import tvm
    from tvm import relay

    from relayviz_instrument.diff import diff
    from relayviz_instrument.views.hunk_tree import OpDeltaTable
    from relayviz_instrument.analysis.pipeline import pipeline_events, pipeline_op_deltas

    mod, _ = resnet18
    calls: collections.Counter = collections.Counter()

    def visit(expr: Any) -> None:
        if isinstance(expr, relay.Call) and isinstance(expr.op, tvm.ir.Op):
            calls[expr.op.name] += 1

    relay.analysis.post_order_visit(mod["main"], visit)
    lib, trace = resnet18_traced
    kernels = collections.Counter(n["attrs"]["func_name"] for n in json.loads(lib.get_graph_json())["nodes"]
                                  if n["op"] == "tvm_op")
    expected = {op: kernels[op] - calls[op] for op in set(kernels) | set(calls) if kernels[op] != calls[op]}

    records = load_trace(trace.path).records
    changed = [r for r in records if r.changed and r.before and r.after]
    diffs = {r.index: diff(trace.snapshot(r.before), trace.snapshot(r.after)) for r in changed}
    table = OpDeltaTable(pipeline_op_deltas(records, diffs))
    net = {op: plus - minus for op, (plus, minus, _) in table.rows.items() if plus != minus}
    assert net == expected
    # The temporary modules are really there, and really left out.
    tmp = [r for r in changed if r.name == "InferType" and "_tmp" in trace.snapshot(r.after).get("functions", {})]
    assert tmp and not {r.index for r in tmp} & set(pipeline_events(records))
