"""The walk every serializer shares: IR objects to nodes, children first, without recursion.

A serializer says, for one IR object, which children must be written first and how to build
its node from their ids (an :class:`Expansion`); :class:`Walk` does the rest. The walk is
iterative (deep binding chains and long statement sequences do not hit Python's recursion
limit) and post-order, children in field order, so node ids are a topological order that
depends only on the IR: the same module gives the same document in every process. An object
reached twice (a sub-expression shared in the IR) is one node referenced twice.

A walk can replay the one before it (``Walk(expand, previous=...)``, for dialects whose IR
objects never change once made: Relax and TIR). Post-order makes the nodes an object's visit
created one run of ids, its *segment*. When the next snapshot reaches the same object again
(most of a module outlives a pass), its segment is copied over, renumbered, instead of walked:
exactly what walking it would write, which is checked first. The objects the segment refers to
from outside must have nodes in the new document already, and none of the objects and shared
nodes made inside it may have one yet (else a walk would refer to those, not make new ones).
Where either fails, the object is walked as usual and its parts may replay.

A pass that rebuilds a function or a block around the bindings it kept makes new parents of old
children: the children the last walk wrote one after another, in the same order, are a run of
segments, copied in one replay (each segment would move by the same offset), not one by one.

:class:`DocumentWriter` holds the loops around the walk, the same for every dialect: a
module's functions by name, or one expression, into one document; then the serializer's
caches move on by one snapshot.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Hashable, List, NamedTuple, Optional, Protocol, Sequence, Tuple, TypeVar

from ..format import Document, moved_run, new_document
from .cache import GenerationalCache
from .reflection import field, map_items, object_key

__all__ = ["Expansion", "Walk", "DocumentWriter", "Embedded"]

V = TypeVar("V")
Expand = Callable[[Any, int], "Expansion"]


class Expansion(NamedTuple):
    """What a serializer read from one object: the children to write first, and a builder
    that makes the node from the children's ids (or returns the id of an equal node).

    ``expand``, when set, expands the children instead of the walk's own function: the
    objects below a TIR PrimFunc in a Relax module are TIR's (TVM 0.2x shares classes such as
    ``Var`` and ``Call`` between the dialects, so the class alone cannot tell).

    ``data``, when set, is passed to ``build`` as a third argument: a builder shared by every
    node of a kind (a module-level function) with what it needs of this object, instead of a
    closure made for each one. Expansions are kept for two snapshots, and a closure is three
    more objects for Python's garbage collector to walk, tens of thousands in a TIR trace."""

    children: Sequence[Any]
    build: Callable[..., Any]
    expand: Optional[Expand] = None
    data: Any = None

    def make(self, walk: "Walk", ids: List[int]) -> Any:
        """The node, from the children's ids (or the id of an equal node ``walk`` has)."""
        return self.build(walk, ids) if self.data is None else self.build(walk, ids, self.data)


