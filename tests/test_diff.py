"""Unit tests of relayviz_instrument.diff on small documents written by hand.

Each test builds a before and an after document with :class:`Builder` and states, from the
edit it made, what the diff must say.
"""

from __future__ import annotations

from typing import Any, Dict, List

import orjson
import pytest

import relayviz_instrument
from diffgraphs import T4, T8, DocumentBuilder as Builder
from editscript import apply_edits, edit_script
from relayviz_instrument.diff import FieldChange, GraphDiff, diff
from relayviz_instrument.diff.graph import CanonicalGraph
from relayviz_instrument.format import labelled_references, references, validate


def renumbered(doc: Dict[str, Any]) -> Dict[str, Any]:
    """The same graph with node ids reversed."""
    n = len(doc["nodes"])
    new = {i: n - 1 - i for i in range(n)}
    nodes = [None] * n
    for i, node in enumerate(doc["nodes"]):
        node = dict(node)
        for field, pos, target in labelled_references(doc["nodes"][i]):
            if pos is None:
                node[field] = new[target]
            else:
                node[field] = list(node[field]) if isinstance(pos, int) else dict(node[field])
                node[field][pos] = new[target]
        nodes[new[i]] = node
    out = {k: v for k, v in doc.items() if k != "nodes"}
    out["functions"] = {name: new[t] for name, t in doc["functions"].items()}
    out["nodes"] = nodes
    validate(out)
    return out


def mlp(b: Builder, relu: str = "nn.relu") -> int:
    """main(x, w) = relu(dense(x, w)) + 1.0"""
    x, w = b.var("x", T4), b.var("w", {"dtype": "float32", "shape": [8, 4]})
    dense = b.call("nn.dense", x, w, attrs={"units": 8})
    act = b.call(relu, dense)
    out = b.call("add", act, b.const(1.0))
    return b.function(out, [x, w])


def test_a_document_against_itself_or_renumbered_is_empty() -> None:
    b = Builder()
    mlp(b)
    doc = b.document()
    for other in (doc, renumbered(doc)):
        result = diff(doc, other)
        assert result.is_empty
        assert result.summary == {"added": 0, "removed": 0, "changed": 0, "rewired": 0,
                                  "unchanged": 10, "hunks": []}
        assert len(result.mapping) == 10
    assert diff(doc, renumbered(doc)).mapping == {i: 9 - i for i in range(10)}


def test_changed_attribute_is_reported_field_by_field() -> None:
    a, b = Builder(), Builder()
    for builder, strides in ((a, [1, 1]), (b, [2, 2])):
        x, w = builder.var("x"), builder.var("w")
        conv = builder.call("nn.conv2d", x, w, attrs={"strides": strides, "padding": [0, 0]})
        builder.function(builder.call("nn.relu", conv), [x, w])
    result = diff(a.document(), b.document())
    # The conv2d call (id 3) and its Op node (id 2, used by that call alone) both changed.
    assert [(m.before, m.after, m.fields) for m in result.changed] == [
        (2, 2, (FieldChange("attrs.strides", [1, 1], [2, 2]),)),
        (3, 3, (FieldChange("attrs.strides", [1, 1], [2, 2]),)),
    ]
    assert not result.rewired and not result.added and not result.removed
    assert [(h.kind, h.label, h.matched) for h in result.hunks] == [
        ("changed", "nn.conv2d: attrs.strides", ((3, 3),))]
    assert result.summary["changed"] == 2 and result.summary["unchanged"] == 5


def test_renamed_variable_and_new_constant_value_are_changes() -> None:
    a, b = Builder(), Builder()
    for builder, name, digest in ((a, "data", "sha256:" + "0" * 32), (b, "input0", "sha256:" + "1" * 32)):
        x = builder.var(name)
        c = builder.add({"node_kind": "Const", "dtype": "float32",
                         "value": {"array_shape": [1, 8], "digest": digest}})
        builder.function(builder.call("add", x, c), [x])
    result = diff(a.document(), b.document())
    assert {m.before: m.fields for m in result.changed} == {
        0: (FieldChange("name", "data", "input0"),),
        1: (FieldChange("value", {"array_shape": [1, 8], "digest": "sha256:" + "0" * 32},
                        {"array_shape": [1, 8], "digest": "sha256:" + "1" * 32}),),
    }
    assert not result.rewired


