"""Tensor constants and scalars as JSON values: small tensors by value, larger ones by digest.

Weights are hashed in place where TVM lets NumPy view their memory (DLPack): a pass that makes
new constants (every one that rebinds the parameters) has them read again.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

import numpy as np

from ..format import SMALL_TENSOR_ELEMENTS, digest_parts

__all__ = ["scalar_json", "tensor_value"]


def scalar_json(value: Any) -> Any:
    """A Python or NumPy scalar as a JSON value; non-finite floats become "nan", "inf", "-inf"."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    value = float(value)
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "nan"
    return "inf" if value > 0 else "-inf"


def tensor_value(array: Any, *, full_values: bool = False,
                 small_elements: int = SMALL_TENSOR_ELEMENTS) -> Tuple[Any, str]:
    """A tensor's value field and dtype.

    A 0-d tensor gives a scalar; up to ``small_elements`` elements (or any size with
    ``full_values``) gives ``{"array_value", "array_shape"}``; larger tensors give
    ``{"array_shape", "digest"}``, the digest covering dtype, shape and bytes.
    """
    dtype = str(array.dtype)
    shape = [int(d) for d in array.shape]
    size = math.prod(shape)
    if shape == [] or size <= small_elements or full_values:
        data = _to_numpy(array)
        if shape == []:
            return scalar_json(data.reshape(()).item()), dtype
        flat = data.reshape(-1)
        if flat.dtype.kind == "f" and not np.isfinite(flat).all():
            values: List[Any] = [scalar_json(v) for v in flat.tolist()]
        else:
            values = flat.tolist()
        return {"array_value": values, "array_shape": shape}, dtype
    data = np.ascontiguousarray(_to_numpy(array))  # hashed in place: no copy of the weights
    header = f"{dtype}{shape}".encode()
    return {"array_shape": shape, "digest": digest_parts(header, data)}, dtype


def _to_numpy(array: Any) -> np.ndarray[Any, Any]:
    data = _shared_memory(array)
    if data is None:
        data = array.numpy() if hasattr(array, "numpy") else np.asarray(array)
    if data.dtype.kind not in "biuf":  # bfloat16, float8 and other ml_dtypes
        data = data.astype(np.float32)
    return data


def _shared_memory(array: Any) -> Optional[np.ndarray[Any, Any]]:
    """A NumPy view of a host tensor's own memory (DLPack), where ``numpy()`` would copy it:
    the weights of a ResNet-50 are read again after every pass that makes new ones. ``None``
    when the tensor cannot be viewed as the dtype it names (a device tensor, ``bool`` on TVM
    0.16, ``bfloat16``, ...): then it is copied."""
    try:
        view = np.from_dlpack(array)
    except Exception:  # no DLPack, another device, a dtype NumPy lacks: copy instead
        return None
    return view if view.dtype.name == str(array.dtype) else None
