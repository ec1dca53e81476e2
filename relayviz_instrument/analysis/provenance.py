"""Where every node came from: the pass-by-pass pairings of a trace, chained. Pure: no rich.

The passes on the pipeline (:func:`~relayviz_instrument.analysis.pipeline.pipeline_events`) take the
input module to the last snapshot one **step** at a time; step ``i`` turns the snapshot at
*position* ``i`` into the one at ``i + 1``. A step is the innermost event that did the work:
FoldScaleAxis is three steps (its backward and forward rewrites and its FoldConstant), and a
pass that changes the module again after the passes nested in it (LowerTE after
LowerTensorExpr) adds a step of its own. Passes on temporary modules (``_tmp``) and the
InferType a function pass runs on a half-rewritten module are not steps; neither is a
Sequential, whose work its passes did. Where passes left out of the trace changed the module
between two events, that change is a step with no record.

Each step is diffed once (:class:`~relayviz_instrument.analysis.pass_diffs.PassDiffs`), and a node of
a snapshot is followed through the diffs: it *continues* the node it is paired with in the
previous snapshot, is *changed* or *rewired* by a step, or *created* by one, from the nodes
its hunk took away (a ``replaced`` or ``merged`` hunk's removed nodes; for a ``wrapped``
hunk, also the nodes the new function wraps), and *removed* by one. Following origins back
to position 0 gives the input module's nodes a node stems from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ..diff import GraphDiff, Hunk, NodeInfo, NodeMatch
from ..diff.changes import describe
from ..diff.model import FieldChange
from ..diff.graph import CanonicalGraph
from .loop_nest import launched_kernels, read_loop_nest
from .pass_diffs import PassDiffs
from ..errors import RelayVizError
from .pipeline import pipeline_events
from ..format import Document
from ..store import PassRecord, TraceLike

__all__ = ["Step", "NodeKey", "NodeEvent", "NodeHistory", "Provenance", "pipeline_steps", "provenance"]

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


def pipeline_steps(records: Sequence[PassRecord]) -> Tuple[List[Step], Dict[int, Tuple[int, int]]]:
    """The steps that take the pipeline's module from its first snapshot to its last.

    Returns the steps and, for every event on the pipeline, the positions of the snapshots it
    started from and ended with. Each event on the pipeline (:func:`pipeline_events`) hands
    the module to the events nested in it; when it ends with a module other than the one they
    left, the difference is a step of its own.
    """
    on = set(pipeline_events(records))
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


class _StepIndex:
    """One step's diff, indexed for following nodes through it."""

    __slots__ = ("diff", "back", "created", "removed", "matches", "matched_hunk")

    def __init__(self, diff: GraphDiff) -> None:
        self.diff = diff
        self.back = {b: a for a, b in diff.mapping.items()}
        self.created: Dict[int, int] = {}
        self.removed: Dict[int, int] = {}
        self.matched_hunk: Dict[int, int] = {}
        for i, hunk in enumerate(diff.hunks):
            for b in hunk.added:
                self.created.setdefault(b, i)
            for a in hunk.removed:
                self.removed.setdefault(a, i)
            for _, b in hunk.matched:
                self.matched_hunk.setdefault(b, i)
        self.matches: Dict[int, NodeMatch] = {m.after: m for m in (*diff.changed, *diff.rewired)}


