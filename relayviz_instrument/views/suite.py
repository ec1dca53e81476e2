"""A folder of per-test traces (``pytest --relayviz-trace DIR``) as one table: each test, its
outcome, its pass events, how many changed the module and how many failed, and its folder;
``show_suite``, the use case behind ``relayviz show DIR`` on such a folder."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from rich import box
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ..names import printable
from ..store import load_trace
from ..store.suite import read_suite

__all__ = ["SuiteRow", "SuiteOverview", "show_suite"]


@dataclass(frozen=True)
class SuiteRow:
    """One test: its id and outcome, and of its trace (None without one): the pass events, how
    many changed the module, how many failed (raised), and whether the trace is complete."""

    test: str
    outcome: str
    folder: Optional[str]
    events: Optional[int]
    changed: Optional[int]
    failed: Optional[int]
    complete: Optional[bool]

    def to_json(self) -> Dict[str, Any]:
        """The row as a JSON object."""
        return {"test": self.test, "outcome": self.outcome, "folder": self.folder, "events": self.events,
                "changed": self.changed, "failed": self.failed, "complete": self.complete}


@dataclass
class SuiteOverview:
    """What ``relayviz show DIR`` prints for a folder of per-test traces."""

    root: str
    rows: List[SuiteRow]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        failed = sum(1 for r in self.rows if r.outcome == "failed")
        yield Text(f"{len(self.rows)} tests traced in {printable(self.root, None)}; {failed} failed; "
                   f"{sum(r.events or 0 for r in self.rows)} pass events")
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        columns: Tuple[Tuple[str, JustifyMethod], ...] = (
            ("test", "left"), ("outcome", "left"), ("events", "right"), ("changed", "right"), ("failed", "right"),
            ("trace", "left"))
        for name, justify in columns:
            table.add_column(name, justify=justify)
        for row in self.rows:
            style = "red" if row.outcome == "failed" else ""
            table.add_row(Text(printable(row.test, None)), Text(row.outcome, style=style),
                          "" if row.events is None else str(row.events),
                          "" if row.changed is None else str(row.changed),
                          str(row.failed) if row.failed else "",
                          Text(printable(row.folder or "-", None) + ("" if row.complete in (None, True)
                                                                     else " (incomplete)")))
        if not console.is_terminal:  # in a file or a pipe no name is cut: the table takes the width it needs
            options = options.update(width=max(options.max_width, Measurement.get(
                console, options.update(width=1_000_000), table).maximum))
        yield from console.render(table, options)

    def to_json(self) -> Dict[str, Any]:
        """``{"suite", "tests"}``: the folder, and one object per test (see :class:`SuiteRow`)."""
        return {"suite": self.root, "tests": [row.to_json() for row in self.rows]}


def show_suite(root: Union[str, "os.PathLike[str]"]) -> SuiteOverview:
    """The overview of a folder written by ``pytest --relayviz-trace`` (its index and each
    test's trace, read with :func:`~relayviz_instrument.load_trace`)."""
    rows = []
    for entry in read_suite(root):
        if entry.folder is None:
            rows.append(SuiteRow(entry.test, entry.outcome, None, None, None, None, None))
            continue
        trace = load_trace(Path(root) / entry.folder)
        records = trace.records
        rows.append(SuiteRow(entry.test, entry.outcome, entry.folder, len(records),
                             sum(1 for r in records if r.changed), sum(1 for r in records if r.error is not None),
                             trace.complete))
    return SuiteOverview(os.fspath(root), rows)
