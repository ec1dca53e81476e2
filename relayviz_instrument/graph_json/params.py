"""TVM's ``.params`` files (what ``tvm.runtime.save_param_dict`` writes): reading their names
without TVM, reading their values with it, writing them deterministically without it, and
checking them against a graph the same way for every command."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
from numpy.typing import NDArray

from .._files import read_bytes
from ..errors import RelayVizExportError, RelayVizFormatError

__all__ = ["param_names", "read_params", "load_params", "save_params", "params_path", "check_params"]

#: An argument as a graph declares it: (shape, dtype, where), shape and dtype possibly unknown,
#: ``where`` how messages name it (``node 3``).
Declared = Tuple[Optional[List[Any]], Optional[str], str]

_PARAMS_MAGIC = 0xF7E58D4F05049CB7  # TVM's kTVMNDArrayListMagic, first in a .params file
_NDARRAY_MAGIC = 0xDD5E40F096B4A13F  # TVM's kTVMNDArrayMagic
_DL_CODES = {"i": 0, "u": 1, "f": 2, "b": 1}  # DLPack type codes; TVM stores bool as 1-bit uint


def param_names(data: bytes, *, source: str = "<params>") -> List[str]:
    """The names stored in a TVM parameter file (``tvm.runtime.save_param_dict``), in order.

    Only the header is read, so TVM is not needed. Raises :class:`RelayVizFormatError`
    when the data does not start like a parameter file.
    """
    try:
        magic, _reserved, count = struct.unpack_from("<QQQ", data, 0)
        if magic != _PARAMS_MAGIC:
            raise RelayVizFormatError("not a TVM parameter file (wrong magic number)", source=source,
                                      hint="write it with tvm.runtime.save_param_dict")
        offset, names = 24, []
        for _ in range(count):
            (size,) = struct.unpack_from("<Q", data, offset)
            raw = data[offset + 8:offset + 8 + size]
            if len(raw) != size:
                raise struct.error("truncated name")
            names.append(raw.decode("utf-8"))
            offset += 8 + size
    except (struct.error, UnicodeDecodeError) as exc:
        raise RelayVizFormatError(f"truncated or corrupt parameter file ({exc})", source=source,
                                  hint="write it with tvm.runtime.save_param_dict") from None
    return names



def read_params(data: bytes, *, source: str = "<params>") -> Dict[str, NDArray[Any]]:
    """Every array of a TVM parameter file, by name, read with NumPy (TVM is not needed).

    Raises :class:`RelayVizFormatError` naming ``source`` for a file that is not a complete
    parameter file, or holds a dtype NumPy has no type for (bfloat16, float8).
    """
    names = param_names(data, source=source)
    offset = 24 + sum(8 + len(name.encode("utf-8")) for name in names)
    out: Dict[str, NDArray[Any]] = {}
    try:
        (count,) = struct.unpack_from("<Q", data, offset)
        if count != len(names):
            raise RelayVizFormatError(f"lists {len(names)} names but {count} arrays", source=source,
                                      hint="write it with tvm.runtime.save_param_dict")
        offset += 8
        for name in names:
            magic, _reserved, _dev_type, _dev_id, ndim, code, bits, lanes = struct.unpack_from(
                "<QQiiiBBH", data, offset)
            if magic != _NDARRAY_MAGIC or not 0 <= ndim <= 64:
                raise struct.error(f"array {name!r} has a damaged header")
            offset += struct.calcsize("<QQiiiBBH")
            shape = struct.unpack_from(f"<{ndim}q", data, offset)
            offset += 8 * ndim
            (size,) = struct.unpack_from("<q", data, offset)
            offset += 8
            dtype = _NUMPY_DTYPES.get((code, bits, lanes))
            if dtype is None:
                raise RelayVizFormatError(
                    f"parameter {name!r} has DLPack type (code {code}, {bits} bits, {lanes} lanes), which "
                    "NumPy cannot hold", source=source, field=name)
            raw = data[offset:offset + size]
            if len(raw) != size or size != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
                raise struct.error(f"array {name!r} is truncated")
            out[name] = np.frombuffer(raw, dtype=dtype).reshape(shape)
            offset += size
    except struct.error as exc:
        raise RelayVizFormatError(f"truncated or corrupt parameter file ({exc})", source=source,
                                  hint="write it with tvm.runtime.save_param_dict") from None
    return out


def load_params(path: Union[str, "os.PathLike[str]"]) -> Dict[str, NDArray[Any]]:
    """:func:`read_params` of the file at ``path`` (errors name the file)."""
    return read_params(read_bytes(path), source=os.fspath(path))


_NUMPY_DTYPES: Dict[Tuple[int, int, int], "np.dtype[Any]"] = {
    (0, 8, 1): np.dtype("<i1"), (0, 16, 1): np.dtype("<i2"), (0, 32, 1): np.dtype("<i4"), (0, 64, 1): np.dtype("<i8"),
    (1, 1, 1): np.dtype("bool"), (1, 8, 1): np.dtype("<u1"), (1, 16, 1): np.dtype("<u2"),
    (1, 32, 1): np.dtype("<u4"), (1, 64, 1): np.dtype("<u8"),
    (2, 16, 1): np.dtype("<f2"), (2, 32, 1): np.dtype("<f4"), (2, 64, 1): np.dtype("<f8"),
}


def save_params(values: Mapping[str, Any]) -> bytes:
    """The bytes ``tvm.runtime.save_param_dict`` writes for ``values`` (name to array), names sorted.

    TVM's writer orders names as its hash map iterates, which changes from run to run for
    larger dictionaries; this writer gives the same bytes for the same parameters, and TVM's
    ``load_param_dict`` (and Netron) read them.
    """
    names = sorted(values)
    out = [struct.pack("<QQQ", _PARAMS_MAGIC, 0, len(names))]
    for name in names:
        raw = name.encode("utf-8")
        out.append(struct.pack("<Q", len(raw)) + raw)
    out.append(struct.pack("<Q", len(names)))
    for name in names:
        array = np.asarray(values[name])
        code = _DL_CODES.get(array.dtype.kind)
        if code is None:
            raise RelayVizExportError(f"parameter {name!r} has dtype {array.dtype}, which a .params "
                                      "file cannot hold")
        bits = 1 if array.dtype.kind == "b" else array.dtype.itemsize * 8
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
        out.append(struct.pack("<QQiiiBBH", _NDARRAY_MAGIC, 0, 1, 0, array.ndim, code, bits, 1))
        out.append(struct.pack(f"<{array.ndim}q", *array.shape))
        out.append(struct.pack("<q", len(data)) + data)
    return b"".join(out)


def params_path(json_path: Union[str, "os.PathLike[str]"]) -> Path:
    """Where Netron and ``relayviz inspect`` look for the parameters of ``FILE.json``: ``FILE.params``."""
    path = Path(json_path)
    return path.with_name(path.name[:-len(".json")] + ".params")


def check_params(declared: Mapping[str, Declared], values: Mapping[str, Any], *, source: str) -> None:
    """Check parameter arrays against the graph arguments they are for, as every command does.

    ``declared`` maps each argument of the graph to its ``(shape, dtype, where)``; ``values`` maps
    parameter names to arrays (anything with ``shape`` and ``dtype``). A name the graph does
    not have, or a shape or dtype that differs, raises :class:`RelayVizFormatError` naming
    ``source`` (the parameter file), the parameter, and what the graph expects.
    """
    hint = "pass the parameters of this model (the .params file written with its graph)"
    for name in sorted(values):
        if name not in declared:
            known = ", ".join(sorted(declared)[:8]) + (", ..." if len(declared) > 8 else "")
            raise RelayVizFormatError(f"parameter {name!r} is not an argument of the graph (its arguments: "
                                      f"{known or 'none'})", source=source, field=name, hint=hint)
        shape, dtype, where = declared[name]
        value = values[name]
        actual_shape, actual_dtype = [int(d) for d in value.shape], str(value.dtype)
        if shape is not None and actual_shape != list(shape):
            raise RelayVizFormatError(f"parameter {name!r} has shape {actual_shape} but the graph's {where} "
                                      f"has shape {list(shape)}", source=source, field=name, hint=hint)
        if dtype is not None and actual_dtype != dtype:
            raise RelayVizFormatError(f"parameter {name!r} has dtype {actual_dtype} but the graph's {where} "
                                      f"has dtype {dtype}", source=source, field=name, hint=hint)