class Provenance:
    """Every node's history across the pipeline of one trace; see :func:`provenance`.

    ``refs[p]`` is the snapshot at position ``p`` (0: the input module, ``last``: the last
    snapshot), ``steps[i]`` the step from position ``i`` to ``i + 1``. Diffs are computed when
    first needed, through ``cache``, and kept.
    """

    def __init__(self, trace: TraceLike, cache: Optional[PassDiffs] = None) -> None:
        self.trace = trace
        self.cache = cache if cache is not None else PassDiffs(trace, keep_documents=None)
        steps, spans = pipeline_steps(trace.records)
        self.steps: Tuple[Step, ...] = tuple(steps)
        if steps:
            refs = [steps[0].before] + [s.after for s in steps]
        else:  # nothing changed the module: its one snapshot, if the trace has it
            refs = [r.before for r in trace.records if r.index in spans and r.before is not None][:1]
        self.refs: Tuple[str, ...] = tuple(refs)
        self._spans = spans
        self._index: Dict[int, _StepIndex] = {}
        self._roots: Dict[Tuple[int, NodeKey], FrozenSet[int]] = {}
        self._descendants: Dict[int, Dict[int, List[int]]] = {}

    # -- snapshots ------------------------------------------------------------------------------

    @property
    def last(self) -> int:
        """The position of the last snapshot."""
        if not self.refs:
            raise RelayVizError(f"{self.trace.path}: the trace holds no snapshot of the pipeline's module; "
                                "trace a compilation of a Relay module")
        return len(self.refs) - 1

    def document(self, position: int) -> Document:
        """The RelayViz document at ``position``."""
        return self.cache.document(self.refs[position])

    def where(self, position: int) -> str:
        """Which snapshot ``position`` is, in words: the input module, or the one after a pass."""
        if position == 0:
            return "the input module"
        step = self.steps[position - 1]
        return f"after {step.name}" + (f" (#{step.index})" if step.index is not None else "")

    def span(self, record_index: int) -> Optional[Tuple[int, int]]:
        """The positions of the snapshots the event ``record_index`` started from and ended
        with, if it ran on the pipeline's module (else ``None``)."""
        return self._spans.get(record_index)

    def view(self, position: int) -> CanonicalGraph:
        """The snapshot at ``position`` as a graph (for descriptions)."""
        return self.cache.view(self.refs[position])

    def info(self, key: NodeKey) -> NodeInfo:
        """How node ``key`` is shown: operator or kind, detail, type."""
        position, node = key
        view = self.view(position)
        return describe(view, view.rank_of[node])

    def diff(self, step: int) -> GraphDiff:
        """The diff of step ``step``."""
        return self._step(step).diff

    def _step(self, step: int) -> _StepIndex:
        index = self._index.get(step)
        if index is None:
            s = self.steps[step]
            index = self._index[step] = _StepIndex(self.cache.pair_diff(s.before, s.after))
        return index

    def _check(self, key: NodeKey) -> None:
        position, node = key
        if not 0 <= position <= self.last:
            raise RelayVizError(f"{self.trace.path}: no snapshot at position {position} of the pipeline "
                                f"(positions 0 to {self.last})")
        size = len(self.document(position)["nodes"])
        if not (isinstance(node, int) and 0 <= node < size):
            raise RelayVizError(f"{self.trace.path}: snapshot {self.refs[position]} has no node {node!r} "
                                f"(node ids 0 to {size - 1})")

    # -- following nodes ------------------------------------------------------------------------

    def previous(self, key: NodeKey) -> Optional[NodeKey]:
        """The node ``key`` continues in the previous snapshot, if any."""
        position, node = key
        if position == 0:
            return None
        before = self._step(position - 1).back.get(node)
        return (position - 1, before) if before is not None else None

    def next(self, key: NodeKey) -> Optional[NodeKey]:
        """The node that continues ``key`` in the next snapshot, if any."""
        position, node = key
        if position >= self.last:
            return None
        after = self._step(position).diff.mapping.get(node)
        return (position + 1, after) if after is not None else None

    def origins(self, step: int, hunk: int, node: Optional[int] = None) -> Tuple[int, ...]:
        """The nodes (at position ``step``) that hunk ``hunk`` of step ``step`` took away, or made
        node ``node`` (at ``step + 1``) from: its removed nodes and its sources (for a function it
        wrapped, also the nodes the function now holds; for a kernel it lowered, the calls that
        name it); for one call of a function called from several places, what that call replaced."""
        h = self._step(step).diff.hunks[hunk]
        if node is not None and h.sites:
            for removed, added in h.sites:
                if node in added:
                    return removed
        if h.kind == "wrapped":
            return tuple(dict.fromkeys([*h.origins, *(a for a, _ in h.matched)]))
        return h.origins

    def history(self, key: NodeKey) -> NodeHistory:
        """The history of node ``key = (position, node id)``: see :class:`NodeHistory`.

        Raises :class:`RelayVizError` for a position or node id the trace does not have.
        """
        self._check(key)
        back: List[NodeKey] = [key]
        while True:
            prev = self.previous(back[-1])
            if prev is None:
                break
            back.append(prev)
        lineage = back[::-1]
        while True:
            nxt = self.next(lineage[-1])
            if nxt is None:
                break
            lineage.append(nxt)
        events: List[NodeEvent] = []
        first = lineage[0]
        if first[0] > 0:
            events.append(self._created(first))
        for k in lineage[1:]:
            index = self._step(k[0] - 1)
            match = index.matches.get(k[1])
            if match is not None:
                hunk = index.matched_hunk.get(k[1])
                events.append(NodeEvent(match.status, self.steps[k[0] - 1], k,
                                        index.diff.hunks[hunk] if hunk is not None else None, match.fields))
        end = lineage[-1]
        if end[0] < self.last:
            step = end[0]
            index = self._step(step)
            hunk = index.removed.get(end[1])
            h = index.diff.hunks[hunk] if hunk is not None else None
            events.append(NodeEvent("removed", self.steps[step], end, h,
                                    successors=tuple((step + 1, b) for b in (h.added if h else ()))))
        return NodeHistory(key, self.info(key), tuple(lineage), tuple(events), tuple(sorted(self.roots(key))))

    def _created(self, key: NodeKey) -> NodeEvent:
        position, node = key
        step = position - 1
        hunk = self._step(step).created.get(node)
        if hunk is None:  # an Op node: hunks leave them to the calls that use them
            return NodeEvent("created", self.steps[step], key)
        origins = tuple((step, a) for a in self.origins(step, hunk, node))
        host = self._split_from(key)
        if host is not None and host not in origins:
            origins += (host,)
        return NodeEvent("created", self.steps[step], key, self._step(step).diff.hunks[hunk], origins=origins)

    def _split_from(self, key: NodeKey) -> Optional[NodeKey]:
        """The host function (in the snapshot before) of a device kernel that ``tirx.SplitHostDevice``
        made (node ``key``): the function of the module that launches it, named after it
        (``@X`` of ``@X_kernel``). The diff sees a new PrimFunc; the kernel's statements are the
        host's, moved."""
        position, node = key
        after = self.document(position)
        found = after["nodes"][node]
        name = found.get("name")
        if found.get("node_kind") != "PrimFunc" or not isinstance(name, str):
            return None
        before = self.document(position - 1).get("functions") or {}
        if name in before:
            return None
        for host, index in before.items():
            if name.startswith(host + "_kernel"):
                nest = read_loop_nest(after, host)
                if nest is not None and name in launched_kernels(nest):
                    return (position - 1, index)
        return None

    def first(self, key: NodeKey, at: int = 0) -> NodeKey:
        """The node ``key`` in the first snapshot it is in (from position ``at`` on)."""
        while key[0] > at:
            prev = self.previous(key)
            if prev is None:
                return key
            key = prev
        return key

    def roots(self, key: NodeKey, at: int = 0) -> FrozenSet[int]:
        """The ids of the nodes of the snapshot at position ``at`` (by default the input module)
        that ``key`` stems from."""
        self._check(key)
        if key[0] < at:
            raise RelayVizError(f"{self.trace.path}: node {key[1]} at position {key[0]} comes before "
                                f"position {at}; it has no roots there")
        start = self.first(key, at)
        found = self._roots.get((at, start))
        if found is not None:
            return found
        # Iteratively, creation points first: origins lie at earlier positions, so a stack
        # ordered by position resolves every creation point after those it depends on.
        pending = [start]
        order: List[NodeKey] = []
        seen: Set[NodeKey] = {start}
        while pending:
            k = pending.pop()
            order.append(k)
            if k[0] == at:
                continue
            for origin in self._created(k).origins:
                o = self.first(origin, at)
                if o not in seen and (at, o) not in self._roots:
                    seen.add(o)
                    pending.append(o)
        for k in sorted(order):
            if k[0] == at:
                self._roots[(at, k)] = frozenset([k[1]])
                continue
            acc: Set[int] = set()
            for origin in self._created(k).origins:
                acc |= self._roots[(at, self.first(origin, at))]
            self._roots[(at, k)] = frozenset(acc)
        return self._roots[(at, start)]

    def descendants(self, key: NodeKey) -> Tuple[int, ...]:
        """The ids of the last snapshot's nodes that stem from node ``key`` (the nodes whose
        roots at its position hold it): what it became, down to the kernels that compute it.
        The node itself, when it reaches the last snapshot."""
        self._check(key)
        position, node = key
        if position == self.last:
            return (node,)
        found = self._descendants.get(position)
        if found is None:
            found = {}
            for i in range(len(self.document(self.last)["nodes"])):
                for r in self.roots((self.last, i), at=position):
                    found.setdefault(r, []).append(i)
            self._descendants[position] = found
        return tuple(found.get(node, ()))

    def named(self, name: str) -> Optional[int]:
        """The snapshot to look for a node named ``name`` in (names as :meth:`find` reads them):
        the last one if it has one, else the first that has one (a device kernel, which only the
        TIR modules before the executable hold: from there its history runs both ways), else None."""
        bare = name.lstrip("%@")
        order: List[int] = [self.last, *range(self.last)]
        for position in order:
            if any(n in (name, bare) for _, n in _node_names(self.document(position))):
                return position
        return None

    def calling(self, op: str) -> Optional[int]:
        """The snapshot to look for calls of the operator (or built kernel) ``op`` in: the last
        if it calls it, else the input module (its calls followed forward), else the latest
        snapshot that calls it; None when none does."""
        order: List[int] = [self.last, 0, *range(self.last - 1, 0, -1)]
        for position in order:
            view = self.view(position)
            if any(view.op_name(r) == op for r in range(view.size)):
                return position
        return None

    def position_at(self, at: str) -> int:
        """The position of the snapshot ``at`` names: ``input`` (the input module), an event's
        index (the snapshot after it), or a pass's name (the snapshot after its first event on
        the pipeline). Raises :class:`RelayVizError`, saying what there is, when none fits."""
        if at == "input":
            return 0
        records = [r for r in self.trace.records if self.span(r.index) is not None]
        if at.isdigit():
            record = next((r for r in records if r.index == int(at)), None)
        else:
            record = next((r for r in records if r.name == at), None)
        if record is None:
            changed = dict.fromkeys(s.name for s in self.steps if s.record is not None)
            raise RelayVizError(f"{self.trace.path}: no pass {at!r} ran on the pipeline's module; give "
                                f"'input', an event index or a pass, such as those that changed it: "
                                f"{_some(changed, limit=24)}")
        span = self.span(record.index)
        assert span is not None
        return span[1]

    # -- finding nodes ----------------------------------------------------------------------------

    def find(self, position: int, *, node: Optional[str] = None, op: Optional[str] = None) -> List[int]:
        """Ids of the nodes at ``position`` named ``node`` (an id, or a name: a variable's, a
        global function's, a built graph's node name) or calling the operator ``op``.

        Raises :class:`RelayVizError`, naming a few of the names there are, when none matches.
        """
        doc = self.document(position)
        nodes: Sequence[Mapping[str, Any]] = doc["nodes"]
        view = self.view(position)
        if op is not None:
            found = [view.doc_id[r] for r in range(view.size) if view.op_name(r) == op]
            if not found:
                ops = sorted({name for name in map(view.op_name, range(view.size)) if name is not None})
                raise RelayVizError(f"snapshot {self.refs[position]}: no call of operator {op!r}; "
                                    f"its operators: {_some(ops)}")
            return sorted(found)
        assert node is not None
        if node.isdigit():
            self._check((position, int(node)))
            return [int(node)]
        names = _node_names(doc)
        # A global function is named twice (by the module and by its own node): once each.
        found = sorted({i for i, name in names if name == node or name == node.lstrip("%@")})
        if not found:
            raise RelayVizError(f"snapshot {self.refs[position]}: no node named {node!r} (of {len(nodes)} "
                                f"nodes); give a node id, or one of: {_some(sorted({n for _, n in names}))}")
        return found


