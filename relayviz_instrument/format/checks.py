"""Small checks shared by every reader of JSON input (RelayViz documents, graph JSON, manifests)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # typing.TypeGuard is Python 3.10+; mypy knows typing_extensions without it installed
    from typing_extensions import TypeGuard

__all__ = ["is_int", "json_type_name"]


#: The integers JSON files carry here: orjson reads and writes integers of 64 bits at most.
_INT_RANGE = (-(2 ** 63), 2 ** 64 - 1)


def is_int(value: Any) -> TypeGuard[int]:
    """True for a JSON integer (``bool`` is an ``int`` to Python, not to JSON) of 64 bits at
    most (an object built in Python may hold larger ones, which no file here can carry)."""
    return isinstance(value, int) and not isinstance(value, bool) and _INT_RANGE[0] <= value <= _INT_RANGE[1]


def json_type_name(value: Any) -> str:
    """How an error message names a JSON value it did not expect: ``null``, ``a boolean``,
    ``the number 3``, ``the string 'x'``, ``a list``, ``an object``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int) and not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
        return f"an integer of {value.bit_length()} bits (at most 64 fit)"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
