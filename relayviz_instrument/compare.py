"""``compare_files`` and ``compare_pass``: two snapshots (or graph JSON files), or one pass of a
trace, diffed node by node — the use cases behind ``relayviz diff``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, Union

from rich.console import Console, ConsoleOptions, RenderResult

from .diff import GraphDiff, diff
from .diff_view import DiffView
from .errors import RelayVizUsageError
from .sources import read_document, select_event
from .store import load_trace

__all__ = ["FileComparison", "compare_files", "compare_pass"]


@dataclass
class FileComparison:
    """The diff of two documents read from files, with the names to show for them."""

    before: str
    after: str
    diff: GraphDiff

    @property
    def same(self) -> bool:
        """Whether the two are the same graph (up to node numbering): exit status 0 for diff(1)."""
        return self.diff.is_empty

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield DiffView(self.diff, f"{self.before} → {self.after}",
                       [f"{self.diff.nodes_before} → {self.diff.nodes_after} nodes"])

    def to_json(self) -> Dict[str, Any]:
        """The diff as :meth:`GraphDiff.to_json` gives it."""
        return self.diff.to_json()


def compare_files(before: Union[str, "os.PathLike[str]"], after: Union[str, "os.PathLike[str]"]) -> FileComparison:
    """Read two RelayViz documents or graph JSON files and diff them."""
    return FileComparison(os.fspath(before), os.fspath(after), diff(read_document(before), read_document(after)))


def compare_pass(trace: Union[str, "os.PathLike[str]"], selector: Union[str, int]) -> FileComparison:
    """The diff of one pass of a trace directory (``selector``: a pass name or an event index,
    as :func:`~relayviz_instrument.sources.select_event` takes it), before against after."""
    loaded = load_trace(trace)
    record = select_event(loaded, selector)
    if not (record.before and record.after):
        raise RelayVizUsageError(f"{loaded.path}: pass event #{record.index} ({record.name}) has no snapshots "
                                 f"({record.note or 'its module was not snapshotted: TIR-only, or left out by passes=/exclude='})")
    before, after = loaded.snapshot_path(record.before), loaded.snapshot_path(record.after)
    return FileComparison(f"{record.name} #{record.index} before ({before.name})", f"after ({after.name})",
                          diff(read_document(before), read_document(after)))
