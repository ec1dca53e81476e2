"""``report_trace``: what each pass of a trace did, hunk by hunk, and the operator calls each
compilation added and removed — the use case behind ``relayviz report``.

Like the pass table, the report shows the pipeline by default: work on scratch modules and
the type inference a pass runs on its own result are folded into that pass (``everything``
shows them, labelled), and a pass is credited with what it did, not with the types its nested
InferType filled in. ``docs/json.md`` documents the JSON forms field by field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Pattern, Tuple, Union

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from ..names import printable

from ..analysis.pipeline import FINISHING, PIPELINE, SCRATCH
from ..analysis.reading import TraceReading
from ..analysis.schedule_changes import KernelChange
from ..diff import GraphDiff
from .hunk_tree import DiffView, OpDeltaTable
from .kernel_text import kernel_change_lines
from ..errors import RelayVizUsageError
from ..format.irs import ARTIFACT_IRS
from ..store import PassRecord, TraceLike

__all__ = ["TraceReport", "PassChange", "report_trace"]


@dataclass
class PassChange:
    """One pass in a report: its record, its diff, its role and how it is labelled."""

    record: PassRecord
    diff: GraphDiff
    role: str = PIPELINE
    note: str = ""
    without_types: bool = False
    #: What the pass did to each kernel's loop nest (snapshots with TIR statements only).
    kernels: Tuple[KernelChange, ...] = ()

    def to_json(self) -> Dict[str, Any]:
        r, d = self.record, self.diff
        out = {"index": r.index, "name": r.name, "depth": r.depth, "role": self.role,
               "duration_ms": None if r.ir in ARTIFACT_IRS else r.duration_ms,
               "nodes_before": d.nodes_before, "nodes_after": d.nodes_after,
               "types_inferred_by_nested_pass": self.without_types, **d.to_json()}
        if self.kernels:
            out["kernels"] = [k.to_json() for k in self.kernels]
        return out


@dataclass
class BuildReport:
    """The changed passes of one compilation and its operator table."""

    number: int
    label: str
    passes: List[PassChange]
    op_deltas: List[Tuple[str, Dict[str, int]]] = field(default_factory=list)

    def operators_json(self) -> List[Dict[str, Any]]:
        return [{"operator": op, "added": plus, "removed": minus, "net": plus - minus, "passes": names}
                for op, (plus, minus, names) in OpDeltaTable(self.op_deltas).rows.items()]


@dataclass
class TraceReport:
    """Each changed pass with its diff, and the operator table of each compilation."""

    trace: TraceLike
    builds: List[BuildReport]
    selected: bool = False

    @property
    def passes(self) -> List[PassChange]:
        return [p for b in self.builds for p in b.passes]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self.passes:
            yield Text("no pass changed the module" + (" (among those selected)" if self.selected else ""))
            return
        many = len(self.builds) > 1
        for build in self.builds:
            if many and build.passes:
                yield Text(printable(build.label), style="bold underline")
            for change in build.passes:
                r = change.record
                details = [f"#{r.index}", f"depth {r.depth}"]
                if r.ir not in ARTIFACT_IRS:
                    details.append(f"{r.duration_ms:,.2f} ms")
                details.append(f"{change.diff.nodes_before} → {change.diff.nodes_after} nodes")
                if change.note:
                    details.append(change.note)
                if change.without_types:
                    details.append("types left to its nested InferType")
                yield DiffView(change.diff, r.name, details, notes=kernel_change_lines(change.kernels))
            if build.op_deltas and any(delta for _, delta in build.op_deltas):
                title = "operator calls across the pipeline" + (f" ({printable(build.label)})" if many else "")
                yield OpDeltaTable(build.op_deltas, title=title)

    def to_json(self) -> Dict[str, Any]:
        """``{"trace", "complete", "passes": [...], "builds": [{number, label, operators}]}``."""
        path = getattr(self.trace, "path", None)
        return {"trace": None if path is None else str(path), "complete": self.trace.complete,
                "passes": [p.to_json() for p in self.passes],
                "builds": [{"number": b.number, "label": b.label, "passes": [p.record.index for p in b.passes],
                            "operators": b.operators_json()} for b in self.builds]}

    def json_lines(self) -> Iterator[Dict[str, Any]]:
        """The report as a stream of JSON objects, one per line (``relayviz report --jsonl``):
        ``{"type": "trace"}`` first, then ``{"type": "pass"}`` per pass, then
        ``{"type": "operators"}`` per compilation."""
        path = getattr(self.trace, "path", None)
        yield {"type": "trace", "trace": None if path is None else str(path), "complete": self.trace.complete,
               "builds": len(self.builds)}
        for build in self.builds:
            for change in build.passes:
                yield {"type": "pass", "build": build.number, **change.to_json()}
            yield {"type": "operators", "build": build.number, "label": build.label,
                   "operators": build.operators_json()}


def report_trace(trace: TraceLike, passes: Union[str, Pattern[str], None] = None, *,
                 everything: bool = False, reading: Optional[TraceReading] = None) -> TraceReport:
    """Diff every pipeline pass of ``trace`` that changed the module (those whose name matches
    the regular expression ``passes``, if given; with ``everything``, scratch work and nested
    type inference too), and count the operators each compilation's passes added and removed.
    ``reading`` shares what another view of the same trace read."""
    pattern = _compiled(passes)
    reading = reading if reading is not None else TraceReading(trace)
    reports = []
    for build, entries, deltas in reading.changes(pattern, everything):
        found = []
        for entry in entries:
            note = ("the total of the passes nested in it" if entry.total
                    else _note(entry.record, entry.role, reading.by_index))
            found.append(PassChange(entry.record, entry.diff, entry.role, note, entry.without_types, entry.kernels))
        reports.append(BuildReport(build.build.number, build.build.label(), found, deltas))
    return TraceReport(trace, reports, pattern is not None)


def _compiled(passes: Union[str, Pattern[str], None]) -> Optional[Pattern[str]]:
    if not isinstance(passes, str):
        return passes
    try:
        return re.compile(passes)
    except re.error as exc:
        raise RelayVizUsageError(f"--pass: not a regular expression: {exc}") from None


def _note(record: PassRecord, role: str, by_index: Dict[int, PassRecord]) -> str:
    if role == SCRATCH:
        return "scratch: works on a module of its own, not the pipeline's"
    if role == FINISHING and record.parent is not None:
        return f"types of {by_index[record.parent].name}'s result"
    return ""
