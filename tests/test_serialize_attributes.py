"""serialize.attributes: operator, function and module attributes as JSON, on both TVM generations.

Attributes come from TVM's own operator constructors (Relax's conv2d and sum; Relay's where the
TVM has Relay) and from ``with_attr``; the expected values are those passed to them.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np
import pytest
import tvm

from relayviz_instrument.serialize.attributes import attr_value, attrs_to_json, object_text

NEW_TVM = hasattr(tvm, "tirx")
TIR = tvm.tirx if NEW_TVM else tvm.tir


def _relax_var(name: str, shape: Any) -> Any:
    relax = pytest.importorskip("tvm.relax")
    sinfo = relax.TensorStructInfo if hasattr(relax, "TensorStructInfo") else relax.TensorType
    return relax.Var(name, sinfo(shape, "float32"))


def test_operator_attributes_keep_their_field_order_and_values() -> None:
    from tvm import relax

    x, w = _relax_var("x", [1, 3, 8, 8]), _relax_var("w", [4, 3, 3, 3])
    attrs = relax.op.nn.conv2d(x, w, strides=2, padding=1, groups=1, data_layout="NCHW").attrs
    got = attrs_to_json(attrs)
    assert list(got) == ["strides", "padding", "dilation", "groups", "data_layout", "kernel_layout", "out_layout",
                         "out_dtype"]
    assert {k: got[k] for k in ("strides", "padding", "dilation", "groups", "data_layout", "kernel_layout")} == {
        "strides": [2, 2], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1, "data_layout": "NCHW",
        "kernel_layout": "OIHW"}


def test_boolean_fields_are_json_booleans() -> None:
    from tvm import relax

    attrs = relax.op.sum(_relax_var("x", [2, 3]), axis=[1], keepdims=True).attrs
    got = attrs_to_json(attrs)
    assert got == {"axis": [1], "keepdims": True} and got["keepdims"] is True  # TVM 0.16 hands it over as 1
    assert attrs_to_json(relax.op.sum(_relax_var("x", [2, 3]), axis=[0]).attrs)["keepdims"] is False


def test_relay_boolean_fields_are_json_booleans() -> None:
    relay = pytest.importorskip("tvm.relay", reason="needs a TVM with Relay")
    data = relay.var("x", shape=(1, 4, 8, 8))
    params = [relay.var(name, shape=(4,)) for name in ("gamma", "beta", "mean", "var")]
    attrs = relay.nn.batch_norm(data, *params, center=False).astuple().attrs
    got = attrs_to_json(attrs)
    assert got["center"] is False and got["scale"] is True and got["axis"] == 1
    assert math.isclose(got["epsilon"], 1e-5, rel_tol=1e-6)


def test_function_attributes_are_every_entry_by_name() -> None:
    func = TIR.PrimFunc([], TIR.Evaluate(0)).with_attr("zeta", [1, 2]).with_attr("alpha", "text")
    func = func.with_attr("flag", True)
    assert attrs_to_json(func.attrs) == {"alpha": "text", "flag": True, "zeta": [1, 2]}
    assert list(attrs_to_json(func.attrs)) == ["alpha", "flag", "zeta"]
    assert attrs_to_json(None) == {}


def test_attribute_values_of_every_kind() -> None:
    n = TIR.Var("n", "int64")
    assert attr_value(TIR.const(3, "int32")) == 3
    assert attr_value(TIR.const(True, "bool")) is True
    assert attr_value(TIR.const(float("nan"), "float32")) == "nan"
    assert attr_value(TIR.const(-math.inf, "float64")) == "-inf"
    assert attr_value(np.float32(0.5)) == 0.5 and attr_value(np.int64(7)) == 7
    assert attr_value(tvm.runtime.convert({"b": 1, "a": 2.5})) == {"a": 2.5, "b": 1}  # by key, not insertion
    assert attr_value(tvm.runtime.convert(["x", 1])) == ["x", 1]
    assert attr_value(n) == "n"
    assert attr_value(tvm.ir.GlobalVar("helper")) == "helper"
    assert attr_value(tvm.ir.Op.get("relax.add")) == "relax.add"
    assert attr_value(None) is None


def test_a_tensor_attribute_is_its_value() -> None:
    array = np.arange(6, dtype="float32").reshape(2, 3)
    tensor = tvm.runtime.tensor(array) if hasattr(tvm.runtime, "tensor") else tvm.nd.array(array)
    assert attr_value(tensor) == {"array_value": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "array_shape": [2, 3]}


def test_a_long_text_is_cut_short_with_a_digest_of_the_whole() -> None:
    buffer = TIR.decl_buffer((64,), "float32", name="A")
    i = TIR.Var("i", "int32")
    body = TIR.SeqStmt([TIR.BufferStore(buffer, TIR.BufferLoad(buffer, [i]) + float(k), [i]) for k in range(8)])
    func = TIR.PrimFunc([], body)
    full = str(func)
    assert len(full) > 240 and "0x" not in full
    digest = "sha256:" + hashlib.sha256(full.encode()).hexdigest()[:32]
    assert object_text(func) == full[:240] + f"… ({digest}, {len(full)} characters)"
    assert object_text(i) == "i"
