"""Two compilations aligned pass by pass: :func:`align` pairs the pass events of two traces and
says where their modules first part ways. Pure: no rich, no files written.

Events are paired by sequence alignment (:class:`difflib.SequenceMatcher`) over their keys, the
pass name and the names of the events enclosing it, so a pass one pipeline ran and the other
did not becomes an insertion or a deletion instead of shifting every later pair. Work on
scratch modules (the InferType runs SimplifyExpr and FoldConstant make on a ``_tmp`` module,
whose number depends on the model) is left out, as :mod:`relayviz_instrument.analysis.pipeline`
defines it; the InferType a pass runs on its own result stays, nested under that pass.

Each pair's outputs are compared by content digest first (snapshot references are digests,
the same in every trace) and by a node-level :func:`~relayviz_instrument.diff.diff` when the
digests differ. A pass only one side ran is compared with the module the other side held at
that point, so disabling a pass that changed the module shows what it did. Nothing here is
specific to a dialect: Relay, Relax and built graphs align alike.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..diff import GraphDiff, diff
from .pipeline import FINISHING, SCRATCH
from .reading import TraceReading
from ..store import PassRecord, TraceLike

__all__ = ["align", "Alignment", "AlignedPass", "SAME", "DIFFERENT", "ONLY_A", "ONLY_B"]

SAME, DIFFERENT, ONLY_A, ONLY_B = "same", "different", "only A", "only B"


@dataclass(frozen=True)
class AlignedPass:
    """One row of an alignment: the event of A and the event of B paired (either may be
    ``None``: ``status`` is then ``only A`` or ``only B``), and the modules each side held
    after it (``output_a``/``output_b``, snapshot references; for the side that did not run
    the pass, the module it held at that point). When those modules differ, ``diff`` holds
    what B's has that A's has not (``None`` when either module was not recorded), and
    ``diverges`` says whether this is where the two part ways (see :func:`align`) rather than
    a difference carried from an earlier pass."""

    a: Optional[PassRecord]
    b: Optional[PassRecord]
    status: str
    output_a: Optional[str]
    output_b: Optional[str]
    diverges: bool = False
    diff: Optional[GraphDiff] = None
    #: Whether each side's event worked on a temporary module: a pass that had nothing to fold
    #: type-checks the pipeline's own module, one that had something a ``_tmp`` one.
    scratch: Tuple[bool, bool] = (False, False)

    @property
    def record(self) -> PassRecord:
        """The event of A, or of B when A did not run the pass."""
        record = self.a if self.a is not None else self.b
        assert record is not None  # every pair has at least one side
        return record

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def depth(self) -> int:
        return self.record.depth

    def describe(self, a: str = "A", b: str = "B") -> str:
        """``FoldConstant (#19 in A, #17 in B)``, or ``FoldConstant (#19 in A) ran only in A``,
        with the sides called ``a`` and ``b``."""
        where = ", ".join(f"#{r.index} in {label}" for label, r in ((a, self.a), (b, self.b)) if r is not None)
        text = f"{self.name} ({where})"
        if self.status == ONLY_A:
            text += f" ran only in {a}"
        elif self.status == ONLY_B:
            text += f" ran only in {b}"
        return text

    def to_json(self) -> Dict[str, Any]:
        """The pair for scripts (``relayviz diff TRACE_A TRACE_B --json``)."""
        def side(r: Optional[PassRecord], scratch: bool) -> Optional[Dict[str, Any]]:
            return None if r is None else {"index": r.index, "changed": r.changed, "duration_ms": r.duration_ms,
                                           "scratch": scratch}

        return {"name": self.name, "depth": self.depth, "status": self.status, "diverges": self.diverges,
                "a": side(self.a, self.scratch[0]), "b": side(self.b, self.scratch[1]),
                "output_a": self.output_a, "output_b": self.output_b,
                "summary": None if self.diff is None else self.diff.summary}


@dataclass
class Alignment:
    """The pass events of two traces paired in order; see :func:`align`."""

    pairs: List[AlignedPass]
    trace_a: Optional[TraceLike] = field(repr=False, default=None)
    trace_b: Optional[TraceLike] = field(repr=False, default=None)

    @property
    def differences(self) -> List[AlignedPass]:
        """Pairs that are not the same: one side only, or outputs that differ."""
        return [p for p in self.pairs if p.status != SAME]

    @property
    def divergences(self) -> List[AlignedPass]:
        """Pairs after which the two sides hold different modules."""
        return [p for p in self.pairs if p.diverges]

    @property
    def first_divergence_index(self) -> Optional[int]:
        """The position in ``pairs`` of the first pair whose outputs differ, if any."""
        return next((i for i, p in enumerate(self.pairs) if p.diverges), None)

    @property
    def first_divergence(self) -> Optional[AlignedPass]:
        """The first pair whose outputs differ, if any."""
        i = self.first_divergence_index
        return None if i is None else self.pairs[i]

    @property
    def same(self) -> bool:
        """Both ran the same passes, in the same order and nesting, with the same outputs."""
        return not self.differences


def align(trace_a: TraceLike, trace_b: TraceLike) -> Alignment:
    """Pair the pass events of two traces and compare what each pair left.

    Either trace is anything with ``records`` and ``snapshot(ref)``: a live
    :class:`~relayviz_instrument.RelayVizTrace`, a :class:`~relayviz_instrument.store.Trace`
    read with ``load_trace``, or a stored regression snapshot. Pairs come in order; a pass
    only one pipeline ran is an ``only A`` / ``only B`` pair, placed where it ran.

    A pair *diverges* where the two compilations part ways: its outputs differ, and either
    its inputs were the same or the two sides did different things (one changed its module
    and the other did not, or their changes differ). A pass that does the same on two modules
    that already differ does not diverge; a pass with nested passes diverges only when none of
    them does (its difference is then its own work), and the InferType a pass runs on its
    own result never does (its work is that pass's).
    """
    sides = (_Side(trace_a), _Side(trace_b))
    diffs: Dict[Tuple[str, str], Optional[GraphDiff]] = {}

    def compare(ref_a: Optional[str], ref_b: Optional[str]) -> Tuple[bool, Optional[GraphDiff]]:
        """(differ, diff) of two modules: digests first, a node-level diff when they differ."""
        if ref_a == ref_b:
            return False, None
        if ref_a is None or ref_b is None:
            return True, None
        if (ref_a, ref_b) not in diffs:
            found = diff(sides[0].docs.indexed(ref_a), sides[1].docs.indexed(ref_b))
            diffs[(ref_a, ref_b)] = None if found.is_empty else found
        result = diffs[(ref_a, ref_b)]
        return result is not None, result

    rows: List[Tuple[AlignedPass, bool]] = []  # each pair, and whether it diverges on its own

    def pair_up(records: Tuple[Optional[PassRecord], Optional[PassRecord]], status: str) -> None:
        scratch = (records[0] is not None and sides[0].scratch(records[0]),
                   records[1] is not None and sides[1].scratch(records[1]))
        if all(r is None or s for r, s in zip(records, scratch)):
            return  # only work on a temporary module: how much of it there is depends on the model
        depth = next(r for r in records if r is not None).depth
        inputs, outputs, acted = [], [], []
        for side, record, temporary in zip(sides, records, scratch):
            if record is None or temporary:  # this side's pipeline module is what it was
                held = side.module_at(depth)
                inputs.append(held)
                outputs.append(held)
                continue
            side.enter(record)
            inputs.append(record.before)
            outputs.append(record.after)
            acted.append(record)
        differ, found = compare(outputs[0], outputs[1])
        if status == SAME:
            status = DIFFERENT if differ else SAME
        pair = AlignedPass(records[0], records[1], status, outputs[0], outputs[1], False, found, scratch)
        finishing = all(sides[i].finishing(r) for i, r in enumerate(records) if r is not None and not scratch[i])
        rows.append((pair, differ and not finishing and (inputs[0] == inputs[1] or _acts_otherwise(sides, acted))))

    matcher = difflib.SequenceMatcher(None, sides[0].keys, sides[1].keys, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for ra, rb in zip(sides[0].events[i1:i2], sides[1].events[j1:j2]):
                pair_up((ra, rb), SAME)
            continue
        for ra in sides[0].events[i1:i2]:
            pair_up((ra, None), ONLY_A)
        for rb in sides[1].events[j1:j2]:
            pair_up((None, rb), ONLY_B)
    return Alignment(_containers_settled(rows), trace_a, trace_b)


def _acts_otherwise(sides: Tuple["_Side", "_Side"], acted: List[PassRecord]) -> bool:
    """Whether the events of a pair did different things: the one event of a side that ran
    the pass alone changed its module; or of two events, one changed its module and the other
    did not, or the summaries of their own diffs differ."""
    if len(acted) == 1:
        only = acted[0]
        return bool(only.changed if only.changed is not None else only.before != only.after)
    mine, theirs = acted
    if bool(mine.changed) != bool(theirs.changed):
        return True
    if sides[0].finishing(mine) or sides[1].finishing(theirs):  # its work is its parent's
        return False
    return bool(mine.changed) and sides[0].docs.summary(mine) != sides[1].docs.summary(theirs)


def _containers_settled(rows: List[Tuple[AlignedPass, bool]]) -> List[AlignedPass]:
    """The pairs, each marked diverging if it diverges on its own and no pair nested in it does:
    a Sequential's output differs whenever one of its passes diverges, and that pass is the news."""
    out = []
    for i, (pair, own) in enumerate(rows):
        if own:
            for nested, nested_own in rows[i + 1:]:
                if nested.depth <= pair.depth:
                    break
                if nested_own:
                    own = False
                    break
        out.append(dataclasses.replace(pair, diverges=own) if own else pair)
    return out


class _Side:
    """One trace as the alignment walks it: its events, their keys, and the module it holds."""

    def __init__(self, trace: TraceLike) -> None:
        reading = TraceReading(trace)
        self.roles = reading.roles
        self.events = reading.records
        self.keys = [_key(r, reading.by_index) for r in self.events]
        self.docs = reading.diffs
        self._open: List[PassRecord] = []
        self._current: Optional[str] = None

    def enter(self, record: PassRecord) -> None:
        """``record`` starts: the events it is not nested in have ended."""
        self._close(record.depth)
        if record.before is not None:
            self._current = record.before
        self._open.append(record)

    def module_at(self, depth: int) -> Optional[str]:
        """The module this side held where a pass at ``depth`` would have started."""
        self._close(depth)
        return self._current

    def scratch(self, record: PassRecord) -> bool:
        """Whether ``record`` worked on a temporary module (the pipeline's stayed as it was)."""
        return self.roles.get(record.index) == SCRATCH

    def finishing(self, record: PassRecord) -> bool:
        """Whether ``record`` is the InferType a pass runs on its own result."""
        return self.roles.get(record.index) == FINISHING


    def _close(self, depth: int) -> None:
        while self._open and self._open[-1].depth >= depth:
            done = self._open.pop()
            if done.after is not None:
                self._current = done.after


def _key(record: PassRecord, by_index: Dict[int, PassRecord]) -> Tuple[str, ...]:
    """The pass name and those of the events enclosing it, outermost first."""
    names = [record.name]
    parent = record.parent
    while parent is not None and parent in by_index:
        names.append(by_index[parent].name)
        parent = by_index[parent].parent
    return tuple(reversed(names))
