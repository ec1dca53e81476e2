"""How a TIR statement is described in a diff: what a reader of the kernel's code would want
from it, in the words of TVMScript.

A loop says its variable, range and kind (``For i in 0..56 parallel``), a store and a load
their buffer and index (``BufferStore T_add[i, j]``, ``BufferLoad A[i * 56 + j]``), an
allocation its buffer, shape and scope (``Allocate pad_temp float32[1, 3, 230, 230]
scope=shared``), a block its name and iteration variables; the node kind stays the name, so
that hunks group and label as before. :func:`statement_label` is the same text as the
drawings show it in a box (``for i in 0..56 parallel``, ``T_add[i, j] =``).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional

from .model import NodeInfo

__all__ = ["describe_statement", "statement_detail", "statement_label", "TIR_KINDS"]


def _index(buffer: Any, indices: Any) -> str:
    items = indices if isinstance(indices, list) else []
    return f"{buffer}[{', '.join(str(i) for i in items)}]"


def _end(lo: Any, extent: Any) -> Any:
    """Where a loop from ``lo`` over ``extent`` values stops (as the serializer writes ranges)."""
    if isinstance(lo, int) and isinstance(extent, int) and not isinstance(lo, bool):
        return lo + extent
    if lo == 0:
        return extent
    return f"{lo} + {extent}"


def _for(node: Mapping[str, Any]) -> str:
    lo = node.get("min", 0)
    text = f"{node.get('loop_var')} in {lo}..{_end(lo, node.get('extent'))}"
    kind = node.get("kind")
    if kind and kind != "serial":
        text += f" {kind}"
    if node.get("thread"):
        text += f" {node['thread']}"
    if node.get("step") not in (None, 1):
        text += f" step {node['step']}"
    return text


def _block(node: Mapping[str, Any]) -> str:
    names = []
    for iv in node.get("iter_vars") or ():
        if isinstance(iv, dict):
            kind = iv.get("kind")
            names.append(str(iv.get("name")) + (f": {kind}" if kind and kind != "spatial" else ""))
    return f"{node.get('name')}({', '.join(names)})" if names else str(node.get("name"))


def _realize(node: Mapping[str, Any]) -> str:
    values = node.get("iter_values") or []
    text = f"({', '.join(str(v) for v in values)})" if values else ""
    if node.get("predicate") is not None:
        text += f" if {node['predicate']}"
    return text.strip()


def _allocate(node: Mapping[str, Any]) -> str:
    shape = node.get("shape") or []
    text = f"{node.get('name')} {node.get('dtype')}[{', '.join(str(d) for d in shape)}]"
    if node.get("scope"):
        text += f" scope={node['scope']}"
    if node.get("declared"):
        text += " declared"
    return text


def _attr(node: Mapping[str, Any]) -> str:
    target = f" {node['node']}" if node.get("node") else ""
    return f"{node.get('attr_key')}{target} = {node.get('value')}"


_DETAILS: Dict[str, Callable[[Mapping[str, Any]], str]] = {
    "For": _for,
    "While": lambda n: str(n.get("condition")),
    "Block": _block,
    "BlockRealize": _realize,
    "BufferStore": lambda n: _index(n.get("buffer"), n.get("indices")),
    "BufferLoad": lambda n: _index(n.get("buffer"), n.get("indices")),
    "SeqStmt": lambda n: f"{len(n.get('seq') or ())} statements",
    "IfThenElse": lambda n: str(n.get("condition")),
    "LetStmt": lambda n: f"{n.get('var')} = {n.get('value')}",
    "AttrStmt": _attr,
    "AssertStmt": lambda n: str(n.get("condition")),
    "Allocate": _allocate,
}
#: The node kinds of TIR statements and buffer accesses that :func:`describe_statement` describes.
TIR_KINDS = frozenset(_DETAILS) | {"Evaluate"}

#: How a drawing's box reads each kind, from its detail: TVMScript's words where it has them.
_LABELS: Dict[str, Callable[[str], str]] = {
    "For": lambda d: f"for {d}",
    "While": lambda d: f"while {d}",
    "Block": lambda d: f"block {d}",
    "BlockRealize": lambda d: f"realize {d}" if d else "realize",
    "BufferStore": lambda d: f"{d} =",
    "BufferLoad": lambda d: d,
    "SeqStmt": lambda d: d,
    "IfThenElse": lambda d: f"if {d}",
    "LetStmt": lambda d: f"let {d}",
    "AttrStmt": lambda d: f"attr {d}",
    "AssertStmt": lambda d: f"assert {d}",
    "Allocate": lambda d: f"alloc {d}",
}


def statement_detail(kind: str, node: Mapping[str, Any]) -> Optional[str]:
    """What tells a TIR statement or buffer access apart (its loop, buffer and index,
    allocation...), or None for a node of another kind."""
    detail = _DETAILS.get(kind)
    if detail is None:
        return "" if kind == "Evaluate" else None
    try:
        return detail(node)
    except (TypeError, ValueError):  # a document from elsewhere, fields of other types
        return ""


def describe_statement(kind: str, node: Mapping[str, Any], type_text: str = "") -> Optional[NodeInfo]:
    """The :class:`NodeInfo` of a TIR statement or buffer access (None for any other kind):
    the kind as its name, :func:`statement_detail` as its detail."""
    detail = statement_detail(kind, node)
    if detail is None:
        return None
    return NodeInfo(kind, kind, detail, type_text)


def statement_label(kind: str, node: Mapping[str, Any], limit: Optional[int] = None) -> Optional[str]:
    """A TIR statement as a drawing's box says it (``for i in 0..56 parallel``, ``T_add[i, j]
    =``, ``alloc pad_temp float32[1, 3, 230, 230]``), cut to ``limit`` characters; None for a
    node of another kind."""
    detail = statement_detail(kind, node)
    if detail is None:
        return None
    say = _LABELS.get(kind)
    label = (say(detail) if say is not None else kind) or kind
    return label if limit is None or len(label) <= limit else label[: limit - 1] + "…"
