"""Provenance through AlterOpLayout on DenseNet-121: each of its 120 blocked convolutions stems
from exactly one convolution of the input, its own, although its dense blocks repeat alike
layers 6, 12, 24 and 16 times (read as one hunk, such a run once traced back to every
convolution of the run).

The model is traced without a name left in it and with its parameters unbound: the diff can
pair nodes by their structure only, and relay.optimize folds no weights (bound, FoldConstant
compiles every folded weight, and the compilation takes minutes instead of tens of seconds;
``test_provenance_layout.py`` follows ResNet-18 with its parameters bound, through relay.build).

The truth comes from the IR, as in ``test_provenance_layout.py``: AlterOpLayout rewrites each
``nn.conv2d`` into one ``nn.contrib_conv2d_NCHWc`` and no pass after it reorders them, so the
k-th blocked convolution of the last snapshot (in data-flow order) is the k-th convolution of the
input, and computes its output shape from its weight shape once both are unblocked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List, Tuple

import pytest

from relayviz_instrument.analysis.provenance import Provenance, provenance
from relayviz_instrument.cli import main
from relayviz_instrument.store import load_trace
from test_provenance_layout import calls, unblocked

AVX2 = "llvm -mtriple=x86_64-linux-gnu -mcpu=core-avx2"

#: DenseNet-121's convolutions: the stem's, two in each of the 6 + 12 + 24 + 16 layers of its
#: dense blocks, and one in each of the three transitions between them.
CONVOLUTIONS = 1 + 2 * (6 + 12 + 24 + 16) + 3


@pytest.fixture(scope="module")
def prov(tmp_path_factory: pytest.TempPathFactory) -> Provenance:
    """DenseNet-121 (224x224, the smallest input its last 7x7 pooling takes), every variable
    named ``""`` and no parameter bound, through relay.optimize at opt_level 3 for AVX2."""
    import tvm
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument import RelayVizTrace

    mod, _ = tvm.relay.testing.densenet.get_workload(densenet_size=121, batch_size=1)
    func = mod["main"]
    fresh = {v: relay.var("", type_annotation=v.type_annotation) for v in func.params}
    mod = tvm.IRModule.from_expr(relay.Function([fresh[v] for v in func.params], relay.bind(func.body, fresh)))
    path = tmp_path_factory.mktemp("densenet") / "trace"
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(path)]):
        relay.optimize(mod, target=AVX2)
    return provenance(load_trace(path))


def unblocked_kernel(shape: List[int]) -> Tuple[int, ...]:
    """An OIHW[x]i[y]o kernel shape as OIHW."""
    return (shape[0] * shape[5], shape[1] * shape[4], shape[2], shape[3])


def pairs(prov: Provenance) -> List[Tuple[int, int]]:
    """``(input convolution, blocked convolution)`` ids, the k-th of each, checked by shape."""
    convs = calls(prov, 0, "nn.conv2d")
    blocked = calls(prov, prov.last, "nn.contrib_conv2d_NCHWc")
    assert len(convs) == len(blocked) == CONVOLUTIONS
    first, last = prov.document(0)["nodes"], prov.document(prov.last)["nodes"]
    for conv, block in zip(convs, blocked):
        assert unblocked(last[block]["type"]["shape"]) == tuple(first[conv]["type"]["shape"])
        weight, blocked_weight = first[first[conv]["args"][1]], last[last[block]["args"][1]]
        assert unblocked_kernel(blocked_weight["shape"]) == tuple(weight["shape"])
    return list(zip(convs, blocked))


def test_each_blocked_convolution_stems_from_its_own_convolution_only(prov: Provenance) -> None:
    assert "AlterOpLayout" in [s.name for s in prov.steps]
    assert all(not n.get("name") for n in prov.document(0)["nodes"] if n["node_kind"] == "Var")
    for conv, block in pairs(prov):
        # Every root, of any kind: the layout transforms and the folded batch norms around the
        # convolution add no source to it.
        assert prov.roots((prov.last, block)) == {conv}


def test_each_convolution_becomes_its_blocked_convolution_only(prov: Provenance) -> None:
    last = prov.graph(prov.last)
    for conv, block in pairs(prov):
        ends = [i for i in prov.descendants((0, conv)) if last.kind[last.rank_of[i]] == "Call"
                and last.op_name(last.rank_of[i]) is not None]
        assert ends == [block]


def test_cli_history_of_every_nchwc_convolution(prov: Provenance, capsys: Any) -> None:
    assert main(["history", str(Path(prov.trace.path)), "--op", "nn.contrib_conv2d_NCHWc", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    truth = {block: conv for conv, block in pairs(prov)}
    assert sorted(h["node"][1] for h in out["histories"]) == sorted(truth)
    for h in out["histories"]:
        assert h["node"][0] == prov.last and h["roots"] == [truth[h["node"][1]]]