def test_rewired_input_keeps_the_pair() -> None:
    a, b = Builder(), Builder()
    for builder, second in ((a, "y"), (b, "z")):
        x, y, z = builder.var("x"), builder.var("y"), builder.var("z")
        s = builder.call("add", x, {"y": y, "z": z}[second])
        builder.function(builder.call("nn.relu", s), [x, y, z])
    result = diff(a.document(), b.document())
    assert [(m.before, m.after, m.inputs) for m in result.rewired] == [(4, 4, ((0, 1), (0, 2)))]
    assert [(h.kind, h.label) for h in result.hunks] == [("rewired", "add rewired")]
    assert result.summary["rewired"] == 1 and result.summary["changed"] == 0


def test_inserted_node_on_an_existing_edge() -> None:
    a, b = Builder(), Builder()
    for builder, insert in ((a, False), (b, True)):
        x = builder.var("x")
        t = builder.call("tanh", x)
        if insert:
            t = builder.call("layout_transform", t, attrs={"src_layout": "NC", "dst_layout": "CN"})
        builder.function(builder.call("nn.relu", t), [x])
    before, after = a.document(), b.document()
    result = diff(before, after)
    # after: 0 x, 1 Op tanh, 2 tanh, 3 Op layout_transform, 4 layout_transform, 5 Op relu, 6 relu, 7 main
    assert result.added == (3, 4) and result.removed == ()
    assert [(h.kind, h.label, h.added, h.matched) for h in result.hunks] == [
        ("inserted", "layout_transform inserted before nn.relu", (4,), ((4, 6),))]
    assert [(m.before, m.after) for m in result.rewired] == [(4, 6)]
    assert result.op_delta == {"layout_transform": 1}


def test_deleted_node_and_replacement_by_a_constant() -> None:
    a, b = Builder(), Builder()
    x = a.var("x")
    folded = a.call("multiply", a.const(2.0), a.const(3.0), ty={"dtype": "float32", "shape": []})
    a.function(a.call("add", a.call("nn.relu", x), folded), [x])
    x = b.var("x")
    b.function(b.call("add", x, b.const(6.0)), [x])
    result = diff(a.document(), b.document())
    # before: 0 x, 1 Const 2, 2 Const 3, 3 Op multiply, 4 multiply, 5 Op relu, 6 relu, 7 Op add, 8 add, 9 main
    # after:  0 x, 1 Const 6, 2 Op add, 3 add, 4 main
    assert result.removed == (1, 2, 3, 4, 5, 6) and result.added == (1,)
    assert [(h.kind, h.label, h.removed, h.added) for h in result.hunks] == [
        ("replaced", "multiply+Const×2 → Const", (1, 2, 4), (1,)),  # where the Const is, in data-flow order
        ("removed", "nn.relu removed", (6,), ()),
    ]
    assert result.op_delta == {"multiply": -1, "nn.relu": -1}


