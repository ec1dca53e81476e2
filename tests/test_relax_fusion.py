"""Relax's FuseOps read as fusion on real models: one ``wrapped`` hunk per primitive function it
creates, naming the PrimFuncs it took in, on the Llama-shaped decoder and the ResNet-18
exported from PyTorch.

The truth comes from the module after FuseOps: its functions marked ``Primitive`` and the
PrimFuncs their ``call_tir`` calls run.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest

relax = pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")

import tvm  # noqa: E402  # after the importorskip above

from relayviz_instrument.demo.relax_models import relax_host_target  # noqa: E402  # after the importorskip above
from relayviz_instrument.diff import GraphDiff, diff  # noqa: E402  # after the importorskip above
from relayviz_instrument.serialize import serializer_for  # noqa: E402  # after the importorskip above
from relayviz_instrument.serialize.reflection import dict_attrs_items  # noqa: E402  # after the importorskip above


def fuse(mod: Any) -> Tuple[Any, Any]:
    """The module FuseOps is given in the zero pipeline (legalized, patterns annotated), and
    what it returns."""
    T = relax.transform
    with tvm.target.Target(relax_host_target()):
        before = T.AnnotateTIROpPattern()(T.LegalizeOps()(mod))
    return before, T.FuseOps()(before)


def primitive_functions(mod: Any) -> Dict[str, List[str]]:
    """Each primitive function of ``mod`` and the PrimFuncs its call_tir calls run, in order."""
    out: Dict[str, List[str]] = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, relax.Function) or not dict(dict_attrs_items(func.attrs)).get("Primitive"):
            continue
        kernels: List[str] = []

        def visit(expr: Any, kernels: List[str] = kernels) -> None:
            if isinstance(expr, relax.Call) and getattr(expr.op, "name", "") == "relax.call_tir":
                kernels.append(expr.args[0].name_hint)

        relax.analysis.post_order_visit(func.body, visit)
        out[gv.name_hint] = kernels
    return out


def fusion_diff(mod: Any) -> Tuple[GraphDiff, Dict[str, Any], Dict[str, List[str]]]:
    before, after = fuse(mod)
    serializer = serializer_for("relax")
    b = serializer.module(after)
    return diff(serializer.module(before), b), b, primitive_functions(after)


@pytest.mark.parametrize("model", ["relax_llama", "torch_resnet18"])
def test_fuse_ops_gives_one_wrapped_hunk_per_primitive_function_naming_its_primfuncs(model: str, request: Any) -> None:
    result, doc, truth = fusion_diff(request.getfixturevalue(model))
    assert len(truth) >= 8
    by_id = {i: name for name, i in doc["functions"].items()}
    wrapped = [h for h in result.hunks if h.kind == "wrapped"]
    functions = [[by_id[i] for i in h.added if i in by_id] for h in wrapped]
    assert sorted(f for fs in functions for f in fs) == sorted(truth)  # one hunk each, no other
    for hunk, [name] in zip(wrapped, functions):
        kernels = truth[name]
        listed = hunk.label.split("(PrimFuncs ", 1)[1].split(")", 1)[0].split(", ")
        assert listed == list(dict.fromkeys(kernels)), hunk.label
        # A function several layers share is one hunk that says how many calls it stands for.
        sites = sites_of(doc, name)
        assert (f"called {sites} times" in hunk.label) == (sites > 1), hunk.label


def sites_of(doc: Dict[str, Any], name: str) -> int:
    """How many calls of the global function ``name`` the document holds."""
    nodes = doc["nodes"]
    return sum(1 for n in nodes if n["node_kind"] == "Call" and nodes[n["op"]]["node_kind"] == "GlobalVar"
               and nodes[n["op"]].get("name") == name)
