"""Rich renderables for a trace as a whole: its summary and its pass table.

Both take any object with ``records`` (a list of :class:`PassRecord`), ``complete`` and
``problems``: a :class:`~relayviz_instrument.store.Trace` read from disk, or a live
:class:`~relayviz_instrument.capture.RelayVizTrace`.
"""

from __future__ import annotations

from typing import Any, Iterable, List, Optional, Sequence

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

from .store import PassRecord

__all__ = ["TraceSummary", "PassTable", "select_records"]


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


class PassTable:
    """The pass-by-pass table: name (indented by depth), time, change, node counts, + - ~."""

    def __init__(self, records: Iterable[PassRecord], *, title: Optional[str] = None) -> None:
        self.records = list(records)
        self.title = title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rows = [self._row(r) for r in self.records]
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
        for row in rows:
            row[1].truncate(room, overflow="ellipsis")
        for row in rows:
            table.add_row(*row)
        yield Group(table)

    @staticmethod
    def _row(r: PassRecord) -> List[Any]:
        name = Text("  " * (r.depth - 1) + r.name, style="bold red" if r.error else None)
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
        summary = r.summary or {}
        plus = str(summary.get("added", "")) if r.changed else ""
        minus = str(summary.get("removed", "")) if r.changed else ""
        tilde = (str(summary.get("changed", 0) + summary.get("rewired", 0))
                 if r.changed and summary else "")
        return [str(r.index), name, str(r.depth), _ms(r.duration_ms), changed, nodes, plus, minus, tilde]