class Walk:
    """The state of one document: its nodes and the id of every object already written.

    ``expand(obj, key)`` gives an object's :class:`Expansion` (``key``: its object_key), usually
    from a cache that outlives the walk. ``previous``: the walk of the last document of the
    same IR, whose segments this one may replay (see the module docstring); ``replayed`` is
    told the identities of the objects copied so (the serializer keeps what it read of them).
    ``replayable``: note the segments, for the next walk to replay.
    """

    #: The fewest nodes a segment must hold to be replayed rather than walked again.
    REPLAY_FROM = 3
    #: From this many nodes, a replay tests and records the segment's identities with set
    #: operations (one call each, whatever the size); below, a loop costs less than making sets.
    MANY = 32

    def __init__(self, expand: Expand, previous: "Optional[Walk]" = None,
                 replayed: Optional[Callable[[List[Any]], None]] = None, *, replayable: bool = False) -> None:
        self.expand = expand
        self.nodes: List[Dict[str, Any]] = []
        #: The node of each identity written (see ``identities``): objects by object_key, and the
        #: nodes written once per document (``shared``) by ``(_SHARED, key)``. One map, so that a
        #: replay checks and records a segment's identities in one call each.
        self.memo: Dict[Any, int] = {}
        #: Module-level functions by object key -> their global name (set by ``DocumentWriter.module``).
        self.names: Dict[int, str] = {}
        #: What each node stands for: the object_key of the object it was written for, or
        #: ``(_SHARED, key)`` for a node written once per document under ``key``.
        self.identities: List[Any] = []
        #: The first node of the segment of each object written with children (it ends with the
        #: object's own node, ``memo[key]``). Plain ints: a trace keeps two walks' worth of them,
        #: and tuples holding objects would make Python's garbage collector walk them all.
        self.starts: Dict[int, int] = {}
        #: The roots visited: they hold every object the walk read, so that no other object
        #: takes the address (the key) of one while this walk may be replayed.
        self._roots: List[Any] = []
        self._previous = previous
        self._replayed = replayed
        self._replayable = replayable
        #: How many nodes were copied from the previous walk rather than walked.
        self.replayed = 0

    def add(self, node: Dict[str, Any], identity: Any = None) -> int:
        """Append ``node`` to the document; return its id. ``identity``: the object_key of the
        object it stands for (none: the node is never replayed)."""
        self.nodes.append(node)
        self.identities.append(identity)
        return len(self.nodes) - 1

    def visit(self, root: Any) -> int:
        """Write ``root`` and everything it reaches, children first; return its node id."""
        memo, nodes, starts = self.memo, self.nodes, self.starts
        previous = self._previous
        before: Dict[int, int] = previous.starts if previous is not None else {}
        replayable = self._replayable
        if replayable:
            self._roots.append(root)
        # (object, its key, its expander, None) to visit, (the same, (children's keys, expansion,
        # first node)) to build once its children are, or (_RUN, None, expander, (first, last,
        # children)) to replay a run of children (see _runs).
        stack: List[Tuple[Any, Any, Expand, Any]] = [(root, object_key(root), self.expand, None)]
        while stack:
            obj, key, expand, pending = stack.pop()
            if obj is _RUN:  # children the last walk wrote one after another: one replay
                first, last, members = pending
                if previous is None or self._replay(previous, first, last) is None:
                    stack.extend((child, ckey, expand, None) for child, ckey in reversed(members))
                continue
            if key in memo:
                continue
            if pending is None:
                start = before.get(key)
                if start is not None and previous is not None:
                    end = previous.memo[key]
                    if end - start + 1 >= self.REPLAY_FROM:
                        replayed = self._replay(previous, start, end)
                        if replayed is not None:
                            memo[key] = replayed
                            continue
                exp = expand(obj, key)
                children = exp.children
                if children:
                    keys = [object_key(c) for c in children]
                    stack.append((obj, key, expand, (keys, exp, len(nodes))))
                    inner = exp.expand or expand
                    if previous is not None and len(keys) > 1:
                        stack.extend(reversed(self._runs(previous, children, keys, inner)))
                        continue
                    for child, ckey in zip(reversed(children), reversed(keys)):
                        if ckey not in memo:
                            stack.append((child, ckey, inner, None))
                    continue
                keys, start = [], 0  # no children: built at once
            else:
                keys, exp, start = pending
            built = exp.make(self, [memo[k] for k in keys])
            if isinstance(built, int):
                memo[key] = built
            else:
                memo[key] = self.add(built, key)
                if keys and replayable:
                    starts[key] = start
        return memo[object_key(root)]

    def finish(self) -> None:
        """The document is written: let go of the walk it replayed. A walk is kept only for the
        next one to replay; still holding its own predecessor, it would chain every walk of a
        trace to the latest, with their nodes and the IR of every snapshot."""
        self._previous = None
        self._replayed = None

    def shared(self, key: Hashable, make: Callable[[], Dict[str, Any]]) -> int:
        """The id of the one node of this document stored under ``key``, made by ``make()`` the
        first time: nodes that stand for a name or a value rather than an object (an operator
        with its call attributes, a global, a TIR constant) are written once per document."""
        identity = (_SHARED, key)
        nid = self.memo.get(identity)
        if nid is None:
            nid = self.memo[identity] = self.add(make(), identity)
        return nid

    def _runs(self, previous: "Walk", children: Sequence[Any], keys: List[Any], expand: Expand) -> List[Any]:
        """The stack entries that visit ``children`` (whose object keys are ``keys``) in order:
        each child not written yet, except that children the last walk wrote one after another,
        in this order, are one entry (``_RUN``) replayed in one copy. A pass that rebuilds a
        function or a block around the bindings it kept leaves runs of them: what replaying them
        one by one writes (each segment moves by the same offset), without a replay per child.
        A run that cannot be copied is visited child by child (see ``visit``)."""
        memo, ends, starts, identities = self.memo, previous.memo, previous.starts, previous.identities
        entries: List[Any] = []
        run: List[Tuple[Any, Any]] = []
        first = last = -1
        seen = set()

        def flush() -> None:
            if len(run) > 1 and last - first + 1 >= self.REPLAY_FROM:
                entries.append((_RUN, None, expand, (first, last, list(run))))
            else:
                entries.extend((child, ckey, expand, None) for child, ckey in run)
            run.clear()

        for child, key in zip(children, keys):
            if key in memo or key in seen:
                continue
            seen.add(key)
            end = ends.get(key)
            if end is None or identities[end] != key:  # new, or written as a node it shares
                if run:
                    flush()
                entries.append((child, key, expand, None))
                continue
            start = starts.get(key, end)
            if run and start != last + 1:
                flush()
            if not run:
                first = start
            run.append((child, key))
            last = end
        if run:
            flush()
        return entries

    def _replay(self, previous: "Walk", start: int, root: int) -> Optional[int]:
        """Copy the segment ``start``..``root`` of ``previous`` into this document, renumbered,
        if that is exactly what walking its object here would write (see the module docstring);
        its root's new id, or None (nothing is written). The segment may also be a run of
        siblings' segments (see ``_runs``), ``root`` the last one's root.

        A segment holds a few nodes (a binding) or a whole function: the tests over its
        identities are a loop over a small one, set operations (one call each) over a large one."""
        end = root + 1
        memo, names, previous_names = self.memo, self.names, previous.names
        identities = previous.identities
        inside = identities[start:end]
        if end - start < self.MANY:
            for identity in inside:
                if identity in memo or names.get(identity) != previous_names.get(identity):
                    return None  # written already here; or a function its module now names otherwise
        else:  # the same tests, each one call over the segment
            if not memo.keys().isdisjoint(inside):
                return None
            for identity in (previous_names.keys() & inside) | (names.keys() & inside):
                if names.get(identity) != previous_names.get(identity):
                    return None
        offset = len(self.nodes) - start
        outside: Dict[int, int] = {}

        def move(ref: int) -> int:  # a reference to a node before the segment
            found = outside.get(ref)
            if found is None:
                found = memo.get(identities[ref])
                if found is None:
                    raise _NotHere
                outside[ref] = found
            return found

        try:
            copied = moved_run(previous.nodes[start:end], start, offset, move)
        except _NotHere:
            return None
        self.nodes.extend(copied)
        self.identities.extend(inside)
        self.replayed += len(copied)
        if self._replayed is not None:
            self._replayed(inside)
        first = start + offset
        memo.update(zip(inside, range(first, first + len(inside))))
        memo.pop(None, None)  # nodes that stand for nothing (added without an identity)
        starts, before = self.starts, previous.starts
        for identity in (inside if end - start < self.MANY else before.keys() & inside):
            inner = before.get(identity)
            if inner is not None:  # replayable again from here, next time
                starts[identity] = inner + offset
        return root + offset


