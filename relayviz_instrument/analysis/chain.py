"""The chain a pipeline's module goes through, and one node's events along it. Pure: no rich.

The passes on the pipeline (the events whose role is ``pipeline``, see ``reading.py``) take the
input module to the last snapshot one **step** at a time; step ``i`` turns the snapshot at
*position* ``i`` into the one at ``i + 1``. A step is the innermost event that did the work:
FoldScaleAxis is three steps (its backward and forward rewrites and its FoldConstant), and a
pass that changes the module again after the passes nested in it (LowerTE after
LowerTensorExpr) adds a step of its own. Passes on temporary modules (``_tmp``) and the
InferType a function pass runs on a half-rewritten module are not steps; neither is a
Sequential, whose work its passes did. Where passes left out of the trace changed the module
between two events, that change is a step with no record. A node of the chain is a
:data:`NodeKey`; what happened to it is its :class:`NodeHistory` (``provenance.py`` follows it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Dict, List, Optional, Sequence, Tuple

from ..diff import Hunk, NodeInfo
from ..diff.model import FieldChange
from ..store import PassRecord

__all__ = ["NodeKey", "UNTRACED", "Step", "NodeEvent", "NodeHistory", "pipeline_steps"]

#: A node of the chain: ``(position, node id)``, the id in the snapshot at that position.
NodeKey = Tuple[int, int]

#: What a step not recorded in the trace is called.
UNTRACED = "(passes left out of the trace)"


@dataclass(frozen=True)
class Step:
    """One change of the pipeline's module: snapshot ``before`` became ``after``.

    ``record`` is the event that made it (``None`` when passes left out of the trace did);
    ``after_nested`` is true when the event made it after the passes nested in it had run,
    so it is only part of what the event did.
    """

    position: int
    record: Optional[PassRecord]
    before: str
    after: str
    after_nested: bool = False

    @property
    def name(self) -> str:
        """The pass's name, or a note that no traced pass made the step."""
        return self.record.name if self.record is not None else UNTRACED

    @property
    def index(self) -> Optional[int]:
        """The index of the event that made the step."""
        return self.record.index if self.record is not None else None


@dataclass(frozen=True)
class NodeEvent:
    """Something a step did to a node.

    ``kind`` is ``created``, ``changed``, ``rewired`` or ``removed``. ``node`` is the node in
    the snapshot after the step (in the one before it, for ``removed``); ``hunk`` the hunk of
    the step's diff it belongs to. A created node's ``origins`` are the nodes its hunk took
    away (at position ``step``); a removed node's ``successors`` what its hunk put in their
    place (at ``step + 1``). ``fields`` lists what a ``changed`` event changed.
    """

    kind: str
    step: Step
    node: NodeKey
    hunk: Optional[Hunk] = None
    fields: Tuple[FieldChange, ...] = ()
    origins: Tuple[NodeKey, ...] = ()
    successors: Tuple[NodeKey, ...] = ()

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"kind": self.kind, "step": self.step.position, "pass": self.step.name,
                               "index": self.step.index, "node": list(self.node)}
        if self.hunk is not None:
            out["hunk"] = {"kind": self.hunk.kind, "label": self.hunk.label}
        if self.fields:
            out["fields"] = {c.field: [c.before, c.after] for c in self.fields}
        if self.origins:
            out["origins"] = [list(k) for k in self.origins]
        if self.successors:
            out["successors"] = [list(k) for k in self.successors]
        return out


@dataclass(frozen=True)
class NodeHistory:
    """The life of one node across the pipeline.

    ``lineage`` is the node in every snapshot it is in, oldest first (it holds ``node``).
    ``events`` are what the steps did to it, oldest first: ``created`` first unless it comes
    from the input module, then ``changed``/``rewired``, and ``removed`` last unless it
    reaches the last snapshot. ``roots`` are the ids of the input module's nodes it stems from
    (its own first node, if it is one of them).
    """

    node: NodeKey
    info: NodeInfo
    lineage: Tuple[NodeKey, ...]
    events: Tuple[NodeEvent, ...]
    roots: Tuple[int, ...]

    @property
    def created(self) -> Optional[NodeEvent]:
        """The step that created the node, or ``None`` if it is in the input module."""
        first = self.events[0] if self.events else None
        return first if first is not None and first.kind == "created" else None

    @property
    def removed(self) -> Optional[NodeEvent]:
        """The step that removed the node, or ``None`` if it reaches the last snapshot."""
        last = self.events[-1] if self.events else None
        return last if last is not None and last.kind == "removed" else None

    def to_json(self) -> Dict[str, Any]:
        """The history as JSON (``relayviz history --json``)."""
        info: Dict[str, Any] = {"kind": self.info.kind, "name": self.info.name}
        if self.info.detail:
            info["detail"] = self.info.detail
        if self.info.type:
            info["type"] = self.info.type
        return {"node": list(self.node), **info, "lineage": [list(k) for k in self.lineage],
                "events": [e.to_json() for e in self.events], "roots": list(self.roots)}


def pipeline_steps(records: Sequence[PassRecord], on: Collection[int]
                   ) -> Tuple[List[Step], Dict[int, Tuple[int, int]]]:
    """The steps that take the pipeline's module from its first snapshot to its last.

    ``on``: the indices of the events on the pipeline (``TraceReading.pipeline``). Returns the
    steps and, for every event on the pipeline, the positions of the snapshots it started from
    and ended with. Each event on the pipeline hands the module to the events nested in it;
    when it ends with a module other than the one they left, the difference is a step of its own.
    """
    steps: List[Step] = []
    spans: Dict[int, Tuple[int, int]] = {}
    current: Optional[str] = None
    open_events: List[Tuple[PassRecord, int, bool]] = []  # event, start position, nested changed

    def add(record: Optional[PassRecord], after: str, nested: bool) -> None:
        nonlocal current
        assert current is not None
        steps.append(Step(len(steps), record, current, after, nested))
        current = after
        for i, (event, start, _) in enumerate(open_events):
            open_events[i] = (event, start, True)

    def close(depth: int) -> None:
        while open_events and open_events[-1][0].depth >= depth:
            event, start, nested = open_events.pop()
            if event.after is not None and event.after != current:
                add(event, event.after, nested)
            spans[event.index] = (start, len(steps))

    for record in records:
        close(record.depth)
        if record.index not in on or record.before is None:
            continue
        if current is None:
            current = record.before
        elif record.before != current:
            add(None, record.before, False)
        open_events.append((record, len(steps), False))
    close(0)
    return steps, spans
