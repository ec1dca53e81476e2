"""Serializers: IR objects of each dialect to RelayViz documents (one module per dialect).

Serializers never write files; :mod:`relayviz_instrument.store` does.
"""

from __future__ import annotations

from typing import Any, Dict

from ..errors import RelayVizSerializeError
from ..format import SMALL_TENSOR_ELEMENTS, encode

__all__ = ["to_relayviz", "dumps"]


def to_relayviz(obj: Any, *, full_values: bool = False,
                small_elements: int = SMALL_TENSOR_ELEMENTS) -> Dict[str, Any]:
    """Serialize a Relay ``IRModule``, function or expression to a RelayViz document (a dict).

    Tensor constants with more than ``small_elements`` elements carry a content digest
    instead of their values unless ``full_values`` is true. The result is deterministic:
    the same module gives an equal document in every process.
    """
    from .relay import RelaySerializer  # imports tvm: only when asked for

    serializer = RelaySerializer(full_values=full_values, small_elements=small_elements)
    import tvm

    if isinstance(obj, tvm.IRModule):
        return serializer.module(obj)
    if isinstance(obj, (tvm.ir.RelayExpr, tvm.ir.BaseFunc)):
        return serializer.expr(obj)
    raise RelayVizSerializeError(
        f"cannot serialize a {type(obj).__name__}: pass an IRModule, a relay.Function or a relay.Expr")


def dumps(obj: Any, *, indent: bool = False, full_values: bool = False) -> bytes:
    """Serialize ``obj`` (an IR object, or a document already made) to RelayViz JSON bytes."""
    doc = obj if isinstance(obj, dict) else to_relayviz(obj, full_values=full_values)
    return encode(doc, indent=indent)