#: Marks the identity of a shared node (see ``Walk.identities``).
_SHARED = object()
#: Marks a stack entry that replays a run of children (see ``Walk._runs``).
_RUN = object()


class _NotHere(Exception):
    """A segment refers to a node this document does not have (yet)."""


class Rotating(Protocol):
    """Something that keeps what it read for two snapshots (a cache, an embedded serializer)."""

    def rotate(self) -> None:
        """Start a new snapshot."""
        ...


class Embedded(Rotating, Protocol):
    """A serializer embedded in another's walk (TIR inside Relax)."""

    def keep(self, keys: List[Any]) -> None:
        """Keep what its caches by node hold of ``keys`` (see :meth:`DocumentWriter.keep`)."""
        ...


class DocumentWriter:
    """The loops of one dialect's serializer: a module or an expression walked into a document.

    ``ir`` names the dialect in the documents; ``expand`` is the serializer's expansion of one
    object (see :class:`Walk`), passed with each call: the writer belongs to the serializer
    and does not refer back to it. The caches the serializer makes with :meth:`cache` (and
    the serializers it embeds, :meth:`embed`) start a new snapshot after each document, so
    that each one holds what the last two snapshots used. With ``replay``, each walk may copy
    what the one before it wrote for the same objects, and holds that walk until the next one.
    """

    def __init__(self, ir: str, *, replay: bool = False) -> None:
        self.ir = ir
        self._rotating: List[Rotating] = []
        #: Whether a walk replays the last one (see :class:`Walk`): only for IR whose objects
        #: never change once made (Relax, TIR); Relay's type inference fills in types in place.
        self.replay = replay
        self._last: Optional[Walk] = None
        self._by_node: List[Any] = []

    def cache(self, *, by_node: bool = False) -> GenerationalCache[V]:
        """A new cache by object identity that lives for two snapshots of this writer.
        ``by_node``: it is keyed by the objects that nodes stand for (the expansions), and what
        a walk replays is kept in it as if it had been read again."""
        cache: GenerationalCache[V] = GenerationalCache()
        self._rotating.append(cache)
        if by_node:
            self._by_node.append(cache)
        return cache

    def keep(self, keys: List[Any]) -> None:
        """Keep the entries of ``keys`` in the caches by node (and the embedded writers')."""
        for cache in self._by_node:
            cache.keep(keys)

    def embed(self, other: "Embedded") -> None:
        """Rotate ``other`` with this writer's caches (the TIR serializer inside Relax's), and
        keep what its caches by node hold of the objects a walk replays."""
        self._rotating.append(other)
        self._by_node.append(other)

    def rotate(self) -> None:
        """Start a new snapshot in every cache."""
        for cache in self._rotating:
            cache.rotate()

    def module(self, mod: Any, expand: Expand, **fields: Any) -> Document:
        """The document of every function of the ``IRModule`` ``mod``, sorted by name (the
        root's ``functions``), with the further root ``fields`` that are not ``None``."""
        walk = self._walk(expand)
        functions: Dict[str, int] = {}
        for name, func in sorted((str(field(gvar, "name_hint")), func)
                                 for gvar, func in map_items(field(mod, "functions"))):
            walk.names[object_key(func)] = name
            functions[name] = walk.visit(func)
        self._done(walk)
        return new_document(walk.nodes, ir=self.ir, functions=functions, **fields)

    def expr(self, obj: Any, expand: Expand) -> Document:
        """The document of one function, expression or statement; the root's ``root`` names its node."""
        walk = self._walk(expand)
        root = walk.visit(obj)
        self._done(walk)
        return new_document(walk.nodes, ir=self.ir, root=root)

    @property
    def last_replayed(self) -> int:
        """How many nodes of the last document were copied from the one before (see :class:`Walk`)."""
        return self._last.replayed if self._last is not None else 0

    def _walk(self, expand: Expand) -> Walk:
        return Walk(expand, self._last, self.keep if self._by_node else None, replayable=self.replay)

    def _done(self, walk: Walk) -> None:
        """After a document: the caches move on; the walk is kept to be replayed."""
        walk.finish()
        self.rotate()
        self._last = walk if self.replay else None
