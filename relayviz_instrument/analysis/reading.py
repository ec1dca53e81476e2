"""What a trace means, read once: :class:`TraceReading`.

A trace records raw facts (records, snapshots). What they mean is derived here, once per trace,
for every view: the compilations it holds (``store/builds.py``), each event's role on the pipeline,
who did the work (credits), where the module changed outside any pass and what changed it
(``steps.py``), the diffs and their summaries (``pass_diffs.py``, with the trace's cache), what
each pass did to the kernels' loop nests, and each compilation's operator deltas. The pass
table (``relayviz show``), the report, the HTML page, the regression snapshot and the alignment
of two traces take a reading and only render or compare what it holds; none of them splits the
trace into builds, walks the pipeline or writes the cache itself.

The structure (builds, roles, credits, gaps: no snapshot read) is computed when the reading is
made, one walk of the pipeline per compilation. Diffs are computed when first asked, and
:meth:`TraceReading.table` and :meth:`TraceReading.changes`, which compute them for a whole
view, write the summaries they computed to the trace's cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Pattern, Set, Tuple

from ..diff import GraphDiff
from ..format.irs import ARTIFACT_IRS, RELAX, VM_EXECUTABLE
from ..store import PassRecord, TraceLike
from ..store.builds import Build, records_by_index, split_builds
from .loop_nest import KernelNests
from .pass_diffs import PassDiffs
from .pipeline import PIPELINE, Credit, Gap, credits, kernel_delta, kernel_ops, pipeline_op_deltas, walk_pipeline
from .schedule_changes import KernelChange, kernel_changes
from .steps import ModuleStep, Origin, module_step, origin_of

__all__ = ["TraceReading", "BuildReading", "TableEntry", "ChangeEntry", "changed_passes"]


@dataclass
class BuildReading:
    """One compilation as read: its :class:`Build`, its records (pass events, then what it
    built), each event's role, the credits of the events that changed the module, and where
    the module changed outside any pass."""

    build: Build
    members: List[PassRecord]
    roles: Dict[int, str]
    credits: Dict[int, Credit]
    gaps: List[Gap]

    def role(self, index: int) -> str:
        """The role of event ``index`` (an event without a snapshot counts as on the pipeline)."""
        return self.roles.get(index, PIPELINE)


@dataclass(frozen=True)
class TableEntry:
    """One row of the pass table as facts: a pass event (``record``, its ``role``, the summary
    of what it did itself) or a change between two events (``gap``, with its ``origin``, the
    ``step`` of TVM's build it was if it was one, and the node counts on either side)."""

    record: Optional[PassRecord] = None
    role: str = PIPELINE
    summary: Optional[Dict[str, Any]] = None
    by_nested_passes: bool = False
    gap: Optional[Gap] = None
    origin: Optional[Origin] = None
    step: Optional[ModuleStep] = None
    nodes: Tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class ChangeEntry:
    """One pass of the report as facts: its record and role, a diff of what it did (``part``
    of it when nested passes did the rest; the whole of it, ``total``, when they did all),
    whether the diff leaves types to a nested InferType, and what it did to the kernels."""

    record: PassRecord
    diff: GraphDiff
    role: str
    without_types: bool = False
    total: bool = False
    kernels: Tuple[KernelChange, ...] = ()


def changed_passes(records: List[PassRecord], pattern: Optional[Pattern[str]] = None) -> List[PassRecord]:
    """The records of passes that changed the module (with both snapshots), optionally by name."""
    return [r for r in records
            if r.changed and r.before and r.after and (pattern is None or pattern.search(r.name))]


class TraceReading:
    """What ``trace`` means (see the module docstring), read once and handed to every view.

    ``diffs`` shares the diffs of another reading of the same trace (the HTML report keeps
    every document; a view reads a few at a time)."""

    def __init__(self, trace: TraceLike, *, diffs: Optional[PassDiffs] = None) -> None:
        self.trace = trace
        self.records: List[PassRecord] = list(trace.records)
        self.by_index = records_by_index(self.records)
        self.diffs = diffs if diffs is not None else PassDiffs(trace)
        self.builds: List[BuildReading] = []
        #: Every event's role, over the compilations.
        self.roles: Dict[int, str] = {}
        for build in split_builds(self.records):
            members = build.members(self.by_index)
            roles, gaps = walk_pipeline(members)
            self.builds.append(BuildReading(build, members, roles, credits(members, roles), gaps))
            self.roles.update(roles)
        #: The loop nests of the kernels of each snapshot, read once each.
        self.nests = KernelNests(self.diffs)

    def role(self, index: int) -> str:
        """The role of event ``index`` in its compilation."""
        return self.roles.get(index, PIPELINE)

    @property
    def pipeline(self) -> Set[int]:
        """The events on the pipeline: those that received the module the compilation carried."""
        return {index for index, role in self.roles.items() if role == PIPELINE}

    @property
    def gaps(self) -> List[Gap]:
        """Every change made outside any recorded pass, compilation by compilation."""
        return [gap for build in self.builds for gap in build.gaps]

    # -- the pass table ---------------------------------------------------------------------

    def summary(self, build: BuildReading, record: PassRecord) -> Optional[Dict[str, Any]]:
        """The diff summary of what ``record`` did itself: the parts its credit names on the
        pipeline, the whole diff for scratch work and what a build returned; None unchanged."""
        credit = build.credits.get(record.index)
        if credit is not None:
            return self.diffs.credited_summary(credit)
        if record.changed and record.before and record.after:
            return self.diffs.summary(record)
        return None

    def table(self, everything: bool = False) -> List[List[TableEntry]]:
        """The rows of the pass table, compilation by compilation: the pipeline's passes that
        changed the module or failed, what each build returned, and the changes made outside
        any pass (``everything``: every event, labelled by its role). Writes the summaries it
        computed to the trace's cache."""
        out = []
        for build in self.builds:
            gaps = {g.next: g for g in build.gaps}
            rows: List[TableEntry] = []
            for record in build.members:
                gap = gaps.get(record.index)
                if gap is not None and not self.diffs.pair_diff(gap.old, gap.new).is_empty:
                    old, new = self.diffs.document(gap.old), self.diffs.document(gap.new)
                    origin = origin_of(gap.between)
                    rows.append(TableEntry(summary=self.diffs.pair_summary(gap.old, gap.new), gap=gap, origin=origin,
                                           step=module_step(old, new), nodes=(len(old["nodes"]), len(new["nodes"]))))
                role = build.role(record.index)
                shown = (everything or record.error is not None or (role == PIPELINE and record.changed)
                         or record.ir in ARTIFACT_IRS)
                if not shown:
                    continue
                credit = build.credits.get(record.index)
                rows.append(TableEntry(record, role, self.summary(build, record),
                                       credit is not None and credit.by_nested_passes))
            out.append(rows)
        self.diffs.save()
        return out

    # -- the report -------------------------------------------------------------------------

    def changes(self, pattern: Optional[Pattern[str]] = None, everything: bool = False
                ) -> List[Tuple[BuildReading, List[ChangeEntry], List[Tuple[str, Dict[str, int]]]]]:
        """What each pipeline pass that changed the module did (those whose name ``pattern``
        finds, if given; ``everything``: scratch work and nested type inference too), with each
        compilation's operator deltas. Writes the summaries it computed to the trace's cache."""
        out = []
        for build in self.builds:
            found: List[ChangeEntry] = []
            full: Dict[int, GraphDiff] = {}
            for record in changed_passes(build.members, pattern):
                role = build.role(record.index)
                if role != PIPELINE and not everything and record.ir not in ARTIFACT_IRS:
                    continue
                result = self.diffs.diff(record)
                assert result is not None and record.before and record.after
                full[record.index] = result
                own = build.credits.get(record.index)
                if own is None or own.parts == ((record.before, record.after, False),):
                    found.append(ChangeEntry(record, result, role,
                                             kernels=self.kernel_changes(record.before, record.after)))
                elif own.by_nested_passes:
                    if everything:
                        found.append(ChangeEntry(record, result, role, total=True))
                else:
                    for (a, b, untyped), part in zip(own.parts, self.diffs.credited_diffs(own)):
                        found.append(ChangeEntry(record, part, role, untyped, kernels=self.kernel_changes(a, b)))
            out.append((build, found, self._op_deltas(build, full)))
        self.diffs.save()
        return out

    def _op_deltas(self, build: BuildReading, full: Dict[int, GraphDiff]) -> List[Tuple[str, Dict[str, int]]]:
        """What each pipeline pass of ``build`` among ``full`` (its diffs, by index) did to the
        operator counts, with a Relax build's calls of each kernel."""
        on_pipeline = {i: d for i, d in full.items() if build.role(i) == PIPELINE}
        kernels: Dict[int, Dict[str, int]] = {}
        counted: Dict[int, Set[str]] = {}
        for i in on_pipeline:
            r = self.by_index[i]
            # what a Relax build's VM executable calls is counted by kernel as in its modules
            relax_built = build.build.relax and r.ir == VM_EXECUTABLE
            if (r.ir == RELAX or relax_built) and r.before and r.after:  # (a changed pass has both snapshots)
                after = self.diffs.document(r.after)
                kernels[i] = kernel_delta(self.diffs.document(r.before), after)
                if relax_built:
                    counted[i] = kernel_ops(after)
        return pipeline_op_deltas(build.members, on_pipeline, kernels, counted, build.roles)

    # -- kernels ----------------------------------------------------------------------------

    def kernel_changes(self, before: str, after: str) -> Tuple[KernelChange, ...]:
        """What the step from snapshot ``before`` to ``after`` did to each kernel's loop nest."""
        return tuple(kernel_changes(self.nests(before), self.nests(after)))
