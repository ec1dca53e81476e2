"""Provenance on real passes: SimplifyInference, FoldConstant, FuseOps, and a whole relay.build."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Set

import pytest
from rich.console import Console

from relayviz_instrument.cli import main
from relayviz_instrument.errors import RelayVizError
from relayviz_instrument.views.history import HistoryTree
from relayviz_instrument.analysis.chain import pipeline_steps
from relayviz_instrument.analysis.provenance import Provenance, provenance
from relayviz_instrument.analysis.reading import TraceReading
from relayviz_instrument.store import PassRecord, load_trace

FOLDED_FROM = {"add", "multiply", "divide", "sqrt", "negative", "expand_dims"}


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ResNet-18 (32x32) with its parameters bound: SimplifyInference, FoldConstant, FuseOps."""
    import tvm
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument.capture import RelayVizTrace

    mod, params = tvm.relay.testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    mod["main"] = relay.build_module.bind_params_by_name(mod["main"], params)
    path = tmp_path_factory.mktemp("provenance") / "trace"
    passes = tvm.transform.Sequential([relay.transform.SimplifyInference(), relay.transform.FoldConstant(),
                                       relay.transform.FuseOps(2)])
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(path)]):
        passes(mod)
    return path


@pytest.fixture(scope="module")
def prov(trace_dir: Path) -> Provenance:
    return provenance(load_trace(trace_dir))


def position_after(prov: Provenance, name: str) -> int:
    [step] = [s for s in prov.steps if s.name == name]
    return step.position + 1


def calls_of(prov: Provenance, position: int, ops: Set[str]) -> List[int]:
    graph = prov.graph(position)
    return [graph.doc_id[r] for r in range(graph.size) if graph.op_name(r) in ops]


def op_of(prov: Provenance, position: int, node: int) -> Any:
    graph = prov.graph(position)
    return graph.op_name(graph.rank_of[node])


def test_steps_follow_the_pipeline(prov: Provenance) -> None:
    assert [s.name for s in prov.steps] == ["SimplifyInference", "FoldConstant", "FuseOps"]
    assert all(a.after == b.before for a, b in zip(prov.steps, prov.steps[1:]))
    assert [s.record.depth for s in prov.steps if s.record] == [2, 2, 2]
    # The Sequential around them spans the whole chain; the InferType inside FuseOps is no step.
    sequential = next(r for r in prov.trace.records if r.name == "sequential")
    assert prov.span(sequential.index) == (0, 3)
    fuse_infer = next(r for r in prov.trace.records
                      if r.name == "InferType" and r.parent == prov.steps[2].index and r.changed)
    assert prov.span(fuse_infer.index) is None


def test_simplify_inference_products_trace_back_to_their_batch_norm(prov: Provenance) -> None:
    at = position_after(prov, "SimplifyInference")
    norms = set(calls_of(prov, 0, {"nn.batch_norm"}))
    assert len(norms) == 18  # ResNet-18 for 32x32 images
    view0, graph = prov.graph(0), prov.graph(at)
    made = [n for n in calls_of(prov, at, {"multiply", "add"})
            if prov.history((at, n)).created is not None]
    assert made
    by_norm: Dict[int, List[int]] = {}
    outputs = 0
    for n in made:
        history = prov.history((at, n))
        assert history.created.step.name == "SimplifyInference"
        assert history.created.hunk.kind == "replaced"
        [norm] = norms & set(history.roots)
        by_norm.setdefault(norm, []).append(n)
        r = graph.rank_of[n]
        # The add that now produces the batch_norm's first output feeds what read that output.
        for user, _ in graph.users[r]:
            before = prov.previous((at, graph.doc_id[user]))
            if before is not None and op_of(prov, at, n) == "add":
                reads = view0.inputs[view0.rank_of[before[1]]]
                getters = [x for x in reads if view0.kind[x] == "TupleGetItem"]
                assert any(view0.inputs[g] == [view0.rank_of[norm]] for g in getters)
                outputs += 1
    assert set(by_norm) == norms
    assert outputs >= len(norms)


