"""serialize.nodes: the nodes Relay, Relax and TIR write alike, field by field and in field order.

Field order is part of a document's bytes (documents are encoded as built), so the expected
nodes below are written out in full, by hand. The children are TVM objects, written as Var
leaves by the walk; the nodes under test are those of the roots.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np
import tvm

from relayviz_instrument.serialize import nodes
from relayviz_instrument.serialize.cache import GenerationalCache
from relayviz_instrument.serialize.reflection import object_key
from relayviz_instrument.serialize.walk import Expansion, Walk

TIR = tvm.tirx if hasattr(tvm, "tirx") else tvm.tir
TENSOR = {"dtype": "float32", "shape": [2, 3]}


def document(expansions: Dict[Any, Expansion], root: Any) -> List[Dict[str, Any]]:
    """The nodes of a walk from ``root``: the objects in ``expansions`` as given there, every
    other object a Var leaf named by its text."""
    by_key = {object_key(obj): exp for obj, exp in expansions.items()}

    def expand(obj: Any, key: int) -> Expansion:
        return by_key.get(key) or nodes.leaf({"node_kind": "Var", "name": str(obj)})

    walk = Walk(expand)
    walk.visit(root)
    return walk.nodes


def objects(*names: str) -> Tuple[Any, ...]:
    return tuple(TIR.Var(name, "int32") for name in names)


def test_tuples_items_and_ifs_carry_their_type_last_and_only_when_known() -> None:
    a, b, c, tup, item, ite = objects("a", "b", "c", "tup", "item", "ite")
    got = document({tup: nodes.tuple_node([a, b], None), item: nodes.tuple_get_item(tup, 1, TENSOR),
                    ite: nodes.if_node(c, item, a, TENSOR)}, ite)
    assert got == [
        {"node_kind": "Var", "name": "c"},
        {"node_kind": "Var", "name": "a"},
        {"node_kind": "Var", "name": "b"},
        {"node_kind": "Tuple", "fields": [1, 2]},
        {"node_kind": "TupleGetItem", "tuple_value": 3, "index": 1, "type": TENSOR},
        {"node_kind": "If", "cond": 0, "true_branch": 4, "false_branch": 1, "type": TENSOR},
    ]
    assert [list(n) for n in got[3:]] == [["node_kind", "fields"], ["node_kind", "tuple_value", "index", "type"],
                                          ["node_kind", "cond", "true_branch", "false_branch", "type"]]


def test_a_function_has_body_and_params_then_its_own_fields() -> None:
    x, y, body, func = objects("x", "y", "body", "func")
    fields = {"ret_type": TENSOR, "attrs": {"Primitive": 1}}
    (*_, node) = document({func: nodes.function([x, y], body, fields)}, func)
    assert node == {"node_kind": "Function", "body": 2, "params": [0, 1], "ret_type": TENSOR,
                    "attrs": {"Primitive": 1}}
    assert list(node) == ["node_kind", "body", "params", "ret_type", "attrs"]


def test_calls_of_an_operator_share_its_op_node_per_key() -> None:
    x, first, second, other, tup = objects("x", "first", "second", "other", "tup")
    conv = ("Op", "nn.conv2d", b'{"groups":1}')
    got = document({
        first: nodes.op_call([x], conv, "nn.conv2d", {"groups": 1}, TENSOR),
        second: nodes.op_call([x], conv, "nn.conv2d", {"groups": 1}, None, {"sinfo_args": [TENSOR]}),
        other: nodes.op_call([x], ("Op", "nn.relu", nodes.NO_ATTRS), "nn.relu", None, TENSOR),
        tup: nodes.tuple_node([first, second, other], None),
    }, tup)
    assert got == [
        {"node_kind": "Var", "name": "x"},
        {"node_kind": "Op", "name": "nn.conv2d", "attrs": {"groups": 1}},
        {"node_kind": "Call", "op": 1, "args": [0], "type": TENSOR},
        {"node_kind": "Call", "op": 1, "args": [0], "sinfo_args": [TENSOR]},
        {"node_kind": "Op", "name": "nn.relu"},
        {"node_kind": "Call", "op": 4, "args": [0], "type": TENSOR},
        {"node_kind": "Tuple", "fields": [2, 3, 5]},
    ]


def test_an_operator_as_a_value_is_its_op_node_without_attributes() -> None:
    call, value, tup = objects("call", "value", "tup")
    got = document({call: nodes.op_call([], ("Op", "add", nodes.NO_ATTRS), "add", None, None),
                    value: nodes.op_value("add"), tup: nodes.tuple_node([call, value], None)}, tup)
    assert got == [{"node_kind": "Op", "name": "add"}, {"node_kind": "Call", "op": 0, "args": []},
                   {"node_kind": "Tuple", "fields": [1, 0]}]


def test_a_call_of_an_expression_has_the_callee_first_then_extra_fields() -> None:
    f, x, call = objects("f", "x", "call")
    (*_, node) = document({call: nodes.call(f, [x, x], TENSOR, {"attrs": {"k": 1}})}, call)
    assert node == {"node_kind": "Call", "op": 0, "args": [1, 1], "attrs": {"k": 1}, "type": TENSOR}
    assert list(node) == ["node_kind", "op", "args", "attrs", "type"]


def test_global_vars_are_one_node_per_name() -> None:
    g1, g2, h, tup = objects("g1", "g2", "h", "tup")
    got = document({g1: nodes.global_var("main"), g2: nodes.global_var("main"), h: nodes.global_var("helper"),
                    tup: nodes.tuple_node([g1, g2, h], None)}, tup)
    assert got == [{"node_kind": "GlobalVar", "name": "main"}, {"node_kind": "GlobalVar", "name": "helper"},
                   {"node_kind": "Tuple", "fields": [0, 0, 1]}]


def test_a_variable_keeps_the_1_0_tensor_fields() -> None:
    assert nodes.var_node("x", TENSOR) == {"node_kind": "Var", "name": "x", "dtype": "float32", "shape": [2, 3]}
    on_device = dict(TENSOR, vdevice="llvm:0")
    assert nodes.var_node("x", on_device) == {"node_kind": "Var", "name": "x", "dtype": "float32",
                                              "shape": [2, 3], "type": on_device}
    assert nodes.var_node("t", {"kind": "tuple", "fields": []}) == {
        "node_kind": "Var", "name": "t", "type": {"kind": "tuple", "fields": []}}
    assert nodes.var_node("u", None) == {"node_kind": "Var", "name": "u"}


def test_constants_read_each_tensor_once() -> None:
    array = np.arange(6, dtype="float32").reshape(2, 3)
    data = tvm.runtime.tensor(array) if hasattr(tvm.runtime, "tensor") else tvm.nd.array(array)
    tensors: GenerationalCache[Tuple[Any, str]] = GenerationalCache()
    c1, c2 = objects("c1", "c2")
    first = document({c1: nodes.constant(tensors, data, False, 16)}, c1)
    again = document({c2: nodes.constant(tensors, data, False, 16)}, c2)
    assert first == again == [{"node_kind": "Const", "dtype": "float32",
                               "value": {"array_value": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "array_shape": [2, 3]}}]
    assert list(first[0]) == ["node_kind", "value", "dtype"]
    assert len(tensors) == 1
    digest = document({c1: nodes.constant(GenerationalCache(), data, False, 4)}, c1)[0]["value"]
    assert set(digest) == {"array_shape", "digest"}


def test_a_leaf_is_a_new_node_in_every_document() -> None:
    x, = objects("x")
    leaf = nodes.leaf({"node_kind": "Opaque", "type_key": "tir.Something"})
    first = document({x: leaf}, x)
    first[0]["edited"] = True
    assert document({x: leaf}, x) == [{"node_kind": "Opaque", "type_key": "tir.Something"}]
    assert nodes.opaque("relax.Thing").make(Walk(lambda o, k: leaf), []) == {
        "node_kind": "Opaque", "type_key": "relax.Thing"}
