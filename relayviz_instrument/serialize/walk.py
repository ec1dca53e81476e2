"""The walk every serializer shares: IR objects to nodes, children first, without recursion.

A serializer says, for one IR object, which children must be written first and how to build
its node from their ids (an :class:`Expansion`); :class:`Walk` does the rest. The walk is
iterative (deep binding chains and long statement sequences do not hit Python's recursion
limit) and post-order, children in field order, so node ids are a topological order that
depends only on the IR: the same module gives the same document in every process. An object
reached twice (a sub-expression shared in the IR) is one node referenced twice.

:class:`DocumentWriter` holds the loops around the walk, the same for every dialect: a
module's functions by name, or one expression, into one document; then the serializer's
caches move on by one snapshot.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Hashable, List, NamedTuple, Optional, Protocol, Sequence, Tuple, TypeVar

from ..format import Document, new_document
from .cache import GenerationalCache
from .reflection import field, map_items, object_key

__all__ = ["Expansion", "Walk", "DocumentWriter"]

V = TypeVar("V")
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


class Walk:
    """The state of one document: its nodes and the id of every object already written.

    ``expand(obj, key)`` gives an object's :class:`Expansion` (``key``: its object_key), usually
    from a cache that outlives the walk.
    """

    def __init__(self, expand: Expand) -> None:
        self.expand = expand
        self.nodes: List[Dict[str, Any]] = []
        self.memo: Dict[int, int] = {}
        #: Module-level functions by object key -> their global name (set by ``DocumentWriter.module``).
        self.names: Dict[int, str] = {}
        self._shared: Dict[Hashable, int] = {}

    def add(self, node: Dict[str, Any]) -> int:
        """Append ``node`` to the document; return its id."""
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


class Rotating(Protocol):
    """Something that keeps what it read for two snapshots (a cache, an embedded serializer)."""

    def rotate(self) -> None:
        """Start a new snapshot."""
        ...


class DocumentWriter:
    """The loops of one dialect's serializer: a module or an expression walked into a document.

    ``ir`` names the dialect in the documents; ``expand`` is the serializer's expansion of one
    object (see :class:`Walk`), passed with each call: the writer belongs to the serializer
    and does not refer back to it. The caches the serializer makes with :meth:`cache` (and
    the serializers it embeds, :meth:`embed`) start a new snapshot after each document, so
    that each one holds what the last two snapshots used.
    """

    def __init__(self, ir: str) -> None:
        self.ir = ir
        self._rotating: List[Rotating] = []

    def cache(self) -> GenerationalCache[V]:
        """A new cache by object identity that lives for two snapshots of this writer."""
        cache: GenerationalCache[V] = GenerationalCache()
        self._rotating.append(cache)
        return cache

    def embed(self, other: Rotating) -> None:
        """Rotate ``other`` with this writer's caches (the TIR serializer inside Relax's)."""
        self._rotating.append(other)

    def rotate(self) -> None:
        """Start a new snapshot in every cache."""
        for cache in self._rotating:
            cache.rotate()

    def module(self, mod: Any, expand: Expand, **fields: Any) -> Document:
        """The document of every function of the ``IRModule`` ``mod``, sorted by name (the
        root's ``functions``), with the further root ``fields`` that are not ``None``."""
        walk = Walk(expand)
        functions: Dict[str, int] = {}
        for name, func in sorted((str(field(gvar, "name_hint")), func)
                                 for gvar, func in map_items(field(mod, "functions"))):
            walk.names[object_key(func)] = name
            functions[name] = walk.visit(func)
        self.rotate()
        return new_document(walk.nodes, ir=self.ir, functions=functions, **fields)

    def expr(self, obj: Any, expand: Expand) -> Document:
        """The document of one function, expression or statement; the root's ``root`` names its node."""
        walk = Walk(expand)
        root = walk.visit(obj)
        self.rotate()
        return new_document(walk.nodes, ir=self.ir, root=root)
