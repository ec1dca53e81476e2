"""``report_trace``: what each pass of a trace did, hunk by hunk, and the operator calls it
added and removed — the use case behind ``relayviz report``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Pattern, Tuple, Union

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from .diff import GraphDiff
from .diff_view import DiffView, OpDeltaTable
from .errors import RelayVizUsageError
from .pass_diffs import PassDiffs
from .pipeline import kernel_delta, pipeline_op_deltas
from .store import PassRecord

__all__ = ["TraceReport", "report_trace", "changed_passes"]


def changed_passes(records: List[PassRecord], pattern: Optional[Pattern[str]] = None) -> List[PassRecord]:
    """The records of passes that changed the module (with both snapshots), optionally by name."""
    return [r for r in records
            if r.changed and r.before and r.after and (pattern is None or pattern.search(r.name))]


@dataclass
class TraceReport:
    """Each changed pass with its diff, and the operator-count table of the pipeline."""

    trace: Any
    passes: List[Tuple[PassRecord, GraphDiff]]
    selected: bool = False
    op_deltas: List[Tuple[str, Dict[str, int]]] = field(default_factory=list)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for record, result in self.passes:
            yield DiffView(result, record.name, [
                f"#{record.index}", f"depth {record.depth}", f"{record.duration_ms:,.2f} ms",
                f"{result.nodes_before} → {result.nodes_after} nodes"])
        if not self.passes:
            yield Text("no pass changed the module" + (" (among those selected)" if self.selected else ""))
            return
        yield OpDeltaTable(self.op_deltas)

    def to_json(self) -> Dict[str, Any]:
        """``{"trace", "complete", "passes": [{index, name, depth, duration_ms, nodes_before,
        nodes_after, summary, added, removed, changed, rewired, hunks}]}``."""
        path = getattr(self.trace, "path", None)
        return {"trace": None if path is None else str(path), "complete": self.trace.complete,
                "passes": [{"index": r.index, "name": r.name, "depth": r.depth, "duration_ms": r.duration_ms,
                            "nodes_before": d.nodes_before, "nodes_after": d.nodes_after, **d.to_json()}
                           for r, d in self.passes]}


def report_trace(trace: Any, passes: Union[str, Pattern[str], None] = None) -> TraceReport:
    """Diff every pass of ``trace`` that changed the module (those whose name matches the
    regular expression ``passes``, if given) and count the operators each added and removed
    along the pipeline."""
    if isinstance(passes, str):
        try:
            passes = re.compile(passes)
        except re.error as exc:
            raise RelayVizUsageError(f"--pass: not a regular expression: {exc}") from None
    diffs = PassDiffs(trace)
    found: List[Tuple[PassRecord, GraphDiff]] = []
    for record in changed_passes(trace.records, passes):
        result = diffs.diff(record)
        assert result is not None
        found.append((record, result))
    diffs.save()
    kernels = {r.index: kernel_delta(diffs.document(r.before), diffs.document(r.after))
               for r, _ in found if r.ir == "relax"}
    deltas = pipeline_op_deltas(trace.records, {r.index: d for r, d in found}, kernels)
    return TraceReport(trace, found, passes is not None, deltas)
