"""The walk every serializer shares: IR objects to nodes, children first, without recursion.

A serializer says, for one IR object, which children must be written first and how to build
its node from their ids (an :class:`Expansion`); :class:`Walk` does the rest. The walk is
iterative (deep binding chains and long statement sequences do not hit Python's recursion
limit) and post-order, children in field order, so node ids are a topological order that
depends only on the IR: the same module gives the same document in every process. An object
reached twice (a sub-expression shared in the IR) is one node referenced twice.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Hashable, List, NamedTuple, Optional, Sequence, Tuple

from .reflection import object_key

__all__ = ["Expansion", "leaf", "typed", "Walk"]


Expand = Callable[[Any, int], "Expansion"]


class Expansion(NamedTuple):
    """What a serializer read from one object: the children to write first, and a builder
    that makes the node from the children's ids (or returns the id of an equal node).

    ``expand``, when set, expands the children instead of the walk's own function: the
    objects below a TIR PrimFunc in a Relax module are TIR's (TVM 0.2x shares classes such as
    ``Var`` and ``Call`` between the dialects, so the class alone cannot tell)."""

    children: Sequence[Any]
    build: Callable[["Walk", List[int]], Any]
    expand: Optional[Expand] = None


def leaf(node: Dict[str, Any]) -> Expansion:
    """The expansion of an object with no children: a copy of ``node`` each time it is written."""
    return Expansion((), lambda walk, ids: dict(node))


def typed(node: Dict[str, Any], ty: Any) -> Dict[str, Any]:
    """``node`` with its ``type`` field, unless the type is unknown (``None``)."""
    if ty is not None:
        node["type"] = ty
    return node


class Walk:
    """The state of one document: its nodes and the id of every object already written.

    ``expand(obj, key)`` gives an object's :class:`Expansion` (``key``: its object_key), usually
    from a cache that outlives the walk.
    """

    def __init__(self, expand: Expand) -> None:
        self.expand = expand
        self.nodes: List[Dict[str, Any]] = []
        self.memo: Dict[int, int] = {}
        #: Module-level functions by object key -> their global name (set by ``module()``).
        self.names: Dict[int, str] = {}
        self._shared: Dict[Hashable, int] = {}

    def add(self, node: Dict[str, Any]) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def visit(self, root: Any) -> int:
        """Write ``root`` and everything it reaches, children first; return its node id."""
        memo = self.memo
        stack: List[Tuple[Any, int, Expand, Optional[Tuple[List[int], Expansion]]]] = [
            (root, object_key(root), self.expand, None)]
        while stack:
            obj, key, expand, pending = stack.pop()
            if key in memo:
                continue
            if pending is None:
                exp = expand(obj, key)
                keys = [object_key(c) for c in exp.children]
                stack.append((obj, key, expand, (keys, exp)))
                inner = exp.expand or expand
                for child, ckey in zip(reversed(exp.children), reversed(keys)):
                    if ckey not in memo:
                        stack.append((child, ckey, inner, None))
            else:
                keys, exp = pending
                built = exp.build(self, [memo[k] for k in keys])
                memo[key] = built if isinstance(built, int) else self.add(built)
        return memo[object_key(root)]

    def shared(self, key: Hashable, make: Callable[[], Dict[str, Any]]) -> int:
        """The id of the one node of this document stored under ``key``, made by ``make()`` the
        first time: nodes that stand for a name or a value rather than an object (an operator
        with its call attributes, a global, a TIR constant) are written once per document."""
        nid = self._shared.get(key)
        if nid is None:
            nid = self._shared[key] = self.add(make())
        return nid