def test_fold_constant_consts_trace_back_to_what_they_replaced(prov: Provenance) -> None:
    at = position_after(prov, "FoldConstant")
    doc = prov.document(at)
    folded = [i for i, node in enumerate(doc["nodes"])
              if node["node_kind"] == "Const" and prov.history((at, i)).created is not None]
    assert folded
    norms = set(calls_of(prov, 0, {"nn.batch_norm"}))
    for i in folded:
        created = prov.history((at, i)).created
        assert created.step.name == "FoldConstant" and created.hunk.kind == "replaced"
        replaced_ops = {op_of(prov, at - 1, o[1]) for o in created.origins} - {None}
        assert replaced_ops and replaced_ops <= FOLDED_FROM
        for origin in created.origins:  # each of them is gone after FoldConstant
            removed = prov.history(origin).removed
            assert removed is not None and removed.step.name == "FoldConstant"
        # ... and they stem from one batch_norm and the constants it read.
        roots = set(prov.history((at, i)).roots)
        assert len(roots & norms) == 1
        assert any(prov.info((0, r)).kind == "Const" for r in roots)


def test_fuse_ops_kernel_calls_trace_back_to_the_input_calls(prov: Provenance) -> None:
    at = position_after(prov, "FuseOps")
    graph = prov.graph(at)
    kernels = [f for f in graph.inlined if (graph.nodes[f].get("attrs") or {}).get("Primitive")]
    assert len(kernels) > 10
    for f in kernels:
        function = prov.history((at, graph.doc_id[f]))
        assert function.created.step.name == "FuseOps" and function.created.hunk.kind == "wrapped"
        calls = [r for r in graph.scope(f) if graph.op_name(r) is not None]
        assert calls
        wrapped = {o for o in function.created.origins}
        for r in calls:
            history = prov.history((at, graph.doc_id[r]))
            assert history.created is None or history.created.step.name != "FuseOps"
            assert prov.previous((at, graph.doc_id[r])) in wrapped  # FuseOps moved it, did not make it
            assert history.roots and any(prov.info((0, x)).kind == "Call" for x in history.roots)
            start = history.lineage[0]
            if start[0] == 0:  # it was in the input module: the same operator there
                assert op_of(prov, 0, start[1]) == graph.op_name(r)
            else:  # SimplifyInference made it out of a batch_norm
                assert history.created.step.name == "SimplifyInference"
                assert {op_of(prov, 0, x) for x in history.roots} >= {"nn.batch_norm"}


def test_history_of_a_built_graph_node_reaches_the_input_module(resnet18_traced: Any) -> None:
    _, trace = resnet18_traced
    prov = provenance(load_trace(trace.path))
    assert prov.steps[-1].name == "GraphExecutorCodegen" and prov.steps[0].name == "SimplifyInference"
    assert all(a.after == b.before for a, b in zip(prov.steps, prov.steps[1:]))
    # Nested InferTypes on temporary modules are no steps, but a pass's own work after its
    # nested passes is (LowerTE adds the PrimFuncs after LowerTensorExpr).
    assert not any(s.name == "InferType" for s in prov.steps)
    assert [s.name for s in prov.steps if s.after_nested] == ["LowerTE"]
    last = prov.last
    kernels = prov.find(last, op="tvmgen_default_fused_nn_softmax")
    assert len(kernels) == 1
    history = prov.history((last, kernels[0]))
    assert history.created.step.name == "GraphExecutorCodegen"
    assert "nn.softmax" in {op_of(prov, 0, r) for r in history.roots}
    input_size = len(prov.document(0)["nodes"])
    doc = prov.document(last)
    for i, node in enumerate(doc["nodes"]):
        if node["node_kind"] == "Call":
            roots = prov.history((last, i)).roots
            assert roots and all(0 <= r < input_size for r in roots)
    [data] = prov.find(last, node="data")
    assert prov.history((last, data)).lineage[0] == (0, prov.find(0, node="data")[0])


class _Records:
    """Records as a trace without snapshots: what the reading of its structure needs."""

    def __init__(self, records: List[PassRecord]) -> None:
        self.records = records
        self.path = None
        self.complete = True
        self.problems: List[str] = []


