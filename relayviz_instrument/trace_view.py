"""A trace as a whole: its summary, its pass table, and ``show_trace``, the use case behind
``relayviz show``.

The renderables take any object with ``records`` (a list of :class:`PassRecord`),
``complete`` and ``problems``: a :class:`~relayviz_instrument.store.Trace` read from disk,
or a live :class:`~relayviz_instrument.capture.RelayVizTrace`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

from .pass_diffs import PassDiffs
from .pipeline import RECORD_GRAPH_FIX, graph_missing
from .store import PassRecord

__all__ = ["TraceSummary", "PassTable", "TraceOverview", "select_records", "show_trace"]


def select_records(records: Sequence[PassRecord], *, everything: bool = False) -> List[PassRecord]:
    """The records a pass table shows: by default those that changed the module or failed."""
    if everything:
        return list(records)
    return [r for r in records if r.changed or r.error is not None]


#: Characters between two columns of the pass table: padding 1 each side, collapsed to one,
#: and the blank rule of ``box.SIMPLE_HEAD``.
_SEPARATOR = 2


def _ms(value: float) -> str:
    return f"{value:,.1f}"


class TraceSummary:
    """A few lines about a trace: events, what changed, time spent, and what went wrong."""

    def __init__(self, trace: Any, *, path: Optional[str] = None) -> None:
        self.trace = trace
        self.path = path

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        records: Sequence[PassRecord] = self.trace.records
        by_ir = {}
        for r in records:
            by_ir[r.ir] = by_ir.get(r.ir, 0) + 1
        top = sum(r.duration_ms for r in records if r.depth == 1)
        changed = sum(1 for r in records if r.changed)
        compared = sum(1 for r in records if r.changed is not None)
        snapshots = {ref for r in records for ref in (r.before, r.after) if ref}
        line = Text()
        if self.path:
            line.append("trace ", style="bold")
            line.append(self.path, style="cyan")
            line.append("\n")
        kinds = ", ".join(f"{count} {ir}" for ir, count in sorted(by_ir.items()))
        line.append(f"{len(records)} pass events ({kinds}); {changed} of {compared} compared changed "
                    f"the module; {len(snapshots)} snapshots; passes took {top / 1000:,.2f} s")
        yield line
        if not self.trace.complete:
            yield Text("incomplete: " + "; ".join(p.splitlines()[0] for p in self.trace.problems),
                       style="bold yellow")
        for r in records:
            if r.error is not None and not any(c.error is not None and c.parent == r.index for c in records):
                yield Text(f"pass {r.name} (#{r.index}) failed: {r.error.splitlines()[0]}", style="bold red")
        for note in trace_notes(records):
            yield Text("note: " + note, style="yellow")


def trace_notes(records: Sequence[PassRecord]) -> List[str]:
    """What a reader of the trace should know that no row shows: a built graph that was not
    recorded, modules that could not be snapshotted (and why)."""
    notes = []
    if graph_missing(records):
        notes.append("the model was lowered (relay.build ran) but its built graph was not recorded, so the "
                     f"trace ends at the last Relay module: {RECORD_GRAPH_FIX}")
    why: Dict[str, int] = {}
    for r in records:
        if r.note:
            why[r.note] = why.get(r.note, 0) + 1
    notes.extend(f"{text} ({count} pass events)" for text, count in why.items())
    return notes


class PassTable:
    """The pass-by-pass table: name (indented by depth), time, change, node counts, + - ~.

    ``summaries`` maps record indices to diff summaries (:class:`~relayviz_instrument.pass_diffs.PassDiffs`);
    a changed pass without one shows no counts.
    """

    def __init__(self, records: Iterable[PassRecord], summaries: Optional[Mapping[int, Mapping[str, Any]]] = None,
                 *, title: Optional[str] = None) -> None:
        self.records = list(records)
        self.summaries = dict(summaries or {})
        self.title = title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rows = [self._row(r, self.summaries.get(r.index)) for r in self.records]
        if not rows:
            yield Text("no pass changed the module", style="dim")
            return
        table = Table(title=self.title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                      expand=False, padding=(0, 1), collapse_padding=True)
        table.add_column("#", justify="right", style="dim", no_wrap=True)
        table.add_column("pass", no_wrap=True)
        table.add_column("depth", justify="right", no_wrap=True)
        table.add_column("ms", justify="right", no_wrap=True)
        table.add_column("changed", justify="center", no_wrap=True)
        table.add_column("nodes", justify="right", no_wrap=True)
        table.add_column("+", justify="right", style="green", no_wrap=True)
        table.add_column("-", justify="right", style="red", no_wrap=True)
        table.add_column("~", justify="right", style="yellow", no_wrap=True)
        # Every column but the pass name keeps its width; a narrow terminal shortens the names.
        widths = [max([len(str(c.header))] + [len(str(row[i])) for row in rows])
                  for i, c in enumerate(table.columns)]
        room = max(12, options.max_width - (sum(widths) - widths[1]) - _SEPARATOR * (len(widths) - 1))
        for row, record in zip(rows, self.records):
            if row[1].cell_len > room:  # deep nesting (Relax pipelines): one space a level, if the name then fits
                compact = self._name(record, indent=1)
                if compact.cell_len <= room:
                    row[1] = compact
            row[1].truncate(room, overflow="ellipsis")
        for row in rows:
            table.add_row(*row)
        yield Group(table)

    @staticmethod
    def _name(r: PassRecord, indent: int = 2) -> Text:
        return Text(" " * indent * (r.depth - 1) + r.name, style="bold red" if r.error else None)

    @classmethod
    def _row(cls, r: PassRecord, summary: Optional[Mapping[str, Any]]) -> List[Any]:
        name = cls._name(r)
        if r.error is not None:
            changed = Text("failed", style="bold red")
        elif r.changed is None:
            changed = Text("-", style="dim")
        else:
            changed = Text("yes", style="bold") if r.changed else Text("no", style="dim")
        if r.nodes_before is None:
            nodes = ""
        elif r.nodes_after is None or r.nodes_after == r.nodes_before:
            nodes = str(r.nodes_before)
        else:
            nodes = f"{r.nodes_before} -> {r.nodes_after}"
        summary = summary or {}
        plus = str(summary.get("added", "")) if r.changed else ""
        minus = str(summary.get("removed", "")) if r.changed else ""
        tilde = (str(summary.get("changed", 0) + summary.get("rewired", 0))
                 if r.changed and summary else "")
        return [str(r.index), name, str(r.depth), _ms(r.duration_ms), changed, nodes, plus, minus, tilde]


@dataclass
class TraceOverview:
    """What ``relayviz show`` prints: the trace's summary and its pass table, or as JSON the
    header and every record with its diff summary."""

    trace: Any
    records: List[PassRecord]
    summaries: Dict[int, Dict[str, Any]]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        path = getattr(self.trace, "path", None)
        yield TraceSummary(self.trace, path=None if path is None else str(path))
        yield PassTable(self.records, self.summaries)

    def to_json(self) -> Dict[str, Any]:
        """``{"trace", "complete", "problems", "notes", "header", "records", "summaries"}``:
        every record as recorded, and the diff summary of each changed pass by record index."""
        trace = self.trace
        return {"trace": str(trace.path) if trace.path is not None else None, "complete": trace.complete,
                "problems": list(trace.problems), "notes": trace_notes(trace.records),
                "header": getattr(trace, "header", {}), "records": [r.to_json() for r in trace.records],
                "summaries": {str(index): summary for index, summary in sorted(self.summaries.items())}}


def show_trace(trace: Any, *, everything: bool = False) -> TraceOverview:
    """The overview of ``trace`` (read with :func:`~relayviz_instrument.load_trace`, or live):
    by default only the passes that changed the module or failed; ``everything`` lists all."""
    return TraceOverview(trace, select_records(trace.records, everything=everything),
                         PassDiffs(trace).summaries(trace.records))
