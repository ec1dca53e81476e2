"""Provenance through AlterOpLayout: each blocked convolution of a relay.build of ResNet-18
(parameters bound) stems from exactly one convolution of the input, its own, however many alike
blocks the model repeats. The trace is the session's (``resnet18_traced``: the generic CPU
target, like x86, has AlterOpLayout block every convolution); the blocked convolutions are those
of the snapshot lowering starts from, the last to call operators (DenseNet-121 through
relay.optimize for AVX2: ``test_provenance_densenet.py``).

The truth comes from the IR: AlterOpLayout rewrites each ``nn.conv2d`` into one
``nn.contrib_conv2d_NCHWc`` and no pass after it reorders them, so the k-th blocked
convolution of that snapshot (in data-flow order) is the k-th convolution of the input,
and computes its output shape once unblocked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Tuple

import pytest

from relayviz_instrument.analysis.provenance import Provenance
from test_provenance_lowering import lowering_start


@pytest.fixture(scope="module")
def prov(resnet18_provenance: Provenance) -> Provenance:
    return resnet18_provenance


def calls(prov: Provenance, position: int, op: str) -> List[int]:
    graph = prov.graph(position)
    return [graph.doc_id[r] for r in sorted(range(graph.size), key=graph.position.__getitem__)
            if graph.op_name(r) == op]


def unblocked(shape: List[int]) -> Tuple[int, ...]:
    return (shape[0], shape[1] * shape[4], shape[2], shape[3])


def test_each_blocked_convolution_stems_from_its_own_convolution(prov: Provenance) -> None:
    assert "AlterOpLayout" in [s.name for s in prov.steps]
    at = lowering_start(prov)
    convs = calls(prov, 0, "nn.conv2d")
    blocked = calls(prov, at, "nn.contrib_conv2d_NCHWc")
    assert len(convs) == len(blocked) == 21
    first, last = prov.document(0)["nodes"], prov.document(at)["nodes"]
    for conv, block in zip(convs, blocked):
        roots = [r for r in prov.roots((at, block)) if first[r].get("node_kind") == "Call"
                 and prov.graph(0).op_name(prov.graph(0).rank_of[r]) == "nn.conv2d"]
        assert roots == [conv]
        assert unblocked(last[block]["type"]["shape"]) == tuple(first[conv]["type"]["shape"])


def test_history_of_a_blocked_convolution_says_it_was_rewritten(prov: Provenance) -> None:
    [step] = [s for s in prov.steps if s.name == "AlterOpLayout"]
    at = lowering_start(prov)
    for block in calls(prov, at, "nn.contrib_conv2d_NCHWc"):
        history = prov.history((at, block))
        assert history.lineage[0][0] == 0  # the same node since the input module
        [event] = [e for e in history.events if e.step == step]
        assert event.kind == "changed" and event.fields[0].field == "op"
        assert (event.fields[0].before, event.fields[0].after) == ("nn.conv2d", "nn.contrib_conv2d_NCHWc")


def test_each_convolution_becomes_its_blocked_convolution_only(prov: Provenance) -> None:
    # Forward: of the optimized module's calls, only its own blocked convolution stems from an
    # input convolution; the layout transforms put around it compute no part of it.
    at = lowering_start(prov)
    graph = prov.graph(at)
    operators = [graph.doc_id[r] for r in range(graph.size) if graph.kind[r] == "Call" and graph.op_name(r) is not None]
    for conv, block in zip(calls(prov, 0, "nn.conv2d"), calls(prov, at, "nn.contrib_conv2d_NCHWc")):
        ends = [i for i in operators if conv in prov.roots((at, i))]
        assert ends == [block]


def test_cli_history_of_nchwc_convolutions(prov: Provenance, capsys: Any) -> None:
    import json

    from relayviz_instrument.cli import main

    path = Path(prov.trace.path)
    assert main(["history", str(path), "--op", "nn.contrib_conv2d_NCHWc", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["snapshot"]["position"] == lowering_start(prov)  # the last snapshot has only kernels
    first = prov.graph(0)
    roots = [[r for r in h["roots"] if first.op_name(first.rank_of[r]) == "nn.conv2d"] for h in out["histories"]]
    assert sorted(roots) == sorted([c] for c in calls(prov, 0, "nn.conv2d"))
