"""serialize.tensors: tensor constants as values or digests, on both TVM generations.

The tensors are TVM tensors made from NumPy arrays; the expected values are the arrays' own,
the digests are told apart by what they must cover (dtype, shape, every byte).
"""

from __future__ import annotations

import math
import re
from typing import Any, List

import numpy as np
import pytest
import tvm

from relayviz_instrument.serialize import tensors
from relayviz_instrument.serialize.tensors import scalar_json, tensor_value


def tvm_tensor(array: np.ndarray[Any, Any]) -> Any:
    """A host TVM tensor holding ``array`` (``tvm.nd.array`` before TVM 0.2x)."""
    return tvm.runtime.tensor(array) if hasattr(tvm.runtime, "tensor") else tvm.nd.array(array)


def test_scalars_are_json_numbers_and_non_finite_floats_strings() -> None:
    assert scalar_json(np.bool_(True)) is True
    assert scalar_json(np.int8(-3)) == -3 and type(scalar_json(np.uint64(2**63))) is int
    assert scalar_json(np.float16(0.5)) == 0.5
    assert [scalar_json(v) for v in (math.nan, math.inf, -math.inf)] == ["nan", "inf", "-inf"]


def test_a_zero_dimensional_tensor_is_a_scalar() -> None:
    assert tensor_value(tvm_tensor(np.array(3.25, "float32"))) == (3.25, "float32")
    assert tensor_value(tvm_tensor(np.array(-7, "int64"))) == (-7, "int64")


def test_small_elements_moves_the_threshold() -> None:
    array = tvm_tensor(np.arange(5, dtype="int8"))
    value, _ = tensor_value(array, small_elements=4)
    assert set(value) == {"array_shape", "digest"} and re.fullmatch(r"sha256:[0-9a-f]{32}", value["digest"])
    assert tensor_value(array, small_elements=5) == ({"array_value": [0, 1, 2, 3, 4], "array_shape": [5]}, "int8")
    assert tensor_value(array, small_elements=4, full_values=True)[0]["array_value"] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("dtype,values", [
    ("float16", [0.5, -1.25, 65504.0, 0.0]),
    ("int8", [-128, 127, 0, -1]),
    ("bool", [True, False, True, True]),
    ("uint8", [0, 255, 7, 8]),
    ("int64", [2**40, -(2**40), 1, 0]),
    ("float64", [0.1, 1e300, -2.5, 0.0]),
])
def test_values_keep_their_dtype(dtype: str, values: List[Any]) -> None:
    value, got_dtype = tensor_value(tvm_tensor(np.array(values, dtype=dtype).reshape(2, 2)))
    assert got_dtype == dtype
    assert value == {"array_value": values, "array_shape": [2, 2]}
    assert [type(v) for v in value["array_value"]] == [type(v) for v in values]


def test_non_finite_values_are_strings() -> None:
    value, _ = tensor_value(tvm_tensor(np.array([np.nan, np.inf, -np.inf, 1.5], "float32")))
    assert value["array_value"] == ["nan", "inf", "-inf", 1.5]


def test_digests_identify_dtype_shape_and_values() -> None:
    base = np.arange(100, dtype="float32")

    def digest(array: np.ndarray[Any, Any]) -> str:
        value, _ = tensor_value(tvm_tensor(np.ascontiguousarray(array)))
        return str(value["digest"])

    assert digest(base) == digest(base.copy())  # equal tensors, distinct objects
    changed = base.copy()
    changed[57] += 1
    others = [changed, base.reshape(10, 10), base.reshape(4, 25), base.view("int32"),
              base.astype("float16"), np.zeros(100, "float32"), -np.zeros(100, "float32")]
    digests = [digest(base)] + [digest(a) for a in others]
    assert len(set(digests)) == len(digests)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8", "uint8", "int32", "int64", "bool"])
def test_a_tensor_read_in_place_gives_what_its_copy_gives(dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights are hashed and read through a view of the tensor's memory (DLPack) where TVM
    allows one; the value and digest are those of the copy ``numpy()`` makes."""
    rng = np.random.default_rng(7)
    arrays = [(rng.standard_normal(shape) * 50).astype(dtype) if dtype != "bool" else rng.random(shape) > 0.5
              for shape in [(), (3, 4), (64, 3, 7, 7)]]
    tvm_tensors = [tvm_tensor(a) for a in arrays]
    options: List[Any] = [{}, {"full_values": True}]
    in_place = [tensor_value(t, **o) for t in tvm_tensors for o in options]
    if dtype == "float32":
        assert tensors._shared_memory(tvm_tensors[-1]) is not None  # the in-place path is the one taken
    monkeypatch.setattr(tensors, "_shared_memory", lambda array: None)
    copied = [tensor_value(t, **o) for t in tvm_tensors for o in options]
    assert in_place == copied
