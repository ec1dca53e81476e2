"""TIR scalar expressions as short text: shape dimensions, indices, extents, conditions.

Symbolic shapes (Relay's ``Any``, Relax's ``n * 2``), TIR indices and loop extents are written
as text in documents, not as nodes: addressing changes with every scheduling step, and text
keeps the graph small. This module is that text's one writer.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Set, Tuple

from .cache import GenerationalCache
from .reflection import (FLOAT_IMM, INT_IMM, OBJECT, STRING_IMM, TIR_ANY, TIR_VAR, field, items, masked_text,
                         object_key, optional_field)

__all__ = ["prim_dtype", "dim_value", "prim_text", "leaf_text"]


def prim_dtype(expr: Any) -> str:
    """The dtype of a TIR expression or variable (``dtype`` before TVM 0.2x, the type's text after)."""
    cls = type(expr)
    if cls not in _TYPED_ONLY:
        dtype = optional_field(expr, "dtype")
        if dtype is not None:
            return str(dtype)
        if not hasattr(cls, "dtype") and hasattr(cls, "ty"):  # TVM 0.2x arithmetic: only a type; asked once
            _TYPED_ONLY.add(cls)  # (before 0.20 fields are not class attributes: never added)
    ty = getattr(expr, "ty", None)
    if ty is None:
        return ""
    key = object_key(ty)
    known = _TYPE_TEXTS.get(key)
    if known is None:
        if len(_TYPE_TEXTS) >= 1024:
            _TYPE_TEXTS.clear()
        known = _TYPE_TEXTS[key] = (ty, str(ty))  # holds the type: its address is not reused meanwhile
    return known[1]


#: Classes of TIR expressions without a ``dtype`` (TVM 0.2x): a failed lookup raises and catches
#: an AttributeError inside tvm-ffi, a few microseconds, for every arithmetic node of a snapshot.
_TYPED_ONLY: Set[type] = set()
#: The text of each type object by address (TVM interns ``PrimType``: a handful of them).
_TYPE_TEXTS: Dict[int, Tuple[Any, str]] = {}


def dim_value(dim: Any, texts: "Optional[GenerationalCache[str]]" = None) -> Any:
    """One dimension of a shape: an int, "?" for a dynamic (Any) dimension, else its name or
    its text (``n * 2``, see :func:`prim_text`, which uses and fills ``texts``)."""
    if isinstance(dim, int):
        return dim
    leaf = leaf_text(dim)
    if leaf is not None:
        return leaf
    if isinstance(dim, TIR_ANY):
        return "?"
    return prim_text(dim, texts)


#: TIR arithmetic printed infix by :func:`prim_text`, by class name (the same in every TVM),
#: with its precedence (higher binds tighter), as in Python.
_INFIX = {
    "Or": ("or", 1), "And": ("and", 2),
    "EQ": ("==", 3), "NE": ("!=", 3), "LT": ("<", 3), "LE": ("<=", 3), "GT": (">", 3), "GE": (">=", 3),
    "BitwiseOr": ("|", 4), "BitwiseXor": ("^", 5), "BitwiseAnd": ("&", 6), "LShift": ("<<", 7), "RShift": (">>", 7),
    "Add": ("+", 8), "Sub": ("-", 8), "Mul": ("*", 9), "Div": ("/", 9), "Mod": ("%", 9),
    "FloorDiv": ("//", 9), "FloorMod": ("%", 9),
}
_CALLED = {"Min": "min", "Max": "max"}
#: Operators whose right operand needs parentheses at equal precedence (a - (b - c)).
_LEFT_ONLY = frozenset({"Sub", "Div", "Mod", "FloorDiv", "FloorMod", "LShift", "RShift"})


class _Written(NamedTuple):
    """Marks the end of a sub-expression's text in :func:`prim_text`'s output."""

    key: int
    obj: Any
    start: int


#: What :func:`prim_text` does with an item of each class (see :func:`_kind_of`).
_TEXT, _WRITTEN, _INT, _FLOAT, _VAR, _INFIX_OP, _CALLED_OP, _NOT, _CAST, _RAMP, _BROADCAST, _SELECT, _LOAD, \
    _CALL, _STRING, _OTHER = range(16)
_BY_NAME = {"Not": _NOT, "Cast": _CAST, "Ramp": _RAMP, "Broadcast": _BROADCAST, "Select": _SELECT,
            "BufferLoad": _LOAD, "TensorLoad": _LOAD, "Call": _CALL}
#: The kind of each class met so far, and whether the text of its objects is remembered (TVM
#: objects that are not leaves): a dict lookup per item instead of a row of isinstance checks
#: against TVM's classes, about half a microsecond each, which were most of a TIR snapshot's time.
_KINDS: Dict[type, Tuple[int, bool]] = {str: (_TEXT, False), _Written: (_WRITTEN, False)}


def _kind_of(cls: type) -> Tuple[int, bool]:
    """How :func:`prim_text` writes objects of class ``cls``; found once per class."""
    name = cls.__name__
    if issubclass(cls, str):  # text (tvm-ffi's String among them)
        kind = _TEXT
    elif issubclass(cls, INT_IMM):
        kind = _INT
    elif issubclass(cls, FLOAT_IMM):
        kind = _FLOAT
    elif issubclass(cls, TIR_VAR) or name in ("Var", "SizeVar"):
        kind = _VAR
    elif name in _INFIX:
        kind = _INFIX_OP
    elif name in _CALLED:
        kind = _CALLED_OP
    elif name in _BY_NAME:
        kind = _BY_NAME[name]
    elif issubclass(cls, STRING_IMM):
        kind = _STRING
    else:
        kind = _OTHER
    found = _KINDS[cls] = (kind, kind not in _LEAVES and issubclass(cls, OBJECT))
    return found


#: Kinds whose text is read directly, never remembered: a constant's value or a variable's
#: name is one read from TVM, cheaper than looking its text up (and keeping it).
_LEAVES = frozenset({_INT, _FLOAT, _VAR, _STRING})


def prim_text(expr: Any, texts: "Optional[GenerationalCache[str]]" = None) -> str:
    """A TIR expression as short, stable text: ``n * 2``, ``i_0 * 8 + i_1``, ``min(n, 4)``.

    TVM's own printer is slow (it builds a whole TVMScript document) and spells constants as
    ``T.int64(2)``; shapes and indices need neither. Parentheses appear only where precedence
    needs them. Expressions it does not know are kept as TVM prints them, with addresses masked.

    ``texts`` remembers the text of every sub-expression by identity (the parentheses around
    an operand are its parent's, so a sub-expression reads the same wherever it appears): a
    pass that rewrites an index keeps most of its parts, and their text is not read again.
    """
    return _arith_text(expr, texts, 0)


#: How deep :func:`_arith_text` recurses before the rest of an expression is written by
#: :func:`_any_text`, which does not recurse: an index nests as deep as the loops around it.
_RECURSION = 64


def _arith_text(expr: Any, texts: "Optional[GenerationalCache[str]]", depth: int) -> str:
    """The text of ``expr`` (see :func:`prim_text`): arithmetic and its leaves, the bulk of
    indices and extents, by recursion (a call per sub-expression, quicker than the stack
    machine of :func:`_any_text`, which writes every other kind and expressions nested deep)."""
    cls = type(expr)
    kind = (_KINDS.get(cls) or _kind_of(cls))[0]
    if kind == _VAR:
        return _var_name(expr)
    if kind == _INT:
        return _int_text(expr)
    if (kind != _INFIX_OP and kind != _CALLED_OP) or depth > _RECURSION:
        return _any_text(expr, texts)
    if texts is not None:
        key = object_key(expr)
        known = texts.find(key)
        if known is not None:
            return known
    name = cls.__name__
    left, right = field(expr, "a"), field(expr, "b")
    a, b = _arith_text(left, texts, depth + 1), _arith_text(right, texts, depth + 1)
    if kind == _CALLED_OP:
        text = f"{_CALLED[name]}({a}, {b})"
    else:
        symbol, level = _INFIX[name]
        if _looser(left, level):
            a = f"({a})"
        if _looser(right, level + (name in _LEFT_ONLY)):
            b = f"({b})"
        text = f"{a} {symbol} {b}"
    if texts is not None:
        texts.store(key, expr, text)
    return text


def _looser(operand: Any, level: int) -> bool:
    """Whether ``operand`` binds looser than ``level`` (it needs parentheses there)."""
    infix = _INFIX.get(type(operand).__name__)
    return infix is not None and infix[1] < level


def _int_text(imm: Any) -> str:
    value = field(imm, "value")
    return str(bool(value)) if value in (0, 1) and prim_dtype(imm) == "bool" else str(int(value))


def _any_text(expr: Any, texts: "Optional[GenerationalCache[str]]" = None) -> str:
    """The text of any expression (see :func:`prim_text`), written without recursion."""
    out: List[str] = []
    stack: List[Any] = [expr]
    kinds = _KINDS
    while stack:
        item = stack.pop()
        cls = type(item)
        kind, is_object = kinds.get(cls) or _kind_of(cls)
        if kind == _TEXT:
            out.append(item)
            continue
        if kind == _WRITTEN:
            assert texts is not None
            texts.store(item.key, item.obj, "".join(out[item.start:]))
            continue
        if texts is not None and is_object:
            key = object_key(item)
            known = texts.find(key)
            if known is not None:
                out.append(known)
                continue
            stack.append(_Written(key, item, len(out)))  # below the item's own parts
        if kind == _INT:
            out.append(_int_text(item))
        elif kind == _VAR:
            out.append(_var_name(item))
        elif kind == _INFIX_OP:
            symbol, level = _INFIX[cls.__name__]
            right = _wrapped(field(item, "b"), level + (cls.__name__ in _LEFT_ONLY))
            stack.extend(right[::-1] + [f" {symbol} "] + _wrapped(field(item, "a"), level)[::-1])
        elif kind == _FLOAT:
            out.append(repr(float(field(item, "value"))))
        elif kind == _CALLED_OP:
            stack.extend([")", field(item, "b"), ", ", field(item, "a"), _CALLED[cls.__name__] + "("])
        elif kind == _NOT:
            stack.extend(_wrapped(field(item, "a"), 10)[::-1] + ["not "])
        elif kind == _CAST:
            stack.extend([")", field(item, "value"), f"{prim_dtype(item)}("])
        elif kind == _RAMP:
            stack.extend([")", str(item.lanes), ", ", item.stride, ", ", item.base, "ramp("])
        elif kind == _BROADCAST:
            stack.extend([")", str(item.lanes), ", ", item.value, "broadcast("])
        elif kind == _SELECT:
            stack.extend([")", item.false_value, ", ", item.true_value, ", ", item.condition, "select("])
        elif kind == _LOAD:
            buffer = optional_field(item, "buffer") or optional_field(item, "source")
            stack.extend(["]"] + _joined(items(field(item, "indices")))[::-1] + ["[", _buffer_name(buffer)])
        elif kind == _CALL and hasattr(item, "op") and type(item.op).__name__ == "Op":
            stack.extend([")"] + _joined(items(item.args))[::-1] + [str(item.op.name) + "("])
        elif kind == _STRING:
            out.append(repr(str(item.value)))
        else:
            out.append(masked_text(item))
    return "".join(out)


def leaf_text(expr: Any) -> Any:
    """The text of a TIR integer constant (its value, an int) or variable (its name), read
    directly, as :func:`dim_value` gives it; None for any other expression."""
    cls = type(expr)
    kind = (_KINDS.get(cls) or _kind_of(cls))[0]
    if kind == _INT:
        return int(field(expr, "value"))
    if kind == _VAR:
        return _var_name(expr)
    return None


def _var_name(var: Any) -> str:
    return str(optional_field(var, "name") or getattr(var, "name_hint", "?"))


def _wrapped(operand: Any, level: int) -> List[Any]:
    """An operand in order, in parentheses if it binds looser than ``level``."""
    return ["(", operand, ")"] if _looser(operand, level) else [operand]


def _joined(items: List[Any]) -> List[Any]:
    out: List[Any] = []
    for i, item in enumerate(items):
        if i:
            out.append(", ")
        out.append(item)
    return out


def _buffer_name(buffer: Any) -> str:
    name = optional_field(buffer, "name")
    if name is None:
        return prim_text(buffer) if buffer is not None else "?"
    return str(name)
