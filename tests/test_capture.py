"""RelayVizTrace on real compilations: what it records, and that it never changes the build."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tvm
import tvm.relay.testing
from tvm import relay

from relayviz_instrument import RelayVizTrace, TraceIncompleteWarning, load_trace, to_relayviz
from relayviz_instrument.analysis.pass_diffs import PassDiffs
from passevents import EventCounter


def _same_params(a, b) -> bool:
    pa, pb = a.get_params(), b.get_params()
    return sorted(pa) == sorted(pb) and all(
        pa[k].dtype == pb[k].dtype and np.array_equal(pa[k].numpy(), pb[k].numpy()) for k in pa)


def _build(mod, params, instruments=()):
    with tvm.transform.PassContext(opt_level=3, instruments=list(instruments)):
        return relay.build(mod, target="llvm", params=params)


# -- relay.build ----------------------------------------------------------------------------

def test_resnet18_build_is_identical_with_and_without_the_trace(resnet18_built, resnet18_traced):
    lib, trace = resnet18_traced
    assert trace.complete, trace.problems
    assert lib.get_graph_json() == resnet18_built.get_graph_json()
    assert _same_params(lib, resnet18_built)


def test_resnet18_build_records_every_event(resnet18_build_events, resnet18_traced):
    _, trace = resnet18_traced
    counter = resnet18_build_events
    *passes, graph = trace.records  # trace_build adds the built graph as a last event
    assert graph.name == "GraphExecutorCodegen"
    assert len(passes) == sum(counter.names.values())
    assert Counter(r.name for r in passes) == counter.names
    assert max(r.depth for r in passes) == counter.max_depth
    # Lowering passes see TIR only: counted and timed, not serialized.
    tir = [r for r in trace.records if r.ir == "tir"]
    assert len(tir) > 1000
    assert all(r.before is None and r.changed is None for r in tir)


@pytest.mark.parametrize("model", ["mlp", "dqn"])
def test_small_models_build_identically_and_are_counted_by_an_independent_instrument(model, tmp_path):
    mod, params = getattr(tvm.relay.testing, model).get_workload(batch_size=1)
    plain = _build(mod, params)
    counter, trace = EventCounter(), RelayVizTrace(tmp_path / "trace")
    traced = _build(mod, params, [counter, trace])
    assert traced.get_graph_json() == plain.get_graph_json()
    assert _same_params(traced, plain)
    assert len(trace.records) == sum(counter.names.values())
    assert trace.complete and not trace.problems


def test_trace_reads_back_into_the_same_records(resnet18_traced):
    _, trace = resnet18_traced
    loaded = load_trace(trace.path)
    assert loaded.complete
    assert [r.to_json() for r in loaded.records] == [r.to_json() for r in trace.records]


def test_nesting_parents_and_snapshot_chain(resnet18_traced):
    _, trace = resnet18_traced
    records = trace.records
    for r in records:
        if r.depth == 1:
            assert r.parent is None
        else:
            parent = records[r.parent]
            assert parent.depth == r.depth - 1 and parent.index < r.index
    relay_records = [r for r in records if r.before is not None and r.ir == "relay"]
    diffs = PassDiffs(trace)
    for r in relay_records:
        if r.changed is False:
            assert r.after == r.before and r.nodes_after == r.nodes_before
        if r.changed:
            assert r.after != r.before or diffs.summary(r) is not None
    # Every snapshot a record names is stored and valid.
    refs = {ref for r in relay_records for ref in (r.before, r.after)}
    loaded = load_trace(trace.path)
    for ref in refs:
        doc = loaded.snapshot(ref)
        assert doc["ir"] == "relay"


def test_most_relay_events_change_nothing_and_store_no_snapshot(resnet18_traced):
    _, trace = resnet18_traced
    compared = [r for r in trace.records if r.changed is not None]
    changed = [r for r in compared if r.changed]
    assert len(changed) < len(compared) / 3
    snapshots = list((Path(trace.path) / "snapshots").glob("*.json"))
    assert len(snapshots) <= len(changed) + 1
    names = {r.name for r in changed}
    assert {"SimplifyInference", "FoldConstant", "FuseOps"} <= names
    assert "InferType" in {r.name for r in compared if not r.changed}


# -- relay.optimize and user Sequentials ----------------------------------------------------

def test_relay_optimize_first_snapshot_is_the_input_module(tmp_path):
    mod, params = tvm.relay.testing.dqn.get_workload(batch_size=1)
    counter, trace = EventCounter(), RelayVizTrace(tmp_path / "t")
    with tvm.transform.PassContext(opt_level=3, instruments=[counter, trace]):
        optimized, _ = relay.optimize(mod, target="llvm", params=params)
    assert len(trace.records) == sum(counter.names.values())
    first = trace.records[0]
    assert trace.snapshot(first.before) == to_relayviz(mod)
    last_after = [r for r in trace.records if r.depth == 1][-1].after
    assert trace.snapshot(last_after) == to_relayviz(optimized)


def test_user_sequential(resnet18, tmp_path):
    mod, _ = resnet18
    seq = tvm.transform.Sequential([
        relay.transform.InferType(),
        relay.transform.SimplifyInference(),
        relay.transform.FoldConstant(),
        relay.transform.FuseOps(fuse_opt_level=2),
    ], name="my_pipeline")
    counter, trace = EventCounter(), RelayVizTrace(tmp_path / "t")
    with tvm.transform.PassContext(opt_level=3, instruments=[counter, trace]):
        out = seq(mod)
    assert len(trace.records) == sum(counter.names.values())
    top = trace.records[0]
    assert top.name == "my_pipeline" and top.depth == 1 and top.changed
    # Sequential runs InferType between the passes it holds: those are events too.
    assert [r.name for r in trace.records if r.depth == 2 and r.name != "InferType"] == [
        "SimplifyInference", "FoldConstant", "FuseOps"]
    fuse = next(r for r in trace.records if r.name == "FuseOps")
    assert fuse.changed and fuse.nodes_after > fuse.nodes_before
    assert trace.snapshot(top.after) == to_relayviz(out)


def test_pass_filters_count_everything_but_snapshot_only_selected(resnet18, tmp_path):
    mod, _ = resnet18
    seq = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.SimplifyInference(),
                                    relay.transform.FuseOps(fuse_opt_level=2)])
    trace = RelayVizTrace(False, passes=["Simplify", "Fuse"], exclude="FuseOps")
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        seq(mod)
    by_name = {r.name: r for r in trace.records}
    assert by_name["SimplifyInference"].changed is True
    assert by_name["FuseOps"].changed is None and by_name["FuseOps"].before is None
    assert by_name["sequential"].changed is None
    assert trace.path is None  # a memory trace writes nothing


def test_tir_option_snapshots_primfunc_modules(tmp_path):
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    trace = RelayVizTrace(tmp_path / "t", tir=True)
    _build(mod, params, [trace])
    tir = [r for r in trace.records if r.ir == "tir"]
    assert tir and all(r.before is not None for r in tir)
    doc = trace.snapshot(tir[0].before)
    kinds = {n["node_kind"] for n in doc["nodes"]}
    prims = [n for n in doc["nodes"] if n["node_kind"] == "PrimFunc"]
    assert prims and all(n["signature"] and "body" in n for n in prims)
    assert {"For", "BufferStore", "BufferLoad"} <= kinds and "Opaque" not in kinds  # statements (format 1.2)


# -- failures: the compilation always goes on ------------------------------------------------

@tvm.transform.module_pass(opt_level=0, name="ExplodingPass")
def _exploding_pass(mod, ctx):
    raise ValueError("ExplodingPass refuses this module")


def test_failing_pass_reaches_the_caller_and_the_trace_holds_its_input(resnet18, tmp_path):
    mod, _ = resnet18
    prefix = [relay.transform.InferType(), relay.transform.SimplifyInference()]
    seq = tvm.transform.Sequential(prefix + [_exploding_pass, relay.transform.FoldConstant()])
    trace = RelayVizTrace(tmp_path / "t")
    with pytest.raises(ValueError) as caught:
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            seq(mod)
    assert type(caught.value) is ValueError
    assert str(caught.value) == "ExplodingPass refuses this module"
    loaded = load_trace(tmp_path / "t")
    failed = loaded.failed
    assert failed is not None and failed.name == "ExplodingPass"
    assert "ExplodingPass refuses this module" in failed.error
    with tvm.transform.PassContext(opt_level=3):
        expected_input = tvm.transform.Sequential(prefix)(mod)
    assert loaded.snapshot(failed.before) == to_relayviz(expected_input)
    assert "FoldConstant" not in {r.name for r in loaded.records}


def test_a_trace_survives_the_process_dying_inside_a_pass(tmp_path):
    script = textwrap.dedent(f"""
        import os, tvm
        from tvm import relay
        import tvm.relay.testing
        from relayviz_instrument import RelayVizTrace

        @tvm.transform.module_pass(opt_level=0, name="SegfaultingPass")
        def die(mod, ctx):
            os._exit(3)  # no exception, no cleanup: as a crash in C++ would end the process

        mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
        seq = tvm.transform.Sequential([relay.transform.InferType(), die])
        with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace({str(tmp_path / 't')!r})]):
            seq(mod)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr
    loaded = load_trace(tmp_path / "t")
    assert not loaded.complete
    assert loaded.failed is not None and loaded.failed.name == "SegfaultingPass"
    assert "process stopped" in loaded.failed.error
    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    with tvm.transform.PassContext(opt_level=3):
        typed = relay.transform.InferType()(mod)
    assert loaded.snapshot(loaded.failed.before) == to_relayviz(typed)


def test_default_directory_is_a_new_timestamped_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    traces = []
    for _ in range(2):
        trace = RelayVizTrace()
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            relay.transform.InferType()(mod)
        traces.append(trace.path)
    assert traces[0] != traces[1]
    assert all(p.parent == Path("relayviz-trace") and (tmp_path / p / "manifest.jsonl").is_file() for p in traces)


def test_an_instrument_records_one_context(tmp_path):
    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    trace = RelayVizTrace(tmp_path / "t")
    for _ in range(2):
        with pytest.warns(TraceIncompleteWarning) if _ else warnings.catch_warnings():
            with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
                relay.transform.InferType()(mod)
    assert len(trace.records) == 1 and not trace.complete


def test_a_trace_lets_the_other_side_of_equality_answer():
    """``assert trace == relayviz_snapshot`` reaches the snapshot (TVM objects would answer False)."""
    asked = []

    class Snapshot:
        def __eq__(self, other):
            asked.append(other)
            return True

    trace = RelayVizTrace(False)
    assert trace == Snapshot() and asked == [trace]
    assert trace == trace and trace != RelayVizTrace(False)
    assert len({trace, trace}) == 1
