"""Provenance through AlterOpLayout: each blocked convolution of relay.optimize for an x86
target stems from exactly one convolution of the input, its own, however many alike blocks
the model repeats.

The truth comes from the IR: AlterOpLayout rewrites each ``nn.conv2d`` into one
``nn.contrib_conv2d_NCHWc`` and no pass after it reorders them, so the k-th blocked
convolution of the last snapshot (in data-flow order) is the k-th convolution of the input,
and computes its output shape once unblocked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Tuple

import pytest

from relayviz_instrument.analysis.provenance import Provenance, provenance
from relayviz_instrument.store import load_trace

AVX2 = "llvm -mtriple=x86_64-linux-gnu -mcpu=core-avx2"


@pytest.fixture(scope="module")
def prov(tmp_path_factory: pytest.TempPathFactory) -> Provenance:
    """ResNet-18 (parameters bound) through relay.optimize at opt_level 3 for AVX2."""
    import tvm
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument import RelayVizTrace

    mod, params = tvm.relay.testing.resnet.get_workload(num_layers=18, batch_size=1)
    path = tmp_path_factory.mktemp("layout") / "trace"
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(path)]):
        relay.optimize(mod, target=AVX2, params=params)
    return provenance(load_trace(path))


def calls(prov: Provenance, position: int, op: str) -> List[int]:
    view = prov.view(position)
    return [view.doc_id[r] for r in sorted(range(view.size), key=view.position.__getitem__)
            if view.op_name(r) == op]


def unblocked(shape: List[int]) -> Tuple[int, ...]:
    return (shape[0], shape[1] * shape[4], shape[2], shape[3])


def test_each_blocked_convolution_stems_from_its_own_convolution(prov: Provenance) -> None:
    assert "AlterOpLayout" in [s.name for s in prov.steps]
    convs = calls(prov, 0, "nn.conv2d")
    blocked = calls(prov, prov.last, "nn.contrib_conv2d_NCHWc")
    assert len(convs) == len(blocked) == 21
    first, last = prov.document(0)["nodes"], prov.document(prov.last)["nodes"]
    for conv, block in zip(convs, blocked):
        roots = [r for r in prov.roots((prov.last, block)) if first[r].get("node_kind") == "Call"
                 and prov.view(0).op_name(prov.view(0).rank_of[r]) == "nn.conv2d"]
        assert roots == [conv]
        assert unblocked(last[block]["type"]["shape"]) == tuple(first[conv]["type"]["shape"])


def test_history_of_a_blocked_convolution_says_it_was_rewritten(prov: Provenance) -> None:
    [step] = [s for s in prov.steps if s.name == "AlterOpLayout"]
    for block in calls(prov, prov.last, "nn.contrib_conv2d_NCHWc"):
        history = prov.history((prov.last, block))
        assert history.lineage[0][0] == 0  # the same node since the input module
        [event] = [e for e in history.events if e.step == step]
        assert event.kind == "changed" and event.fields[0].field == "op"
        assert (event.fields[0].before, event.fields[0].after) == ("nn.conv2d", "nn.contrib_conv2d_NCHWc")


def test_each_convolution_becomes_its_blocked_convolution_only(prov: Provenance) -> None:
    # Forward: of the last snapshot's calls, only its own blocked convolution stems from an
    # input convolution; the layout transforms put around it compute no part of it.
    last = prov.view(prov.last)
    for conv, block in zip(calls(prov, 0, "nn.conv2d"), calls(prov, prov.last, "nn.contrib_conv2d_NCHWc")):
        ends = [i for i in prov.descendants((0, conv)) if last.kind[last.rank_of[i]] == "Call"
                and last.op_name(last.rank_of[i]) is not None]
        assert ends == [block]


def test_cli_history_of_nchwc_convolutions(prov: Provenance, capsys: Any) -> None:
    import json

    from relayviz_instrument.cli import main

    path = Path(prov.trace.path)
    assert main(["history", str(path), "--op", "nn.contrib_conv2d_NCHWc", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    first = prov.view(0)
    roots = [[r for r in h["roots"] if first.op_name(first.rank_of[r]) == "nn.conv2d"] for h in out["histories"]]
    assert sorted(roots) == sorted([c] for c in calls(prov, 0, "nn.conv2d"))
