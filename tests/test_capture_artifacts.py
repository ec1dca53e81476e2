"""What a compilation built, recorded as the trace's last event (capture/artifacts.py): the graph
``relay.build`` returns, after the module it was built from; recorded by the user, once, and
said to be missing when it was not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import tvm
import tvm.relay.testing
from tvm import relay

from relayviz_instrument import RelayVizTrace, TraceIncompleteWarning, load_trace
from relayviz_instrument.capture import trace_build
from relayviz_instrument.capture.artifacts import artifact_document, artifact_kernels
from relayviz_instrument.errors import RelayVizFormatError
from diskfull import DISK_FULL_ONCE_THE_CONTEXT_CLOSED

HOST = "llvm -mtriple=x86_64-linux-gnu"


def test_a_build_and_its_graph_json_give_the_same_document(mlp_built):
    name, ir, doc = artifact_document(mlp_built)
    assert (name, ir) == ("GraphExecutorCodegen", "graph_executor")
    assert artifact_document(mlp_built.get_graph_json()) == (name, ir, doc)
    executor = json.loads(mlp_built.get_graph_json())
    assert artifact_kernels(doc) == {n["attrs"]["func_name"] for n in executor["nodes"] if n["op"] == "tvm_op"}


def test_a_graph_that_cannot_be_read_is_one_warning_and_an_incomplete_trace(tmp_path):
    # record_graph raised into the user's code, which then lost what it had built.
    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    trace = RelayVizTrace(tmp_path / "t")
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        relay.transform.InferType()(mod)
    events = len(trace.records)
    with pytest.warns(TraceIncompleteWarning, match="recording the built graph.*GraphJSONError") as caught:
        assert trace.record_graph("{not graph executor JSON") is None
    assert len([w for w in caught if w.category is TraceIncompleteWarning]) == 1
    assert caught[0].filename == __file__  # the warning points at the call
    assert len(trace.records) == events and not trace.complete
    loaded = load_trace(tmp_path / "t")  # the close line was written already: a second one says it
    assert not loaded.complete and any("GraphJSONError" in p for p in loaded.problems)
    assert "incomplete: the instrument failed in pass (recording the built graph): GraphJSONError" in _show(
        tmp_path / "t")
    strict = RelayVizTrace(False, strict=True)
    with tvm.transform.PassContext(opt_level=3, instruments=[strict]):
        relay.transform.InferType()(mod)
    with pytest.raises(RelayVizFormatError):
        strict.record_graph("{not graph executor JSON")


def _control_character_model():
    """A dense layer whose input variable is named ``a\\x01b``: TVM writes the name raw into
    the graph JSON, which JSON readers refuse."""
    x = relay.var("a\x01b", shape=(1, 4), dtype="float32")
    w = relay.const(np.arange(12, dtype="float32").reshape(3, 4))
    return tvm.IRModule.from_expr(relay.nn.relu(relay.nn.dense(x, w)))


def _run(lib, name, data):
    from tvm.contrib import graph_executor

    module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    module.set_input(name, data)
    module.run()
    return module.get_output(0).numpy()


@pytest.mark.parametrize("entry", ["record_graph", "trace_build"])
def test_a_control_character_in_a_variable_name_returns_the_built_module_with_one_warning(entry, tmp_path):
    mod = _control_character_model()
    data = np.ones((1, 4), dtype="float32")
    with tvm.transform.PassContext(opt_level=3):
        expected = _run(relay.build(mod, target=HOST), "a\x01b", data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if entry == "trace_build":
            lib, trace = trace_build(mod, target=HOST, out_dir=tmp_path / "t")
        else:
            trace = RelayVizTrace(tmp_path / "t")
            with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
                lib = relay.build(mod, target=HOST)
            assert trace.record_graph(lib) is None
    ours = [w for w in caught if w.category is TraceIncompleteWarning]
    assert len(ours) == 1 and "GraphJSONError" in str(ours[0].message)
    np.testing.assert_array_equal(_run(lib, "a\x01b", data), expected)
    assert not trace.complete and not load_trace(tmp_path / "t").complete


_DISK_FULL_AFTER_THE_PASSES = """
import json, resource, signal, sys, warnings
import numpy as np
import tvm, tvm.relay.testing
from tvm import relay
from tvm.contrib import graph_executor
from relayviz_instrument import RelayVizTrace, TraceIncompleteWarning
from relayviz_instrument.capture import trace_build

HOST = "llvm -mtriple=x86_64-linux-gnu"
out_dir, entry = sys.argv[1], sys.argv[2]
mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
""" + DISK_FULL_ONCE_THE_CONTEXT_CLOSED + """with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    if entry == "trace_build":
        lib, trace = trace_build(mod, target=HOST, params=params, out_dir=out_dir)
    else:
        trace = RelayVizTrace(out_dir)
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            lib = relay.build(mod, target=HOST, params=params)
        trace.record_graph(lib)
module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
module.set_input("data", np.ones((1, 1, 28, 28), dtype="float32"))
module.run()
print(json.dumps({"warnings": [str(w.message) for w in caught if w.category is TraceIncompleteWarning],
                  "output": module.get_output(0).numpy().tolist(), "complete": trace.complete}))
"""


@pytest.mark.parametrize("entry", ["record_graph", "trace_build"])
def test_a_disk_full_after_the_last_pass_returns_the_built_module_with_one_warning(entry, mlp, tmp_path):
    # The disk filled once the pass context had closed: writing the built graph's snapshot
    # raised RelayVizIOError into the user's code, which lost the built module.
    from tvm.contrib import graph_executor

    script = tmp_path / "child.py"
    script.write_text(_DISK_FULL_AFTER_THE_PASSES)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "t"), entry], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert len(result["warnings"]) == 1 and "File too large" in result["warnings"][0], result["warnings"]
    assert "recording the built graph" in result["warnings"][0] and result["complete"] is False
    mod, params = mlp
    with tvm.transform.PassContext(opt_level=3):
        plain = relay.build(mod, target=HOST, params=params)
    module = graph_executor.GraphModule(plain["default"](tvm.cpu()))
    module.set_input("data", np.ones((1, 1, 28, 28), dtype="float32"))
    module.run()
    np.testing.assert_allclose(result["output"], module.get_output(0).numpy(), rtol=1e-6)
    # What was flushed before the disk filled reads back whole; the graph is said to be missing.
    assert "its built graph was not recorded" in _show(tmp_path / "t")


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
    from relayviz_instrument.analysis.reading import TraceReading
    from relayviz_instrument.views.show import trace_notes

    assert trace_notes(TraceReading(trace)) == []  # relay.optimize lowers nothing: no graph is missing
