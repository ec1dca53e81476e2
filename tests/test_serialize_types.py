"""serialize.types: Relay's types as RelayViz type objects.

The types are made with TVM's own constructors (and the Prelude's ``List``); the expected
objects are written from the types as constructed here. Relax's types: test_serialize_relax.py.
"""

from __future__ import annotations

from typing import Any

import pytest
import tvm

from relayviz_instrument.serialize.types import type_to_json


def test_a_tuple_of_nothing_and_no_type() -> None:
    assert type_to_json(None) is None
    assert type_to_json(tvm.ir.TupleType([])) == {"kind": "tuple", "fields": []}


@pytest.fixture(scope="module")
def relay() -> Any:
    return pytest.importorskip("tvm.relay", reason="Relay's types need a TVM with Relay")


def test_tensor_types_keep_the_1_0_form_with_dynamic_dimensions(relay: Any) -> None:
    assert type_to_json(relay.TensorType((1, 3, 224, 224), "float32")) == {
        "dtype": "float32", "shape": [1, 3, 224, 224]}
    assert type_to_json(relay.TensorType((relay.Any(), 4), "int8")) == {"dtype": "int8", "shape": ["?", 4]}
    n = tvm.tir.Var("n", "int64")
    assert type_to_json(relay.TensorType((n, n * 2), "float16")) == {"dtype": "float16", "shape": ["n", "n * 2"]}
    assert type_to_json(relay.TensorType((), "bool")) == {"dtype": "bool", "shape": []}


def test_tuples_functions_and_type_variables(relay: Any) -> None:
    scalar = relay.TensorType((), "float32")
    a = relay.TypeVar("a")
    func = relay.FuncType([a, relay.TupleType([scalar, a])], a, [a])
    assert type_to_json(func) == {
        "kind": "func",
        "params": [{"kind": "typevar", "name": "a"},
                   {"kind": "tuple", "fields": [{"dtype": "float32", "shape": []}, {"kind": "typevar", "name": "a"}]}],
        "ret": {"kind": "typevar", "name": "a"},
        "type_params": ["a"],
    }
    assert type_to_json(relay.FuncType([scalar], scalar)) == {
        "kind": "func", "params": [{"dtype": "float32", "shape": []}], "ret": {"dtype": "float32", "shape": []}}


def test_algebraic_data_types_references_and_incomplete_types(relay: Any) -> None:
    mod = tvm.IRModule()
    prelude = relay.prelude.Prelude(mod)
    list_var = prelude.mod.get_global_type_var("List")
    scalar = relay.TensorType((), "int32")
    assert type_to_json(list_var(scalar)) == {"kind": "adt", "name": "List",
                                              "args": [{"dtype": "int32", "shape": []}]}
    assert type_to_json(list_var) == {"kind": "adt", "name": "List", "args": []}
    assert type_to_json(relay.RefType(scalar)) == {"kind": "ref", "value": {"dtype": "int32", "shape": []}}
    assert type_to_json(relay.IncompleteType()) == {"kind": "incomplete"}