def _node_names(doc: Document) -> List[Tuple[int, str]]:
    """``(id, name)`` of the nodes that have a name: variables, globals, a built graph's calls,
    a VM executable's calls of kernels (by the kernel: each call of it), and the global
    functions under their names."""
    out = [(i, name) for name, i in (doc.get("functions") or {}).items()]
    for i, n in enumerate(doc["nodes"]):
        kind = n.get("node_kind")
        attrs = n.get("attrs")
        if kind in ("Var", "GlobalVar", "PrimFunc") and isinstance(n.get("name"), str):
            out.append((i, n["name"]))
        elif kind == "Call" and isinstance(n.get("graph"), dict) and isinstance(n["graph"].get("name"), str):
            out.append((i, n["graph"]["name"]))
        elif kind == "Call" and isinstance(attrs, dict) and isinstance(attrs.get("kernel"), str):
            out.append((i, attrs["kernel"]))
    return out


def _some(names: Iterable[str], limit: int = 8) -> str:
    names = list(names)
    text = ", ".join(names[:limit])
    return text + (f", … ({len(names) - limit} more)" if len(names) > limit else "") if names else "(none)"


def provenance(trace: TraceLike, cache: Optional[PassDiffs] = None) -> Provenance:
    """Chain the pass-by-pass pairings of ``trace`` into every node's history.

    The steps come from the events on the pipeline (temporary modules and Sequentials do not
    break the chain); each is diffed once, when first needed, through ``cache`` (give the
    report's, to share diffs with it). See :class:`Provenance` and :class:`NodeHistory`.
    """
    return Provenance(trace, cache)
