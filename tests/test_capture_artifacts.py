"""What a compilation built, recorded as the trace's last event (capture/artifacts.py): the graph
``relay.build`` returns, after the module it was built from; recorded by the user, once, and
said to be missing when it was not."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import tvm
import tvm.relay.testing
from tvm import relay

from relayviz_instrument import RelayVizTrace, load_trace
from relayviz_instrument.capture.artifacts import artifact_document, artifact_kernels
from relayviz_instrument.errors import RelayVizFormatError


def test_a_build_and_its_graph_json_give_the_same_document(mlp_built):
    name, ir, doc = artifact_document(mlp_built)
    assert (name, ir) == ("GraphExecutorCodegen", "graph_executor")
    assert artifact_document(mlp_built.get_graph_json()) == (name, ir, doc)
    executor = json.loads(mlp_built.get_graph_json())
    assert artifact_kernels(doc) == {n["attrs"]["func_name"] for n in executor["nodes"] if n["op"] == "tvm_op"}


def test_a_graph_that_cannot_be_read_is_the_callers_error_and_records_nothing():
    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    trace = RelayVizTrace(False)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        relay.transform.InferType()(mod)
    events = len(trace.records)
    with pytest.raises(RelayVizFormatError):
        trace.record_graph("{not graph executor JSON")
    assert len(trace.records) == events and trace.complete and not trace.problems


# -- the built graph as the last snapshot ---------------------------------------------------

def test_the_built_graph_is_the_last_snapshot(resnet18_traced):
    lib, trace = resnet18_traced
    last = trace.records[-1]
    assert last.name == "GraphExecutorCodegen" and last.ir == "graph_executor" and last.depth == 1
    # Its input is the last Relay module (calls of the lowered kernels), never an empty module.
    assert last.nodes_before > 0 and trace.snapshot(last.before)["functions"]
    graph = trace.snapshot(last.after)
    assert graph["ir"] == "graph_executor"
    executor = json.loads(lib.get_graph_json())
    kernels = {n["attrs"]["func_name"] for n in executor["nodes"] if n["op"] == "tvm_op"}
    ops = {graph["nodes"][n["op"]]["name"] for n in graph["nodes"] if n["node_kind"] == "Call"}
    assert kernels == ops
    relay_afters = [r.after for r in trace.records[:-1] if r.after is not None and r.ir == "relay"]
    assert last.before == relay_afters[-1]
    reloaded = load_trace(trace.path)
    assert reloaded.complete and reloaded.records[-1].to_json() == last.to_json()


def test_record_graph_inside_the_context_and_in_memory():
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    trace = RelayVizTrace(False)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        lib = relay.build(mod, target="llvm", params=params)
        record = trace.record_graph(lib.get_graph_json())
    assert record is trace.records[-1] and trace.snapshot(record.after)["ir"] == "graph_executor"
    assert trace.complete


# -- the built graph is recorded explicitly, and its absence is said aloud -----------------------

def _show(path) -> str:
    """What `relayviz show` prints, run as a user runs it (lines unwrapped)."""
    console_out = subprocess.run([sys.executable, "-m", "relayviz_instrument", "show", str(path)],
                                 capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "400"})
    assert console_out.returncode == 0, console_out.stderr
    return console_out.stdout


def _built_by_return(mod, params, trace):
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        return relay.build(mod, target="llvm", params=params)


def _built_into_a_dict(mod, params, trace):
    out = {}
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        out["lib"] = relay.build(mod, target="llvm", params=params)
    return out["lib"]


def _built_in_a_nested_call(mod, params, trace):
    def build():
        return relay.build(mod, target="llvm", params=params)

    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        lib = build()
    return lib


@pytest.mark.parametrize("build", [_built_by_return, _built_into_a_dict, _built_in_a_nested_call])
def test_a_build_whose_graph_is_not_recorded_is_said_to_be_missing_with_the_fix(build, tmp_path):
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    trace = RelayVizTrace(tmp_path / "t")
    lib = build(mod, params, trace)
    assert all(r.ir != "graph_executor" for r in trace.records)  # nothing is guessed
    shown = _show(tmp_path / "t")
    assert "its built graph was not recorded" in shown and "trace.record_graph(lib)" in shown
    # The documented path: record it after the with block. It follows the close line.
    record = trace.record_graph(lib)
    assert record is trace.records[-1] and record.name == "GraphExecutorCodegen"
    assert trace.record_graph(lib) is record  # the same graph is recorded once
    lines = [json.loads(line) for line in (tmp_path / "t" / "manifest.jsonl").read_bytes().splitlines()]
    assert [line["type"] for line in lines][-3:] == ["close", "begin", "end"]
    assert sum(line["type"] == "close" for line in lines) == 1
    reloaded = load_trace(tmp_path / "t")
    assert reloaded.complete and [r.to_json() for r in reloaded.records] == [r.to_json() for r in trace.records]
    assert "not recorded" not in _show(tmp_path / "t")
    executor = json.loads(lib.get_graph_json())
    graph = trace.snapshot(record.after)
    assert [n["name"] for n in graph["nodes"] if n["node_kind"] == "Var"] == [
        n["name"] for n in executor["nodes"] if n["op"] == "null"]


def test_two_builds_in_one_context_each_recorded(tmp_path):
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    small, small_params = tvm.relay.testing.mlp.get_workload(batch_size=1, num_classes=4)
    trace = RelayVizTrace(tmp_path / "t")
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        first = relay.build(mod, target="llvm", params=params)
        second = relay.build(small, target="llvm", params=small_params)
    assert "its built graph was not recorded" in _show(tmp_path / "t")
    one, two = trace.record_graph(first), trace.record_graph(second)
    assert one is not two and one.after != two.after
    graphs = [r for r in load_trace(tmp_path / "t").records if r.ir == "graph_executor"]
    assert [g.after for g in graphs] == [one.after, two.after]
    assert "not recorded" not in _show(tmp_path / "t")


def test_no_graph_is_recorded_when_nothing_was_built_in_the_with_block(tmp_path):
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    lib = relay.build(mod, target="llvm", params=params)
    trace = RelayVizTrace(False)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        relay.optimize(mod, target="llvm", params=params)
    assert lib is not None and trace.records
    assert all(r.ir != "graph_executor" for r in trace.records)
    from relayviz_instrument.views.overview import trace_notes

    assert trace_notes(trace.records) == []  # relay.optimize lowers nothing: no graph is missing
