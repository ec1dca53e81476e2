"""``compare_files``, ``compare_pass`` and ``compare_traces``: two snapshots (or graph JSON files)
or one pass of a trace diffed node by node, and two traces aligned pass by pass — the use cases
behind ``relayviz diff``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from ..names import printable

from ..analysis.alignment import Alignment, align
from .alignment_table import AlignmentTable, DivergenceView
from ..diff import GraphDiff, diff
from .diff_tree import DiffView
from .kernel_changes import kernel_change_lines
from ..analysis.schedule_changes import KernelChange, document_kernel_changes
from ..format import Document
from ..errors import RelayVizUsageError
from ..store.documents import read_document
from ..analysis.selection import select_event
from ..store import TraceLike, load_trace

__all__ = ["FileComparison", "compare_files", "compare_pass", "TraceComparison", "compare_traces"]


@dataclass
class FileComparison:
    """The diff of two documents read from files, with the names to show for them."""

    before: str
    after: str
    diff: GraphDiff
    #: What changed in each kernel's loop nest (documents with TIR statements only).
    kernels: Tuple[KernelChange, ...] = ()

    @property
    def same(self) -> bool:
        """Whether the two are the same graph (up to node numbering): exit status 0 for diff(1)."""
        return self.diff.is_empty

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield DiffView(self.diff, f"{self.before} → {self.after}",
                       [f"{self.diff.nodes_before} → {self.diff.nodes_after} nodes"],
                       notes=kernel_change_lines(self.kernels))

    def to_json(self) -> Dict[str, Any]:
        """The diff as :meth:`GraphDiff.to_json` gives it, and ``kernels`` when a loop nest changed."""
        out = self.diff.to_json()
        if self.kernels:
            out["kernels"] = [k.to_json() for k in self.kernels]
        return out


def _compared(before: str, after: str, doc_a: Document, doc_b: Document) -> FileComparison:
    return FileComparison(before, after, diff(doc_a, doc_b), tuple(document_kernel_changes(doc_a, doc_b)))


def compare_files(before: Union[str, "os.PathLike[str]"], after: Union[str, "os.PathLike[str]"]) -> FileComparison:
    """Read two RelayViz documents or graph JSON files and diff them (and their kernels' loop nests)."""
    return _compared(os.fspath(before), os.fspath(after), read_document(before), read_document(after))


def compare_pass(trace: Union[str, "os.PathLike[str]"], selector: Union[str, int]) -> FileComparison:
    """The diff of one pass of a trace directory (``selector``: a pass name or an event index,
    as :func:`~relayviz_instrument.analysis.selection.select_event` takes it), before against after."""
    loaded = load_trace(trace)
    record = select_event(loaded, selector)
    if not (record.before and record.after):
        why = record.note or "its module was not snapshotted: TIR-only, or left out by passes=/exclude="
        raise RelayVizUsageError(f"{loaded.path}: pass event #{record.index} ({printable(record.name)}) has no "
                                 f"snapshots ({why})")
    before, after = loaded.snapshot_path(record.before), loaded.snapshot_path(record.after)
    return _compared(f"{printable(record.name)} #{record.index} before ({before.name})", f"after ({after.name})",
                     read_document(before), read_document(after))


@dataclass
class TraceComparison:
    """Two traces aligned pass by pass (:func:`~relayviz_instrument.analysis.alignment.align`), with the
    names to show for them: the side-by-side pass table, then the first divergence."""

    name_a: str
    name_b: str
    alignment: Alignment
    everything: bool = False

    @property
    def same(self) -> bool:
        """Whether both ran the same passes with the same outputs: exit status 0 for diff(1)."""
        return self.alignment.same

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for label, name, trace in (("A", self.name_a, self.alignment.trace_a),
                                   ("B", self.name_b, self.alignment.trace_b)):
            line = Text(f"{label}: ", style="bold")
            line.append(printable(name, None), style="cyan")
            line.append(f"  ({_events(trace)} pass events)", style="dim")
            yield line
        yield AlignmentTable(self.alignment, everything=self.everything)
        yield DivergenceView(self.alignment)

    def to_json(self) -> Dict[str, Any]:
        """``{a, b, same, pairs, first_divergence, divergences}``; ``docs/json.md`` says what each key holds."""
        first: Optional[Dict[str, Any]] = None
        index = self.alignment.first_divergence_index
        if index is not None:
            pair = self.alignment.pairs[index]
            first = {"pair": index, **pair.to_json(), "diff": None if pair.diff is None else pair.diff.to_json()}
        return {"a": {"trace": self.name_a, "events": _events(self.alignment.trace_a)},
                "b": {"trace": self.name_b, "events": _events(self.alignment.trace_b)},
                "same": self.same, "pairs": [p.to_json() for p in self.alignment.pairs],
                "first_divergence": first, "divergences": len(self.alignment.divergences)}


def _events(trace: Optional[TraceLike]) -> int:
    return 0 if trace is None else len(trace.records)


TraceSource = Union[str, "os.PathLike[str]", TraceLike]


def compare_traces(trace_a: TraceSource, trace_b: TraceSource, *, everything: bool = False) -> TraceComparison:
    """Align two compilations pass by pass: each a trace directory (read with ``load_trace``)
    or a trace already in memory (a :class:`~relayviz_instrument.RelayVizTrace` or a
    :class:`~relayviz_instrument.store.Trace`). ``everything`` makes the table list every
    pair, not only those where something happened."""
    sides: List[Tuple[str, TraceLike]] = []
    for trace in (trace_a, trace_b):
        if isinstance(trace, (str, os.PathLike)):
            loaded = load_trace(trace)
            sides.append((os.fspath(trace), loaded))
        else:
            sides.append((str(getattr(trace, "path", None) or "(in memory)"), trace))
    return TraceComparison(sides[0][0], sides[1][0], align(sides[0][1], sides[1][1]), everything)
