"""A hunk in the making, and the words hunk labels are made of.

The phases of :mod:`.hunks` (functions wrapped and unwrapped, kernels lowered, regions of
removed and added nodes) each make :class:`Draft` s in canonical ranks; :func:`.hunks.build_hunks`
turns them into :class:`~.model.Hunk` s with document ids.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

from .changes import function_role
from ..format.irs import PRIMFUNC_CALLS
from .graph import CanonicalGraph

__all__ = ["Draft", "names", "function_phrase", "kernel_of", "LABEL_NAMES"]

#: Distinct names a hunk label lists before it ends with "…".
LABEL_NAMES = 6


class Draft:
    """A hunk being built: ranks of the before graph (``removed``, ``changed``, ``moved``,
    ``border``, ``sources``) and of the after graph (``added``). ``function`` is the new (gone)
    function of a wrapped (unwrapped) hunk; ``label``, when set, is the hunk's label as its
    maker wrote it; ``sites`` the call sites of a function called from several places, each
    ``(removed, added)``: what each call replaced."""

    __slots__ = ("kind", "removed", "added", "changed", "moved", "border", "function", "label", "sources", "sites")

    def __init__(self, kind: str = "") -> None:
        self.kind = kind
        self.removed: List[int] = []  # before ranks
        self.added: List[int] = []  # after ranks
        self.changed: List[int] = []  # before ranks of changed pairs
        self.moved: List[int] = []  # before ranks of pairs a function wrapped
        self.border: List[int] = []  # before ranks of rewired pairs next to the hunk
        self.function: Optional[int] = None  # the new (gone) function of a wrapped (unwrapped) hunk
        self.label: Optional[str] = None
        self.sources: List[int] = []  # before ranks the added nodes were made from, besides removed
        self.sites: List[Tuple[List[int], List[int]]] = []


def kernel_of(graph: CanonicalGraph, r: int) -> Optional[str]:
    """The PrimFunc (or packed function) a Relax kernel call runs: ``call_tir(@conv2d3, ...)``
    -> ``conv2d3``; ``None`` for any other node."""
    if graph.op_name(r) not in PRIMFUNC_CALLS or len(graph.refs[r]) < 2:
        return None
    callee = graph.nodes[graph.refs[r][1]]
    name = callee.get("name") if callee.get("node_kind") == "GlobalVar" else callee.get("global_symbol")
    return name if isinstance(name, str) else None


def names(graph: CanonicalGraph, ranks: Iterable[int], calls_only: bool = False) -> str:
    """What a set of nodes holds, for a label: calls first, in data-flow order, by operator
    (``nn.conv2d+add×2+nn.relu``), then the other kinds; at most :data:`LABEL_NAMES` names."""
    counts: Dict[str, int] = {}
    kind, position = graph.kind, graph.position
    # Calls first, in order; then the other kinds (constants, variables, tuples...).
    calls = sorted((r for r in ranks if kind[r] == "Call"), key=position.__getitem__)
    others = [] if calls_only else sorted((r for r in ranks if kind[r] != "Call"), key=position.__getitem__)
    for r in calls + others:
        name = graph.op_name(r) or kind[r]  # as describe() names it, without its types
        counts[name] = counts.get(name, 0) + 1
    parts = [name if n == 1 else f"{name}×{n}" for name, n in counts.items()]
    if len(parts) > LABEL_NAMES:
        parts = parts[:LABEL_NAMES] + ["…"]
    return "+".join(parts)


def function_phrase(graph: CanonicalGraph, f: int) -> str:
    """How a label names a function: ``a primitive Function``, ``a Composite Function 'x'``..."""
    if graph.kind[f] == "PrimFunc":
        return "a PrimFunc"
    role, name = function_role(graph.nodes[f])
    if role == "Composite":
        return f"a Composite Function '{name}'"
    return "a primitive Function" if role == "Primitive" else "a Function"
