"""``compare_files``, ``compare_pass`` and ``compare_traces``: two snapshots (or graph JSON files)
or one pass of a trace diffed node by node, and two traces aligned pass by pass — the use cases
behind ``relayviz diff``.

Two traces' alignment (:class:`~relayviz_instrument.analysis.alignment.Alignment`) shows as a
side-by-side pass table (:class:`AlignmentTable`) and its first divergence, with its node-level
diff and the count of the others (:class:`DivergenceView`). Both take the names the two sides go
by (``A``/``B`` on the command line, ``the snapshot`` and ``this run`` in a failing regression
test) and never compute anything an alignment does not hold.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ..analysis.alignment import ONLY_A, ONLY_B, SAME, AlignedPass, Alignment, align
from ..analysis.schedule_changes import KernelChange, document_kernel_changes
from ..analysis.selection import select_event
from ..diff import GraphDiff, diff
from ..errors import RelayVizUsageError
from ..format import Document
from ..format.irs import ARTIFACT_IRS
from ..names import printable
from ..store import PassRecord, TraceLike, load_trace
from ..store.documents import read_document
from .hunk_tree import DiffView, diff_counts
from .kernel_text import kernel_change_lines
from .show import changed_text

__all__ = ["FileComparison", "compare_files", "compare_pass", "TraceComparison", "compare_traces", "AlignmentTable",
           "DivergenceView", "count_line"]

#: Later divergences named in the count line before "…".
_NAMED = 5


@dataclass(frozen=True)
class AlignmentTable:
    """Pass by pass, side by side: the pass (indented by depth), whether each side ran it,
    changed its module and how long it took, and how the outputs compare (``same``, or the
    ``+ − ~`` of the diff from A's output to B's). By default only rows where something
    happened are shown: a side changed its module, only one side ran the pass, or the pair
    diverges (with the pairs enclosing them); ``everything`` shows every pair."""

    alignment: Alignment
    labels: Tuple[str, str] = ("A", "B")
    everything: bool = False

    def rows(self) -> List[AlignedPass]:
        """The pairs the table shows."""
        pairs = self.alignment.pairs
        if self.everything:
            return list(pairs)
        shown = [p.diverges or p.status in (ONLY_A, ONLY_B)
                 or any(r is not None and r.changed and not scratch for r, scratch in zip((p.a, p.b), p.scratch))
                 for p in pairs]
        open_: List[int] = []  # the pairs enclosing the current one: shown with any pair they hold
        for i, pair in enumerate(pairs):
            while open_ and pairs[open_[-1]].depth >= pair.depth:
                open_.pop()
            if shown[i]:
                for j in open_:
                    shown[j] = True
            open_.append(i)
        return [p for p, keep in zip(pairs, shown) if keep]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rows = self.rows()
        hidden = len(self.alignment.pairs) - len(rows)
        if rows:
            table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1),
                          collapse_padding=True)
            table.add_column("pass", no_wrap=True)
            for label in self.labels:
                table.add_column(label, justify="center", no_wrap=True)
                table.add_column("ms", justify="right", no_wrap=True, style="dim")
            table.add_column("outputs", no_wrap=True)
            for pair in rows:
                name = Text("  " * (pair.depth - 1) + printable(pair.name), style="bold" if pair.diverges else "")
                table.add_row(name, *_side_cells(pair.a, pair.scratch[0]), *_side_cells(pair.b, pair.scratch[1]),
                              self._outputs_cell(pair))
            if not console.is_terminal:  # a file or a pipe: keep every name whole
                natural = Measurement.get(console, options.update(max_width=10_000), table).maximum
                options = options.update(max_width=max(options.max_width, natural))
            yield from console.render(table, options)
        if hidden:
            yield Text(f"{hidden} more pass events changed nothing on either side (--all lists them)", style="dim")

    def _outputs_cell(self, pair: AlignedPass) -> Text:
        text = Text()
        if pair.status in (ONLY_A, ONLY_B):
            text.append(f"only {self.labels[0] if pair.status == ONLY_A else self.labels[1]}  ", style="magenta")
        if pair.output_a == pair.output_b or (pair.status == SAME):
            text.append("same", style="dim")
        elif pair.diff is None:
            text.append("differ (not recorded)", style="yellow")
        else:
            text.append_text(diff_counts(pair.diff.summary))
        return text


def _side_cells(record: Optional[PassRecord], scratch: bool) -> Tuple[Text, str]:
    """Whether the event changed its module (``—``: that side did not run the pass; ``scratch``:
    it worked on a temporary module), and its time."""
    if record is None:
        return Text("—", style="dim"), ""
    changed = Text("scratch", style="dim italic") if scratch else changed_text(record)
    return changed, "" if record.ir in ARTIFACT_IRS else f"{record.duration_ms:,.2f}"


def count_line(alignment: Alignment, labels: Tuple[str, str] = ("A", "B")) -> str:
    """One line counting the divergences after the first, naming the first few, and the passes
    after it that ran on one side only and changed nothing."""
    first = alignment.first_divergence_index
    later = alignment.pairs[0 if first is None else first + 1:]
    diverging = [p for p in later if p.diverges]
    idle = sum(1 for p in later if p.status in (ONLY_A, ONLY_B) and not p.diverges)
    if diverging:
        names = [printable(p.name) + ("" if p.status not in (ONLY_A, ONLY_B) else
                           f" (only {labels[0] if p.status == ONLY_A else labels[1]})") for p in diverging]
        shown = ", ".join(names[:_NAMED]) + (", …" if len(names) > _NAMED else "")
        text = f"{len(diverging)} later divergence{'s' if len(diverging) > 1 else ''}: {shown}"
    else:
        text = "no later divergence"
    if idle:
        text += f"; {idle} later pass event{'s' if idle > 1 else ''} ran on one side only and changed nothing"
    return text


@dataclass(frozen=True)
class DivergenceView:
    """Where two compilations part ways: the passes before the first divergence that ran on
    one side only (they changed nothing), the first divergence with its node-level diff as
    ``relayviz report`` prints it (what ``labels[1]``'s module has that ``labels[0]``'s has
    not), and one line counting the other differences."""

    alignment: Alignment
    labels: Tuple[str, str] = ("A", "B")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        a, b = self.labels
        first = self.alignment.first_divergence
        idle = _idle_line(self.alignment.pairs[:self.alignment.first_divergence_index], self.labels)
        if first is None:
            if idle:
                yield Text(f"no divergence: every pass left the same module in {a} and {b}, but {idle}")
            else:
                yield Text(f"no divergence: {a} and {b} ran the same passes and left the same modules")
            return
        if idle:
            yield Text(f"before the first divergence, {idle}", style="magenta")
        line = Text("first divergence: ", style="bold")
        line.append(first.describe(a, b), style="bold")
        yield line
        if first.diff is None:
            yield Text("  one of the two modules was not recorded, so they cannot be compared node by node",
                       style="yellow")
        else:
            title = f"{a}'s module → {b}'s module after {first.name}"
            yield DiffView(first.diff, title, [f"{first.diff.nodes_before} → {first.diff.nodes_after} nodes"])
        yield Text(count_line(self.alignment, self.labels))


def _idle_line(pairs: List[AlignedPass], labels: Tuple[str, str]) -> str:
    """``3 pass events ran only in B and changed nothing (EliminateCommonSubexpr, InferType ×2)``,
    for the one-sided pairs among ``pairs``; empty if there are none."""
    parts = []
    total = 0
    for status, label in ((ONLY_A, labels[0]), (ONLY_B, labels[1])):
        names: Dict[str, int] = {}
        for pair in pairs:
            if pair.status == status:
                names[pair.name] = names.get(pair.name, 0) + 1
        if names:
            total += sum(names.values())
            listed = ", ".join(printable(name) + (f" ×{count}" if count > 1 else "") for name, count in names.items())
            parts.append(f"only in {label}: {listed}")
    if not total:
        return ""
    events = f"{total} pass event{'s' if total > 1 else ''}"
    return f"{events} that changed nothing ran on one side only ({'; '.join(parts)})"




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
