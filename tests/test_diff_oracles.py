"""What the diff must say about real Relay passes on tvm.relay.testing models.

Each pass is applied to a module directly and both modules serialized with ``to_relayviz``;
what the pass does is known, so the diff's account of it can be checked.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, Tuple

import pytest
import tvm
import tvm.relay.testing
from tvm import relay

from relayviz_instrument import to_relayviz
from relayviz_instrument.diff import GraphDiff, diff

Pair = Tuple[Dict[str, Any], Dict[str, Any], GraphDiff]


def run_pass(mod: Any, transform: Any) -> Pair:
    before = to_relayviz(mod)
    after = to_relayviz(transform(mod))
    return before, after, diff(before, after)


def calls_of(doc: Dict[str, Any], op: str) -> list:
    nodes = doc["nodes"]
    return [i for i, n in enumerate(nodes)
            if n["node_kind"] == "Call" and nodes[n["op"]]["node_kind"] == "Op" and nodes[n["op"]]["name"] == op]


@pytest.fixture(scope="module")
def resnet() -> Any:
    """ResNet-18 on 32x32 images, type-inferred, parameters unbound."""
    mod, _ = tvm.relay.testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    return relay.transform.InferType()(mod)


@pytest.fixture(scope="module")
def simplified(resnet: Any) -> Any:
    return relay.transform.InferType()(relay.transform.SimplifyInference()(resnet))


@pytest.mark.parametrize("model", ["mlp", "resnet"])
def test_infer_type_adds_and_removes_nothing(model: str) -> None:
    net = (tvm.relay.testing.mlp.get_net(batch_size=1) if model == "mlp"
           else tvm.relay.testing.resnet.get_net(batch_size=1, num_classes=10, num_layers=18,
                                                 image_shape=(3, 32, 32)))
    before, after, result = run_pass(tvm.IRModule.from_expr(net), relay.transform.InferType())
    assert result.added == () and result.removed == ()
    assert len(result.mapping) == len(before["nodes"]) == len(after["nodes"])
    assert result.changed, "InferType writes the types the untyped module lacked"
    for match in result.changed:
        assert {c.field for c in match.fields} <= {"type", "ret_type", "dtype", "shape"}
        assert all(c.before is None for c in match.fields)  # types are added, none replaced
    assert {h.kind for h in result.hunks} == {"changed"}


def test_simplify_inference_replaces_each_batch_norm(resnet: Any) -> None:
    before, _, result = run_pass(resnet, relay.transform.SimplifyInference())
    norms = set(calls_of(before, "nn.batch_norm"))
    assert len(norms) == 18
    assert [h.kind for h in result.hunks] == ["replaced"] * len(norms)
    for hunk in result.hunks:
        assert len(norms & set(hunk.removed)) == 1
        assert {result.info_before[a].name for a in hunk.removed} == {"nn.batch_norm", "TupleGetItem"}
        assert {"sqrt", "multiply", "add"} <= {result.info_after[b].name for b in hunk.added}
    assert result.op_delta["nn.batch_norm"] == -18
    assert not result.changed  # the rest of the network is untouched


def test_fuse_ops_only_wraps(simplified: Any) -> None:
    before, after, result = run_pass(simplified, relay.transform.FuseOps(fuse_opt_level=2))
    assert result.removed == () and not result.changed and not result.rewired
    assert result.hunks and {h.kind for h in result.hunks} == {"wrapped"}
    nodes = after["nodes"]
    functions = {b for b in result.added if nodes[b]["node_kind"] == "Function"}
    assert {nodes[b]["node_kind"] for b in result.added} == {"Function", "Call", "Var"}
    assert all(nodes[nodes[b]["op"]]["node_kind"] == "Function"
               for b in result.added if nodes[b]["node_kind"] == "Call")
    assert all(nodes[f]["attrs"]["Primitive"] == 1 for f in functions)
    per_hunk = Counter(f for h in result.hunks for f in h.added if f in functions)
    assert set(per_hunk) == functions and set(per_hunk.values()) == {1}
    moved = {a for h in result.hunks for a, _ in h.matched}
    calls = {i for i, n in enumerate(before["nodes"]) if n["node_kind"] == "Call"}
    assert calls <= moved  # every call of the network was moved into some function
    assert all(h.label.endswith("wrapped into a primitive Function") for h in result.hunks)


def test_fold_constant_hunks_end_in_constants() -> None:
    from tvm.relay.build_module import bind_params_by_name

    mod, params = tvm.relay.testing.dcgan.get_workload(batch_size=1, ngf=8)
    mod = relay.transform.InferType()(mod)
    mod["main"] = bind_params_by_name(mod["main"], params)
    mod = relay.transform.InferType()(relay.transform.SimplifyInference()(mod))
    _, after, result = run_pass(mod, relay.transform.FoldConstant())
    assert result.hunks and {h.kind for h in result.hunks} == {"replaced"}
    for hunk in result.hunks:
        assert hunk.added and {after["nodes"][b]["node_kind"] for b in hunk.added} == {"Const"}
        assert any(result.info_before[a].kind == "Call" for a in hunk.removed)
    assert {after["nodes"][b]["node_kind"] for b in result.added} == {"Const"}


def test_eliminate_common_subexpr_merges() -> None:
    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    mod = relay.transform.InferType()(mod)
    # The first-order gradient computes some zeros_like twice: something for CSE to merge.
    mod = relay.transform.InferType()(relay.transform.FirstOrderGradient()(mod))
    mod = relay.transform.InferType()(relay.transform.ToGraphNormalForm()(mod))
    before, _, result = run_pass(mod, relay.transform.EliminateCommonSubexpr())
    assert result.added == () and result.removed
    assert result.hunks and {h.kind for h in result.hunks} == {"merged"}
    removed = {a for h in result.hunks for a in h.removed}
    assert removed == set(result.removed)
    for a in removed:  # each removed call has a twin that stayed: same operator, same inputs
        node = before["nodes"][a]
        twins = [x for x in result.mapping if x != a and before["nodes"][x] == node]
        assert twins, node


def test_convert_layout_inserts_transforms_and_changes_convolutions(resnet: Any) -> None:
    before, after, result = run_pass(resnet, relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "default"]}))
    added_calls = [b for b in result.added if after["nodes"][b]["node_kind"] == "Call"]
    assert added_calls and set(added_calls) == set(calls_of(after, "layout_transform"))
    inserted = {b for h in result.hunks if h.kind == "inserted" for b in h.added}
    assert inserted == set(added_calls)
    changed = {m.before: m for m in result.changed}
    convs = calls_of(before, "nn.conv2d")
    assert len(convs) == 21
    for conv in convs:
        fields = {c.field: (c.before, c.after) for c in changed[conv].fields}
        assert fields["attrs.data_layout"] == ("NCHW", "NHWC")
        assert fields["attrs.kernel_layout"] == ("OIHW", "HWIO")
    assert result.removed == ()


def test_defuse_ops_only_unwraps(simplified: Any) -> None:
    fused = relay.transform.FuseOps(fuse_opt_level=2)(simplified)
    before, _, result = run_pass(fused, relay.transform.DefuseOps())
    assert result.added == () and not result.changed and not result.rewired
    assert result.hunks and {h.kind for h in result.hunks} == {"unwrapped"}
    functions = {a for a in result.removed if before["nodes"][a]["node_kind"] == "Function"}
    assert functions == {a for h in result.hunks for a in h.removed if a in functions}
    assert len(functions) == len(result.hunks)