def test_a_node_between_two_replaced_regions_is_still_paired() -> None:
    a, b = Builder(), Builder()
    for builder, expanded in ((a, False), (b, True)):
        x = builder.var("x")
        stats = [[builder.var(f"{name}{i}", T4) for name in ("gamma", "beta", "mean", "var")] for i in (1, 2)]

        def norm(data: int, g: int, be: int, m: int, v: int) -> int:
            if expanded:  # SimplifyInference's shape: data * scale + shift
                scale = builder.call("divide", g, builder.call("sqrt", v, ty=T4), ty=T4)
                shift = builder.call("subtract", be, builder.call("multiply", m, scale, ty=T4), ty=T4)
                return builder.call("add", builder.call("multiply", data, scale), shift)
            bn = builder.call("nn.batch_norm", data, g, be, m, v, attrs={"axis": 1},
                              ty={"kind": "tuple", "fields": [T8, T4, T4]})
            return builder.add({"node_kind": "TupleGetItem", "tuple_value": bn, "index": 0, "type": T8})

        act = builder.call("nn.relu", norm(x, *stats[0]))
        pooled = builder.call("nn.max_pool2d", act, attrs={"pool_size": [2, 2]})
        builder.function(norm(pooled, *stats[1]), [x] + stats[0] + stats[1])
    before, after = a.document(), b.document()
    result = diff(before, after)

    def calls(doc: Dict[str, Any], op: str) -> List[int]:
        return [i for i, n in enumerate(doc["nodes"])
                if n["node_kind"] == "Call" and doc["nodes"][n["op"]]["name"] == op]

    # the relu (and main's body) read an expansion instead of a TupleGetItem; the pool reads the relu
    relu, pool = calls(before, "nn.relu")[0], calls(before, "nn.max_pool2d")[0]
    assert result.mapping[relu] == calls(after, "nn.relu")[0]
    assert result.mapping[pool] == calls(after, "nn.max_pool2d")[0]
    assert [m.before for m in result.rewired] == [relu, before["functions"]["main"]]
    assert [h.kind for h in result.hunks] == ["replaced", "replaced"]


def test_common_subexpression_merged_into_its_twin() -> None:
    a, b = Builder(), Builder()
    x = a.var("x")
    first, second = a.call("nn.relu", x), a.call("nn.relu", x)
    t, s = a.call("tanh", first), a.call("sigmoid", second)
    a.function(a.call("multiply", a.call("add", t, first), s), [x])
    x = b.var("x")
    shared = b.call("nn.relu", x)
    t, s = b.call("tanh", shared), b.call("sigmoid", shared)
    b.function(b.call("multiply", b.call("add", t, shared), s), [x])
    result = diff(a.document(), b.document())
    # before: 0 x, 1 Op relu, 2 relu, 3 relu, 4 Op tanh, 5 tanh, 6 Op sigmoid, 7 sigmoid, 8 Op add, 9 add, ...
    # after:  0 x, 1 Op relu, 2 relu, 3 Op tanh, 4 tanh, 5 Op sigmoid, 6 sigmoid, 7 Op add, 8 add, ...
    # The first relu stays: two of the shared relu's three users read it.
    assert result.removed == (3,) and result.added == ()
    assert result.mapping[2] == 2
    assert [(h.kind, h.label, h.removed, h.matched) for h in result.hunks] == [
        ("merged", "nn.relu merged into an equal node", (3,), ((7, 6),))]
    assert [(m.before, m.after) for m in result.rewired] == [(7, 6)]


def test_different_operators_are_never_paired() -> None:
    a, b = Builder(), Builder()
    mlp(a), mlp(b, relu="sigmoid")
    before, after = a.document(), b.document()
    result = diff(before, after)
    # 0 x, 1 w, 2 Op dense, 3 dense, 4 Op relu|sigmoid, 5 relu|sigmoid, 6 Const, 7 Op add, 8 add, 9 main
    assert result.removed == (4, 5) and result.added == (4, 5)
    assert 5 not in result.mapping and 4 not in result.mapping
    assert [(h.kind, h.label) for h in result.hunks] == [("replaced", "nn.relu → sigmoid")]


def test_calls_moved_into_a_primitive_function_read_as_wrapped() -> None:
    a, b = Builder(), Builder()
    x, y = a.var("x"), a.var("y")
    a.function(a.call("nn.relu", a.call("add", x, y)), [x, y])
    x, y = b.var("x"), b.var("y")
    p0, p1 = b.var("p0"), b.var("p1")
    fused = b.function(b.call("nn.relu", b.call("add", p0, p1)), [p0, p1], attrs={"Primitive": 1})
    call = b.add({"node_kind": "Call", "op": fused, "args": [x, y], "type": T8})
    b.function(call, [x, y])
    result = diff(a.document(), b.document())
    # after: 0 x, 1 y, 2 p0, 3 p1, 4 Op add, 5 add, 6 Op relu, 7 relu, 8 Function, 9 Call, 10 main
    assert result.removed == () and result.added == (2, 3, 8, 9)
    assert not result.changed and not result.rewired  # parameters stand for the arguments
    assert [(h.kind, h.label, h.added, h.matched) for h in result.hunks] == [
        ("wrapped", "add+nn.relu wrapped into a primitive Function", (2, 3, 8, 9), ((3, 5), (5, 7)))]


