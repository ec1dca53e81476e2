"""Provenance through Relax's LegalizeOps, FuseOps and FuseTIR: every fused PrimFunc of a traced
``tvm.compile`` of the Llama-shaped decoder and of the ResNet-18 exported from PyTorch stems from
the high-level operators FuseOps took into it, each once per call site.

The truth is built from the IR, not from the diff (``fusiontruth.py``: the passes up to FuseOps
run again on a copy of the input module): a fused PrimFunc's true sources are, for each call
site of its function, one input call of the operator of each ``call_tir`` the function holds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Tuple

import pytest

pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")

from fusiontruth import fused_functions, fused_truth
from relayviz_instrument.analysis.provenance import Provenance, provenance
from relayviz_instrument.capture import trace_compile
from relayviz_instrument.cli import main
from relayviz_instrument.demo.relax_models import relax_host_target
from relayviz_instrument.store import load_trace

MODELS = ["relax_llama", "torch_resnet18"]


@pytest.fixture(scope="module", params=MODELS)
def traced(request: Any, tmp_path_factory: pytest.TempPathFactory) -> Tuple[Any, Provenance]:
    """``(input module, provenance of its traced tvm.compile)`` for each model of the session."""
    mod = request.getfixturevalue(request.param)
    _, trace = trace_compile(mod, target=relax_host_target(), out_dir=tmp_path_factory.mktemp(request.param) / "t")
    return mod, provenance(load_trace(trace.path))


def last_module(prov: Provenance) -> int:
    """The position of the compilation's last Relax module: the snapshot before the executable
    ``tvm.compile`` built (the trace's last, a ``VMCodeGen`` event)."""
    built = [s.position for s in prov.steps if s.record is not None and s.record.name == "VMCodeGen"]
    return built[0] if built else prov.last


def call_roots(prov: Provenance, node: int) -> List[int]:
    """The input module's calls of operators that node ``node`` of the last module stems from."""
    graph = prov.graph(0)
    return sorted(r for r in prov.roots((last_module(prov), node)) if graph.op_name(graph.rank_of[r]) is not None
                  and graph.kind[graph.rank_of[r]] == "Call")


def test_every_fused_primfunc_stems_from_the_operators_fuse_ops_took_in_once_each(traced: Any) -> None:
    mod, prov = traced
    truth = fused_truth(mod)
    last = prov.document(last_module(prov))
    fused = {name: i for name, i in last["functions"].items()
             if name in truth and last["nodes"][i]["node_kind"] == "PrimFunc"}
    assert len(truth) >= 8 and sorted(fused) == sorted(truth)  # FuseTIR made one PrimFunc of each
    graph = prov.graph(0)
    owner: Dict[int, str] = {}
    for name, i in sorted(fused.items()):
        roots = call_roots(prov, i)
        found = Counter(graph.op_name(graph.rank_of[r]) for r in roots)
        assert found == truth[name], f"{name}: stems from {dict(found)}, took in {dict(truth[name])}"
        for r in roots:  # FuseOps puts each call into one primitive function only
            assert owner.setdefault(r, name) == name, f"input call {r} stems into {owner[r]} and {name}"


def test_fuse_ops_reads_each_call_of_a_fused_function_as_part_of_its_wrapped_hunk(traced: Any) -> None:
    mod, prov = traced
    primitive, calls, _ = fused_functions(mod)
    [step] = [s.position for s in prov.steps if s.name == "FuseOps"]
    result, graph = prov.diff(step), prov.graph(step + 1)

    def called(b: int) -> Any:  # the global function a call of the after module calls
        r = graph.rank_of[b]
        callee = graph.refs[r][0] if graph.kind[r] == "Call" and graph.refs[r] else None
        return graph.nodes[callee].get("name") if callee is not None and graph.kind[callee] == "GlobalVar" else None

    by_id = {i: name for name, i in prov.document(step + 1)["functions"].items()}
    for hunk in result.hunks:
        fused = Counter(called(b) for b in hunk.added if called(b) in primitive)
        if hunk.kind == "wrapped":  # the calls of the function it wraps, no other
            assert set(fused) <= {by_id[b] for b in hunk.added if b in by_id}, hunk.label
        else:  # a call of a fused function read as replacing kernel calls, not as fusion
            assert not fused, f"{hunk.kind}: {hunk.label}"
    wrapped = Counter(called(b) for h in result.hunks if h.kind == "wrapped" for b in h.added)
    assert {name: wrapped[name] for name in primitive} == {name: calls[name] for name in primitive}


def test_history_of_a_fused_primfunc_by_name_shows_each_node_once(traced: Any, capsys: Any) -> None:
    mod, prov = traced
    name = sorted(fused_truth(mod))[0]
    position = last_module(prov)
    last = prov.document(position)
    found = prov.find(position, node=name)
    assert found == sorted(set(found)) and last["functions"][name] in found
    step = prov.steps[position - 1]
    assert step.record is not None
    assert main(["history", str(prov.trace.path), name, "--at", str(step.record.index)]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("PrimFunc @", "GlobalVar @"))]
    assert len(heads) == len(found) and sum(line.startswith(f"PrimFunc @{name} ") for line in heads) == 1
