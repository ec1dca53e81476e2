"""Where every node came from: the pass-by-pass pairings of a trace, chained. Pure: no rich.

The pipeline's module goes from the input module to the last snapshot one step at a time
(``chain.py``: :class:`~relayviz_instrument.analysis.chain.Step`, positions, node keys).

Each step is diffed once (:class:`~relayviz_instrument.analysis.pass_diffs.PassDiffs`), and a node of
a snapshot is followed through the diffs: it *continues* the node it is paired with in the
previous snapshot, is *changed* or *rewired* by a step, or *created* by one, from the nodes
its hunk took away (a ``replaced`` or ``merged`` hunk's removed nodes; for a ``wrapped``
hunk, also the nodes the new function wraps), and *removed* by one. Following origins back
to position 0 gives the input module's nodes a node stems from.
"""

from __future__ import annotations

from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ..diff import GraphDiff, NodeInfo, NodeMatch
from ..diff.changes import describe
from ..diff.graph import CanonicalGraph
from .chain import NodeEvent, NodeHistory, NodeKey, Step, pipeline_steps
from .loop_nest import launched_kernels, read_loop_nest
from .pass_diffs import PassDiffs
from .reading import TraceReading
from ..errors import RelayVizError
from ..format import Document
from ..store import TraceLike

__all__ = ["Provenance", "provenance"]

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
    first needed, through ``cache`` (the reading's diffs), and kept.
    """

    def __init__(self, trace: TraceLike, reading: Optional[TraceReading] = None) -> None:
        self.trace = trace
        if reading is None:
            reading = TraceReading(trace, diffs=PassDiffs(trace, keep_documents=None))
        self.cache = reading.diffs
        steps, spans = pipeline_steps(reading.records, reading.pipeline)
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

    def graph(self, position: int) -> CanonicalGraph:
        """The snapshot at ``position`` as a graph (for descriptions)."""
        return self.cache.graph(self.refs[position])

    def info(self, key: NodeKey) -> NodeInfo:
        """How node ``key`` is shown: operator or kind, detail, type."""
        position, node = key
        graph = self.graph(position)
        return describe(graph, graph.rank_of[node])

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
            graph = self.graph(position)
            if any(graph.op_name(r) == op for r in range(graph.size)):
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
        graph = self.graph(position)
        if op is not None:
            found = [graph.doc_id[r] for r in range(graph.size) if graph.op_name(r) == op]
            if not found:
                ops = sorted({name for name in map(graph.op_name, range(graph.size)) if name is not None})
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


def provenance(trace: TraceLike, reading: Optional[TraceReading] = None) -> Provenance:
    """Chain the pass-by-pass pairings of ``trace`` into every node's history.

    The steps come from the events on the pipeline (temporary modules and Sequentials do not
    break the chain); each is diffed once, when first needed, through the diffs of ``reading``
    (give the report's, to share them; one that keeps every document, as the HTML report's).
    See :class:`Provenance` and :class:`~relayviz_instrument.analysis.chain.NodeHistory`.
    """
    return Provenance(trace, reading)