def test_a_region_replaced_inside_a_new_function_joins_the_wrapped_hunk() -> None:
    a, b = Builder(), Builder()
    x = a.var("x")
    a.function(a.call("nn.relu", a.call("tanh", x)), [x])
    x = b.var("x")
    p0 = b.var("p0")
    fused = b.function(b.call("nn.relu", b.call("sigmoid", p0)), [p0], attrs={"Primitive": 1})
    b.function(b.add({"node_kind": "Call", "op": fused, "args": [x], "type": T8}), [x])
    result = diff(a.document(), b.document())
    # before: 0 x, 1 Op tanh, 2 tanh, 3 Op relu, 4 relu, 5 main
    # after:  0 x, 1 p0, 2 Op sigmoid, 3 sigmoid, 4 Op relu, 5 relu, 6 Function, 7 Call, 8 main
    assert [(h.kind, h.label, h.removed, h.added, h.matched) for h in result.hunks] == [
        ("wrapped", "nn.relu wrapped into a primitive Function, replacing tanh", (2,), (1, 3, 6, 7), ((4, 5),))]


def test_fused_function_with_a_tuple_result() -> None:
    a, b = Builder(), Builder()
    x = a.var("x")
    a.function(a.call("add", a.call("nn.relu", x), a.call("tanh", x)), [x])
    x = b.var("x")
    p0 = b.var("p0")
    body = b.add({"node_kind": "Tuple", "fields": [b.call("nn.relu", p0), b.call("tanh", p0)]})
    fused = b.function(body, [p0], attrs={"Primitive": 1})
    call = b.add({"node_kind": "Call", "op": fused, "args": [x]})
    first = b.add({"node_kind": "TupleGetItem", "tuple_value": call, "index": 0})
    second = b.add({"node_kind": "TupleGetItem", "tuple_value": call, "index": 1})
    b.function(b.call("add", first, second), [x])
    result = diff(a.document(), b.document())
    assert not result.removed and not result.changed and not result.rewired
    assert [h.kind for h in result.hunks] == ["wrapped"]
    assert result.hunks[0].label == "nn.relu+tanh wrapped into a primitive Function"
    assert set(result.added) == {1, 6, 7, 8, 9, 10}  # p0, Tuple, Function, Call, two TupleGetItems


def test_variadic_inputs_aligned_by_longest_common_subsequence() -> None:
    a, b = Builder(), Builder()
    for builder, extra in ((a, False), (b, True)):
        x = builder.var("x")
        fields = [builder.call("nn.relu", x), builder.call("tanh", x), builder.call("sigmoid", x)]
        if extra:
            fields.insert(1, builder.call("exp", x))
        tup = builder.add({"node_kind": "Tuple", "fields": fields})
        builder.function(builder.call("concatenate", tup, attrs={"axis": 1}), [x])
    result = diff(a.document(), b.document())
    # before: 0 x, 1 Op relu, 2 relu, 3 Op tanh, 4 tanh, 5 Op sigmoid, 6 sigmoid, 7 Tuple, ...
    # after:  0 x, 1 Op relu, 2 relu, 3 Op tanh, 4 tanh, 5 Op sigmoid, 6 sigmoid, 7 Op exp, 8 exp, 9 Tuple, ...
    assert {a_: result.mapping[a_] for a_ in (2, 4, 6, 7)} == {2: 2, 4: 4, 6: 6, 7: 9}
    assert result.added == (7, 8)
    assert [(m.before, m.after) for m in result.rewired] == [(7, 9)]


