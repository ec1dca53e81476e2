"""Node attributes of graph JSON: the strings TVM writes, read as the JSON values they spell
and written back the same way (``"(1, 1)"`` <-> ``[1, 1]``)."""

from __future__ import annotations

import ast
import math
import re
from typing import Any

import orjson

__all__ = ["parse_attr_value", "format_attr_value"]

_INT = re.compile(r"[+-]?\d+\Z")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?\Z")


def parse_attr_value(text: Any) -> Any:
    """One node attribute as stored in graph JSON (a string) to the JSON value it spells.

    ``"1"`` gives 1, ``"0.5"`` 0.5, ``"True"``/``"False"`` booleans, ``"None"`` null,
    ``"(1, 1)"`` and ``"[3, 3]"`` lists; anything else (``"NCHW"``, ``""``) stays a string.
    Values that are not strings are returned unchanged.
    """
    if not isinstance(text, str):
        return text
    s = text.strip()
    if _INT.match(s) and len(s) <= 100:  # longer digit strings are identifiers, not numbers
        return int(s)
    if _FLOAT.match(s) and len(s) <= 100:
        value = float(s)
        return value if math.isfinite(value) else text
    if s in ("True", "true"):
        return True
    if s in ("False", "false"):
        return False
    if s == "None":
        return None
    if len(s) >= 2 and (s[0], s[-1]) in (("[", "]"), ("(", ")")) and len(s) <= 100_000:
        try:
            value = ast.literal_eval(s)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return text
        if isinstance(value, (list, tuple)) and _is_plain_literal(value):
            return _lists(value)
    return text


def format_attr_value(value: Any) -> str:
    """A JSON attribute value as the string graph JSON stores; inverse of :func:`parse_attr_value`."""
    if isinstance(value, str):
        return value
    return _literal(value)


def _is_plain_literal(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_is_plain_literal(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, (bool, int, str))


def _lists(value: Any) -> Any:
    return [_lists(v) for v in value] if isinstance(value, (list, tuple)) else value


def _literal(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(str(k))}: {_literal(v)}" for k, v in value.items()) + "}"
    return str(value)