def test_pipeline_steps_of_nested_temporary_and_untraced_events() -> None:
    def rec(index: int, name: str, depth: int, parent: Any, before: Any, after: Any) -> PassRecord:
        return PassRecord(index=index, name=name, depth=depth, parent=parent, before=before, after=after,
                          changed=before != after)

    records = [
        rec(0, "sequential", 1, None, "m0", "m3"),
        rec(1, "SimplifyInference", 2, 0, "m0", "m1"),
        rec(2, "InferType", 3, 1, "m0-rewritten", "m1"),
        rec(3, "SimplifyExpr", 2, 0, "m1", "m1"),
        rec(4, "InferType", 3, 3, "tmp", "tmp-typed"),
        rec(5, "LowerTE", 2, 0, "m1", "m3"),
        rec(6, "LowerTensorExpr", 3, 5, "m1", "m2"),
        rec(7, "tir.Simplify", 1, None, None, None),
        rec(8, "FuseOps", 1, None, "m5", "m6"),  # the module changed before, untraced
    ]
    steps, spans = pipeline_steps(records, TraceReading(_Records(records)).pipeline)
    assert [(s.name, s.before, s.after, s.after_nested) for s in steps] == [
        ("SimplifyInference", "m0", "m1", False),
        ("LowerTensorExpr", "m1", "m2", False),
        ("LowerTE", "m2", "m3", True),
        ("(passes left out of the trace)", "m3", "m5", False),
        ("FuseOps", "m5", "m6", False),
    ]
    assert spans == {0: (0, 3), 1: (0, 1), 3: (1, 1), 5: (1, 3), 6: (1, 2), 8: (4, 5)}


def render(renderable: Any) -> str:
    console = Console(width=80, color_system=None, record=True)
    console.print(renderable)
    return console.export_text()


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import tvm
    from tvm import relay

    from relayviz_instrument.capture import RelayVizTrace

    mod = tvm.relay.fromtext("""
        #[version = "0.0.5"]
        def @main(%x: Tensor[(1, 2, 4, 4), float32], %g: Tensor[(2), float32], %b: Tensor[(2), float32],
                  %m: Tensor[(2), float32], %v: Tensor[(2), float32]) {
          %0 = nn.batch_norm(%x, %g, %b, %m, %v);
          nn.relu(%0.0)
        }""")
    path = tmp_path_factory.mktemp("small") / "trace"
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(path)]):
        tvm.transform.Sequential([relay.transform.InferType(), relay.transform.SimplifyInference()])(mod)
    return path


def test_history_tree_of_a_batch_norm_expanded(small_trace: Path) -> None:
    prov = provenance(load_trace(small_trace))
    [add] = [i for i in prov.find(prov.last, op="add")
             if op_of(prov, prov.last, prov.graph(prov.last).doc_id[
                 prov.graph(prov.last).users[prov.graph(prov.last).rank_of[i]][0][0]]) == "nn.relu"]
    assert render(HistoryTree(prov, (prov.last, add))) == (
        f"add  float32[1, 2, 4, 4]  node {add}  after SimplifyInference (#3)\n"
        "├── stems from 2 nodes of the input module: TupleGetItem, nn.batch_norm\n"
        "└── created by SimplifyInference #3  replaced: nn.batch_norm+TupleGetItem → \n"
        "    add×3+sqrt+divide+multiply×3+expand_dims×2+negative+…  from 2 nodes:\n"
        "    ├── nn.batch_norm  (float32[1, 2, 4, 4], float32[2], float32[2])  node 6\n"
        "    │   └── in the input module as node 6\n"
        "    └── TupleGetItem .0  float32[1, 2, 4, 4]  node 7\n"
        "        └── in the input module as node 7\n")


def test_cli_history(small_trace: Path, trace_dir: Path, prov: Provenance, capsys: Any) -> None:
    import json

    assert main(["history", str(small_trace), "x"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Var %x  float32[1, 2, 4, 4]  node 0  after SimplifyInference (#3)\n")
    assert "stems from itself: it is in the input module" in out

    assert main(["history", str(trace_dir), "--op", "nn.conv2d", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["snapshot"]["where"].startswith("after FuseOps")
    assert len(data["histories"]) == len(calls_of(prov, 0, {"nn.conv2d"})) > 0
    for h in data["histories"]:
        assert h["name"] == "nn.conv2d" and h["lineage"][0][0] == 0 and len(h["roots"]) == 1

    for argv, message in [
        (["history", str(small_trace)], "give a NODE"),
        (["history", str(small_trace), "x", "--op", "add"], "give a NODE"),
        (["history", str(small_trace), "nope"], "no node named 'nope'"),
        (["history", str(small_trace), "999"], "has no node 999"),
        (["history", str(small_trace), "--op", "nn.conv2d"], "no call of operator 'nn.conv2d'"),
        (["history", str(small_trace.parent / "missing"), "x"], "not a trace directory"),
    ]:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err


def test_errors_name_the_node(prov: Provenance) -> None:
    with pytest.raises(RelayVizError, match=r"no snapshot at position 9"):
        prov.history((9, 0))
    with pytest.raises(RelayVizError, match=r"has no node -1"):
        prov.history((0, -1))