def test_identical_branches_are_paired_by_position() -> None:
    a, b = Builder(), Builder()
    for builder in (a, b):
        x = builder.var("x")
        left, right = builder.call("nn.relu", x), builder.call("nn.relu", x)
        builder.function(builder.call("subtract", left, right), [x])
    before, after = a.document(), renumbered(b.document())
    result = diff(before, after)
    assert result.is_empty
    # ids reversed (seven nodes): the left relu (2) is 6 - 2 = 4 after, the right one (3) is 3
    assert result.mapping[2] == 4 and result.mapping[3] == 3


def test_summary_is_small_cheap_json() -> None:
    a, b = Builder(), Builder()
    x = a.var("x")
    a.function(a.call("nn.relu", x), [x])
    x = b.var("x")
    node = x
    for i in range(12):  # twelve different operators inserted: twelve hunk groups
        node = b.call(f"op{i}", node)
    b.function(b.call("nn.relu", node), [x])
    result = diff(a.document(), b.document())
    summary = result.summary
    assert orjson.loads(orjson.dumps(summary)) == summary
    assert {k: summary[k] for k in ("added", "removed", "changed", "rewired", "unchanged")} == {
        "added": 24, "removed": 0, "changed": 0, "rewired": 1, "unchanged": 3}
    assert summary["hunks"] == [{"kind": "inserted", "count": 1, "label":
                                 "op0+op1+op2+op3+op4+op5+… inserted before nn.relu"}]
    assert "more_hunk_groups" not in summary
    assert summary["ops"] == {f"op{i}": 1 for i in range(12)}


def test_summary_lists_at_most_eight_groups() -> None:
    a, b = Builder(), Builder()
    for builder, layout in ((a, "NCHW"), (b, "NHWC")):
        x = builder.var("x")
        outs = [builder.call(f"op{i}", x, attrs={"layout": layout}) for i in range(10)]
        builder.function(builder.add({"node_kind": "Tuple", "fields": outs}), [x])
    result = diff(a.document(), b.document())
    assert [g["label"] for g in result.summary["hunks"]] == [f"op{i}: attrs.layout" for i in range(8)]
    assert result.summary["more_hunk_groups"] == 2


def test_to_json_keys_and_entries() -> None:
    a, b = Builder(), Builder()
    mlp(a), mlp(b, relu="sigmoid")
    before, after = a.document(), b.document()
    out = diff(before, after).to_json()
    assert set(out) == {"added", "removed", "changed", "rewired", "hunks", "module", "summary"}
    assert out["removed"] == [{"before": 4, "node": "Op", "detail": "nn.relu"},
                              {"before": 5, "node": "nn.relu", "type": "float32[1, 8]"}]
    assert out["rewired"] == [{"before": 8, "after": 8, "node": "add", "type": "float32[1, 8]",
                               "inputs": {"before": [5, 6], "after": [5, 6]}}]
    assert out["hunks"] == [{"kind": "replaced", "label": "nn.relu → sigmoid", "removed": [5],
                             "added": [5], "matched": [[8, 8]]}]
    orjson.dumps(out)


def test_edit_script_rebuilds_the_after_document() -> None:
    a, b = Builder(), Builder()
    mlp(a), mlp(b, relu="sigmoid")
    before, after = a.document(), renumbered(b.document())
    result = diff(before, after)
    script = edit_script(before, after, result)
    assert apply_edits(before, script) == after
    # remove relu and its Op, add sigmoid and its Op, point add at the sigmoid
    assert sorted(e.action for e in script.edits) == ["add", "add", "remove", "remove", "update"]


def test_nodes_of_a_newer_minor_version_are_diffed_by_their_fields() -> None:
    def future(value: int) -> Dict[str, Any]:
        return {"format": "relayviz", "version": [1, 9], "ir": "relay", "root": 1, "nodes": [
            {"node_kind": "Hologram", "depth": value},
            {"node_kind": "Tuple", "fields": [0]}]}

    assert diff(future(1), future(1)).is_empty
    result = diff(future(1), future(2))
    assert [(m.before, m.fields) for m in result.changed] == [(0, (FieldChange("depth", 1, 2),))]


