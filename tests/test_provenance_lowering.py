"""Provenance through lowering: every kernel of a traced relay.build of ResNet-18 linked to the
primitive function it was lowered from, not to the whole module.

The truth is built from the IR, not from the diff: the graph executor's code generation emits
one kernel node per call of a primitive function, in the data-flow order of ``main`` before
LowerTensorExpr, and names it after the operators the function calls
(``tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu_1``). Each kernel's true source
there is that call and the calls its function holds, each of them once.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, FrozenSet, List, Set, Tuple

import pytest

from relayviz_instrument.analysis.provenance import Provenance
from relayviz_instrument.cli import main

PREFIX = "tvmgen_default_fused_"


@pytest.fixture(scope="module")
def prov(resnet18_provenance: Provenance) -> Provenance:
    return resnet18_provenance


def lowering_start(prov: Provenance) -> int:
    """The position of the snapshot LowerTensorExpr started from."""
    [record] = [r for r in prov.trace.records if r.name == "LowerTensorExpr"]
    span = prov.span(record.index)
    assert span is not None
    return span[0]


def fused_calls(prov: Provenance, position: int) -> List[Tuple[FrozenSet[int], FrozenSet[int], str]]:
    """``(the ids of the call and of the calls its function holds, the ids of the constants it
    is given, the kernel name the function's operators give)`` for every call of a primitive
    function, in data-flow order."""
    graph = prov.graph(position)
    out = []
    for r in sorted(range(graph.size), key=graph.position.__getitem__):
        if graph.kind[r] != "Call" or graph.kind[graph.refs[r][0]] != "Function":
            continue
        body = sorted((t for t in graph.scope(graph.refs[r][0]) if graph.kind[t] == "Call"),
                      key=graph.position.__getitem__)
        name = "_".join(str(graph.op_name(t)).replace(".", "_") for t in body)
        consts = frozenset(graph.doc_id[t] for t in graph.refs[r][1:] if graph.kind[t] == "Const")
        out.append((frozenset(graph.doc_id[t] for t in [r, *body]), consts, name))
    return out


def kernels(prov: Provenance) -> List[int]:
    """The ids of the last snapshot's kernel nodes, in the built graph's order."""
    graph = prov.graph(prov.last)
    found = [r for r in range(graph.size) if (graph.op_name(r) or "").startswith(PREFIX)]
    return [graph.doc_id[r] for r in sorted(found, key=graph.position.__getitem__)]


def truth(prov: Provenance) -> Dict[int, Tuple[FrozenSet[int], FrozenSet[int], str]]:
    """Each kernel's true sources before lowering (see the module), checked against its name."""
    start = lowering_start(prov)
    calls = fused_calls(prov, start)
    found = kernels(prov)
    assert len(found) == len(calls) == 31
    graph = prov.graph(prov.last)
    out = {}
    for k, (sources, consts, name) in zip(found, calls):
        kernel_name = str(graph.op_name(graph.rank_of[k]))
        assert re.sub(r"_\d+$", "", kernel_name[len(PREFIX):]) == name, "the truth's order is off"
        out[k] = (sources, consts, kernel_name)
    return out


def call_roots(prov: Provenance, key: Tuple[int, int], at: int) -> Set[int]:
    graph = prov.graph(at)
    return {r for r in prov.roots(key, at=at) if graph.kind[graph.rank_of[r]] == "Call"}


def test_every_kernel_stems_from_its_primitive_function_only(prov: Provenance) -> None:
    start = lowering_start(prov)
    for kernel, (sources, _, name) in truth(prov).items():
        assert call_roots(prov, (prov.last, kernel), start) == set(sources), name


def test_every_kernel_stems_from_the_input_calls_of_its_function(prov: Provenance) -> None:
    # Down to the input module: a kernel stems from what its function's calls and the
    # constants they are given (weights a batch norm's scale was folded into) stem from, no
    # more; together the kernels account for every call of the input module.
    start = lowering_start(prov)
    covered: Set[int] = set()
    for kernel, (sources, consts, name) in truth(prov).items():
        want: Set[int] = set()
        for s in sources | consts:
            want |= call_roots(prov, (start, s), 0)
        got = call_roots(prov, (prov.last, kernel), 0)
        assert got == want, name
        covered |= got
    graph = prov.graph(0)
    assert covered == {graph.doc_id[r] for r in range(graph.size) if graph.kind[r] == "Call"}


def test_lowering_steps_hold_one_kernel_per_hunk(prov: Provenance) -> None:
    start = lowering_start(prov)
    for step in prov.steps[start:]:
        diff = prov.diff(step.position)
        graph = prov.graph(step.position)
        for hunk in diff.hunks:
            functions = [x for x in hunk.removed if graph.kind[graph.rank_of[x]] == "Function"]
            assert len(functions) <= 1, (step.name, hunk.label)
        assert "replaced" not in {h.kind for h in diff.hunks}, step.name


def test_cli_history_of_each_kernel_names_its_operators(prov: Provenance, capsys: Any) -> None:
    # Every kernel name of the built graph through `relayviz history --op --json`: one history
    # per node that runs it, each naming the input calls its function's calls stem from.
    start = lowering_start(prov)
    expected: Dict[str, List[List[int]]] = {}
    for sources, consts, name in truth(prov).values():
        want: Set[int] = set()
        for s in sources | consts:
            want |= call_roots(prov, (start, s), 0)
        expected.setdefault(name, []).append(sorted(want))
    graph = prov.graph(0)
    for name, wanted in expected.items():
        assert main(["history", str(prov.trace.path), "--op", name, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        got = [sorted(r for r in h["roots"] if graph.kind[graph.rank_of[r]] == "Call") for h in out["histories"]]
        assert sorted(got) == sorted(wanted), name


def test_cli_history_of_an_input_operator_follows_each_call_to_its_kernel(prov: Provenance, capsys: Any) -> None:
    # The README's example on a full relay.build: the last snapshot calls no nn.conv2d, so the
    # input module's are followed forward, each to the one kernel that computes it.
    start = lowering_start(prov)
    computes: Dict[int, Set[int]] = {}
    for kernel, (sources, consts, _) in truth(prov).items():
        for s in sources | consts:
            for r in call_roots(prov, (start, s), 0):
                computes.setdefault(r, set()).add(kernel)
    assert main(["history", str(prov.trace.path), "--op", "nn.conv2d", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["snapshot"]["position"] == 0
    last = prov.graph(prov.last)
    histories = out["histories"]
    assert len(histories) == 21
    for h in histories:
        conv = h["node"][1]
        kernels = [i for i in h["descendants"] if (last.op_name(last.rank_of[i]) or "").startswith(PREFIX)]
        assert kernels == sorted(computes[conv]) and len(kernels) == 1, conv
    assert main(["history", str(prov.trace.path), "--op", "nn.conv2d"]) == 0
    text = capsys.readouterr().out
    assert text.count("becomes ") == 21 and "tvmgen_default_fused_nn_contrib_conv2d_NCHWc" in text


def test_cli_history_at_a_pass_or_an_event(prov: Provenance, capsys: Any) -> None:
    path = str(prov.trace.path)
    [record] = [r for r in prov.trace.records if r.name == "AlterOpLayout"]
    span = prov.span(record.index)
    assert span is not None
    for at in ("AlterOpLayout", str(record.index)):
        assert main(["history", path, "--op", "nn.contrib_conv2d_NCHWc", "--at", at, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["snapshot"]["position"] == span[1] and len(out["histories"]) == 21
        for h in out["histories"]:  # each the rewritten convolution of the input, one kernel on
            assert h["lineage"][0][0] == 0 and len([i for i in h["descendants"]
                                                    if str(prov.info((prov.last, i)).name).startswith(PREFIX)]) == 1
    assert main(["history", path, "--op", "nn.conv2d", "--at", "input", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["snapshot"]["position"] == 0
    assert main(["history", path, "--op", "nn.conv2d", "--at", "NoSuchPass"]) == 2
    err = capsys.readouterr().err
    assert "NoSuchPass" in err and "AlterOpLayout" in err and "Traceback" not in err
