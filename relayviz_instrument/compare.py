"""``compare_files``: two snapshots (or graph JSON files) diffed node by node — the use case
behind ``relayviz diff A B``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, Union

from rich.console import Console, ConsoleOptions, RenderResult

from .diff import GraphDiff, diff
from .diff_view import DiffView
from .sources import read_document

__all__ = ["FileComparison", "compare_files"]


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