def test_public_api_exports_diff() -> None:
    assert relayviz_instrument.diff is diff
    assert relayviz_instrument.GraphDiff is GraphDiff
    assert {"diff", "GraphDiff"} <= set(relayviz_instrument.__all__)


@pytest.fixture(scope="module")
def fused_resnet_doc() -> Dict[str, Any]:
    """A ResNet-18 after SimplifyInference and FuseOps: every node kind a Relay CNN has."""
    import tvm.relay.testing
    from tvm import relay

    mod, _ = tvm.relay.testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    mod = relay.transform.FuseOps(2)(relay.transform.InferType()(relay.transform.SimplifyInference()(mod)))
    return relayviz_instrument.to_relayviz(mod)


def test_fast_references_agree_with_the_format(fused_resnet_doc: Dict[str, Any]) -> None:
    binds = {"node_kind": "Bind", "expr": 0, "binds": {"b": 2, "a": 1}}
    for node in fused_resnet_doc["nodes"] + [binds]:
        assert references(node) == [t for _, _, t in labelled_references(node)]


def test_view_inlines_each_fused_function(fused_resnet_doc: Dict[str, Any]) -> None:
    graph = CanonicalGraph(fused_resnet_doc)
    functions = [r for r in range(graph.size) if graph.kind[r] == "Function" and r not in graph.roots]
    assert functions and sorted(graph.inlined) == functions
    for f, call in graph.inlined.items():
        assert graph.canon[call] == graph.canon[graph.refs[f][0]]  # the call stands for the body
        for param, arg in zip(graph.refs[f][1:], graph.refs[call][1:]):
            assert graph.canon[param] == graph.canon[arg]  # a parameter for its argument
    for r in graph.topo:  # inputs come first, through the inlined functions too
        assert all(graph.position[i] < graph.position[r] for i in graph.inputs[r])


#: @f is called once by name, @g twice, @sum_to from @main and from itself, @spin only from itself.
_GLOBAL_CALLS = """#[version = "0.0.5"]
def @f(%x: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] { nn.relu(add(%x, 1f)) }
def @g(%y: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] { negative(%y) }
def @sum_to(%n: int32, %acc: int32) -> int32 {
  if (less_equal(%n, 0)) { %acc } else { @sum_to(subtract(%n, 1), add(%acc, %n)) }
}
def @spin(%k: int32) -> int32 { @spin(%k) }
def @main(%a: Tensor[(2, 2), float32], %n: int32) -> (Tensor[(2, 2), float32], int32) {
  (@g(@g(@f(%a))), @sum_to(%n, 0))
}
"""


def test_view_reads_through_a_module_function_called_once_by_name() -> None:
    from tvm import relay

    doc = relayviz_instrument.to_relayviz(relay.transform.InferType()(relay.fromtext(_GLOBAL_CALLS)))
    graph = CanonicalGraph(doc)
    f = graph.functions["f"]
    assert list(graph.inlined) == [f]  # not @g (two calls), @sum_to or @spin (recursive), nor @main
    call = graph.inlined[f]
    assert graph.kind[call] == "Call" and graph.nodes[graph.refs[call][0]]["name"] == "f"
    assert graph.canon[call] == graph.canon[graph.refs[f][0]]
    (x,) = graph.refs[f][1:]
    assert graph.canon[x] == graph.refs[graph.functions["main"]][1]  # @main's %a


def test_a_body_moved_into_a_global_function_is_wrapped() -> None:
    from tvm import relay

    def module(text: str) -> Dict[str, Any]:
        return relayviz_instrument.to_relayviz(relay.transform.InferType()(relay.fromtext(text)))

    head = '#[version = "0.0.5"]\n'
    before = module(head + "def @main(%a: Tensor[(2, 2), float32]) { negative(nn.relu(add(%a, 1f))) }")
    after = module(head + "def @f(%x: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] { nn.relu(add(%x, 1f)) }\n"
                   "def @main(%a: Tensor[(2, 2), float32]) { negative(@f(%a)) }")
    result = diff(before, after)
    assert [h.kind for h in result.hunks] == ["wrapped"]
    (hunk,) = result.hunks
    assert hunk.label == "add+nn.relu wrapped into a Function"
    assert sorted(result.info_after[b].kind for b in hunk.added) == ["Call", "Function", "GlobalVar", "Var"]
    assert not result.removed and not result.changed


