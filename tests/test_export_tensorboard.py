"""``relayviz export --to tensorboard`` (export/tensorboard.py), read back with TensorBoard's own
event reader (``EventAccumulator``, what ``tensorboard --logdir`` uses to find runs and graphs)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

from export_cases import PASSES, pass_trace
from relayviz_instrument.cli import main


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp()


def runs(logdir: Path) -> EventMultiplexer:
    multiplexer = EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(logdir))
    multiplexer.Reload()
    return multiplexer


def test_a_trace_is_one_run_per_changed_pass_with_its_graph(base, tmp_path):
    trace = pass_trace(base, "resnet18")
    logdir = tmp_path / "tb"
    assert main(["export", str(trace.path), "--to", "tensorboard", "-o", str(logdir)]) == 0
    mux = runs(logdir)
    names = sorted(mux.Runs())
    # ConvertLayout runs CanonicalizeOps first (a required pass), which changed the module too.
    assert sorted(n.split("_", 1)[1] for n in names) == sorted(PASSES + ("CanonicalizeOps",))
    for name in names:
        graph = mux.Graph(name)
        pass_name = name.split("_", 1)[1]
        if pass_name not in trace.after:
            continue
        facts = trace.after[pass_name]
        assert len(graph.node) == facts.exprs
        assert Counter(n.op for n in graph.node if n.op in facts.ops) == facts.ops


def test_fused_functions_are_name_scopes_with_shapes_on_their_outputs(base, tmp_path):
    trace = pass_trace(base, "resnet18")
    logdir = tmp_path / "fuse"
    assert main(["export", str(trace.path), "--pass", "FuseOps", "--to", "tensorboard", "-o", str(logdir)]) == 0
    graph = runs(logdir).Graph(".")
    scopes = {n.name.split("/")[0] for n in graph.node if "/" in n.name}
    assert len(scopes) == trace.after["FuseOps"].primitive
    by_name = {n.name: n for n in graph.node}
    convs = [n for n in graph.node if n.op == "nn.conv2d"]
    assert convs and all(n.name.startswith("fused_nn_conv2d") for n in convs)
    for conv in convs:
        shape = [d.size for d in conv.attr["_output_shapes"].list.shape[0].dim]
        assert len(shape) == 4 and shape[3] == int(conv.attr["channels"].s)  # NHWC after ConvertLayout
        assert conv.attr["data_layout"].s == b"NHWC"
        assert all(i in by_name for i in conv.input)


def test_a_diff_colours_nodes_by_status_through_the_device_field(base, tmp_path):
    trace = pass_trace(base, "resnet18")
    logdir = tmp_path / "simplify"
    assert main(["export", str(trace.path), "--pass", "SimplifyInference", "--diff", "--to", "tensorboard",
                 "-o", str(logdir)]) == 0
    graph = runs(logdir).Graph(".")
    norms = [n for n in graph.node if n.op == "nn.batch_norm"]
    assert len(norms) == trace.before.ops["nn.batch_norm"]
    assert {n.device for n in norms} == {"/status:removed"}
    sqrts = [n for n in graph.node if n.op == "sqrt"]
    assert len(sqrts) == trace.after["SimplifyInference"].ops["sqrt"]
    assert {n.attr["relayviz.status"].s for n in sqrts} == {b"added"}


def test_event_files_are_byte_identical_across_exports(base, tmp_path):
    trace = pass_trace(base, "resnet18")
    for out in ("a", "b"):
        assert main(["export", str(trace.path), "--pass", "FuseOps", "--to", "tensorboard",
                     "-o", str(tmp_path / out)]) == 0
    files = [sorted((tmp_path / out).iterdir()) for out in ("a", "b")]
    assert [p.name for p in files[0]] == [p.name for p in files[1]]
    assert [p.read_bytes() for p in files[0]] == [p.read_bytes() for p in files[1]]
