"""When a module needs a new snapshot, and when the previous one stands for it.

Most pass events change nothing (83 of the 99 Relay events of a ResNet ``relay.optimize``),
so the policy reuses a snapshot when the module holds what one of the last few it recorded
held (the same objects: see ``equality.ModuleContents``; not the same module object, which
passes and the code between them edit in place), or is structurally equal to the module the
latest was taken of
(``tvm.ir.structural_equal``, which ignores variable names, spans and inferred types: a pass
that only renames variables is recorded as unchanged). One exception: when the previous
snapshot lacks inferred types, an equal module is serialized again, so that a pass that fills
in types (InferType after a rewrite) shows them. It never calls ``structural_hash`` or
``save_json``: with bound parameters they hash or copy every weight (and on TVM 0.16 the hash
ignores the virtual devices PlanDevices sets, which ``structural_equal`` compares).

The policy is plain Python over module states (``equality.ModuleFacts``) and two callables,
so it is tested without a PassContext.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

from ..format import INFERRED_TYPE_KINDS, Document

__all__ = ["Snapshot", "SnapshotPolicy", "has_untyped"]


@dataclass
class Snapshot:
    """A module state as recorded: the state (``equality.ModuleFacts``: the module object and
    what it held, held), its snapshot reference and document."""

    state: Any
    ref: str
    doc: Document
    #: Some expressions had no inferred type: a structurally equal module may still add types.
    untyped: bool = False

    @property
    def mod(self) -> Any:
        """The module object the state was read from (it may hold something else by now)."""
        return self.state.mod

    @property
    def nodes(self) -> int:
        return len(self.doc["nodes"])


def has_untyped(doc: Document) -> bool:
    """Whether a document holds an expression type inference has not reached."""
    return any(n["node_kind"] in INFERRED_TYPE_KINDS and "type" not in n for n in doc["nodes"])


class SnapshotPolicy:
    """Chooses between reusing a recent snapshot and taking a new one.

    ``take(state)`` serializes and stores a module state (its module object holds it at that
    moment) and returns its :class:`Snapshot`; ``equal(a, b)`` compares two states structurally
    and returns ``None`` when it cannot (late in ``relay.build`` functions carry attributes with
    no structural equality). A state is the same as another when ``a.same(b)``: they hold the
    same objects, which nothing can change while they are held.
    """

    #: Module objects whose snapshots are kept for the identity check of :meth:`before`.
    RECENT = 4

    def __init__(self, take: Callable[[Any], Snapshot], equal: Callable[[Any, Any], Optional[bool]]) -> None:
        self._take = take
        self._equal = equal
        #: The snapshot of the module seen last (what the next pass most likely receives).
        self.last: Optional[Snapshot] = None
        #: The snapshots of the last few module objects recorded, newest last: a pass run again
        #: and again on one input (a test's loop, TVM's fixed-point iterations) finds it here.
        self._recent: List[Snapshot] = []

    def take(self, state: Any) -> Snapshot:
        """A new snapshot of ``state``; it becomes the latest."""
        snap = self._take(state)
        return self._latest(Snapshot(state, snap.ref, snap.doc, has_untyped(snap.doc)))

    def before(self, state: Any) -> Snapshot:
        """The snapshot of a pass's input: a recent one if ``state`` is its state, the latest
        if ``state`` is equal to it, else new."""
        last = self.last
        if last is not None and last.state.same(state):
            return last
        for recent in self._recent:
            if recent.state.same(state):
                self._recent.remove(recent)
                return self._latest(recent)
        if last is not None and not last.untyped and self._equal(last.state, state):
            return self._latest(Snapshot(state, last.ref, last.doc))
        return self.take(state)

    def after(self, before: Snapshot, state: Any) -> Tuple[Snapshot, bool]:
        """The snapshot of a pass's output and whether the pass changed the module. A pass that
        returns the module it was given, edited in place, returns another state: a change."""
        if before.state.same(state):
            return before, False
        last = self.last
        if last is not None and last is not before and last.state.same(state):
            # A Sequential's result is its last inner pass's result, already recorded. Snapshots
            # sharing one document were found equal one after another (a snapshot taken anew
            # has a document of its own): their modules are equal.
            changed = last.ref != before.ref or (last.doc is not before.doc
                                                 and self._equal(before.state, state) is not True)
            return last, changed
        if before.untyped:
            # An equal module is taken again anyway (it may add types): different snapshots
            # are a change whatever the comparison says, so the modules are compared only
            # when the snapshots are the same.
            after = self.take(state)
            return after, after.ref != before.ref or self._equal(before.state, state) is False
        equal = self._equal(before.state, state)
        if equal:
            return self._latest(Snapshot(state, before.ref, before.doc)), False
        after = self.take(state)
        # When TVM cannot compare the modules, the snapshots decide.
        return after, True if equal is False else after.ref != before.ref

    def forget(self) -> None:
        """Drop the IR objects held (when recording stops), so they can be freed."""
        self.last = None
        self._recent = []

    def _latest(self, snap: Snapshot) -> Snapshot:
        """``snap`` becomes the latest, and one of the recent."""
        self.last = snap
        recent = self._recent
        recent.append(snap)
        if len(recent) > self.RECENT:
            del recent[0]
        return snap