def test_documents_of_primfuncs_alone_and_an_empty_one() -> None:
    def primfunc(name: str, digest: str) -> Dict[str, Any]:
        return {"node_kind": "PrimFunc", "name": name, "digest": "sha256:" + digest * 32,
                "signature": [{"name": "a", "dtype": "float32", "shape": [4]}]}

    before = {"format": "relayviz", "version": [1, 1], "ir": "tir", "functions": {"f": 0, "g": 1},
              "nodes": [primfunc("f", "0"), primfunc("g", "1")]}
    after = {"format": "relayviz", "version": [1, 1], "ir": "tir", "functions": {"f": 0},
             "nodes": [primfunc("f", "2")]}
    result = diff(before, after)
    assert [(m.before, m.after, [c.field for c in m.fields]) for m in result.changed] == [(0, 0, ["digest"])]
    assert result.removed == (1,) and result.added == ()
    empty = {"format": "relayviz", "version": [1, 1], "ir": "tir", "nodes": []}
    assert diff(before, empty).removed == (0, 1)
    assert diff(empty, empty).is_empty


def test_block_alignment_puts_an_item_repeated_in_a_run_last() -> None:
    from relayviz_instrument.diff.sequence import align_sequences as align

    # The common prefix stops at z/y, so the run of R is matched from its end: sliding moves
    # the inserted R after the paired one, as the prefix would have.
    assert align("zRb", "yRRb", cells=0) == [(1, 2), (2, 3)]
    assert align("zRb", "yRRb", cells=0, slide=True) == [(1, 1), (2, 3)]
    assert align("zAbRQc", "yAbRQRQc", cells=0) == [(1, 1), (2, 2), (3, 5), (4, 6), (5, 7)]
    assert align("zAbRQc", "yAbRQRQc", cells=0, slide=True) == [(1, 1), (2, 2), (3, 3), (4, 4), (5, 7)]
    assert align("zRRRb", "yRb", cells=0, slide=True) == [(1, 1), (4, 2)]
    # a gap of as many items on each side reads as items changed one for one: no slide
    assert align("zEEb", "ycEb", cells=0, slide=True) == [(2, 2), (3, 3)]


def test_the_spine_of_a_residual_network_starts_at_its_input() -> None:
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument.diff.blocks import spine_blocks
    from relayviz_instrument.diff.index import IndexedDocument

    # A residual unit's branch hangs deeper in the dominator tree than the input does (its
    # nodes are dominated by the add that joins it): the input is the leaf farthest away.
    mod, _ = tvm.relay.testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    doc = relayviz_instrument.to_relayviz(relay.transform.InferType()(mod))
    index = IndexedDocument(doc)
    blocks = spine_blocks(index)
    assert blocks is not None
    assert doc["nodes"][index.graph.doc_id[blocks.exits[0]]]["name"] == "data"
    assert blocks.exits[-1] == index.graph.inputs[index.graph.functions["main"]][0]


def test_block_alignment_anchors_a_gap_without_a_unique_block_on_a_stretch() -> None:
    from relayviz_instrument.diff.sequence import align_sequences as align

    # No key between the edited ends occurs once on each side; the stretches BB and BA do.
    assert align("pABBAq", "rBBAs", cells=0) == []
    assert align("pABBAq", "rBBAs", cells=0, stretch=32) == [(2, 1), (3, 2), (4, 3)]
    # Stretches are tried up to the length given, and only where no single key anchors.
    assert align("pABBAq", "rBBAs", cells=0, stretch=1) == []
    assert align("pACBBAq", "rCBBAs", cells=0, stretch=32) == [(2, 1), (3, 2), (4, 3), (5, 4)]
