"""The pass contexts of a trace of a whole process (``relayviz run``, ``RELAYVIZ_TRACE``): one row
per context the process entered, in the order entered, nested ones indented under the context
they were opened in, with where each was opened and how many of its events changed the module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from rich import box
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ..names import printable
from ..store import PassRecord

__all__ = ["ContextRow", "ContextTable", "context_rows"]


@dataclass(frozen=True)
class ContextRow:
    """One pass context: its number, nesting depth (0 for the outermost), where it was opened,
    its opt_level, and its events: how many, how many changed the module, how many failed, and
    the first and last event index (None when it ran no pass)."""

    index: int
    depth: int
    opened: str
    opt_level: Any
    events: int
    changed: int
    failed: int
    first: Any
    last: Any

    def to_json(self) -> Dict[str, Any]:
        """The row as a JSON object (``relayviz show --json``'s ``contexts``)."""
        return {"index": self.index, "depth": self.depth, "opened": self.opened, "opt_level": self.opt_level,
                "events": self.events, "changed": self.changed, "failed": self.failed, "first": self.first,
                "last": self.last}


def context_rows(contexts: Sequence[Mapping[str, Any]], records: Sequence[PassRecord]) -> List[ContextRow]:
    """The rows of ``contexts`` (a trace's ``context`` lines) with the counts of ``records``."""
    events: Dict[int, List[PassRecord]] = {}
    for r in records:
        if r.context is not None:
            events.setdefault(r.context, []).append(r)
    depths: Dict[int, int] = {}
    rows = []
    for context in contexts:
        index, parent = context["index"], context["parent"]
        depths[index] = 0 if parent is None else depths.get(parent, 0) + 1
        mine = events.get(index, [])
        rows.append(ContextRow(index, depths[index], context["opened"], context["opt_level"], len(mine),
                               sum(1 for r in mine if r.changed), sum(1 for r in mine if r.error is not None),
                               mine[0].index if mine else None, mine[-1].index if mine else None))
    return rows


class ContextTable:
    """The table of a process trace's pass contexts (see the module docstring)."""

    def __init__(self, rows: Sequence[ContextRow]) -> None:
        self.rows = rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = Table(box=box.SIMPLE_HEAD, title="pass contexts", title_justify="left", pad_edge=False)
        columns: Tuple[Tuple[str, JustifyMethod], ...] = (
            ("ctx", "right"), ("opened at", "left"), ("opt", "right"), ("events", "right"), ("changed", "right"),
            ("failed", "right"), ("#", "right"))
        for name, justify in columns:
            table.add_column(name, justify=justify)
        for row in self.rows:
            span = "" if row.first is None else f"{row.first}-{row.last}"
            table.add_row(str(row.index), Text("  " * row.depth + printable(row.opened, None)),
                          "" if row.opt_level is None else str(row.opt_level), str(row.events), str(row.changed),
                          str(row.failed) if row.failed else "", span)
        if not console.is_terminal:  # in a file or a pipe no name is cut: the table takes the width it needs
            options = options.update(width=max(options.max_width, Measurement.get(
                console, options.update(width=1_000_000), table).maximum))
        yield from console.render(table, options)
