"""Rich renderables for an :class:`~relayviz_instrument.analysis.alignment.Alignment`: the side-by-side pass
table, and the first divergence with its node-level diff and the count of the others.

Both take the names the two sides go by (``A``/``B`` on the command line, ``the snapshot``
and ``this run`` in a failing regression test). They never compute anything an alignment does
not hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ..names import printable

from ..analysis.alignment import ONLY_A, ONLY_B, SAME, AlignedPass, Alignment
from ..format.irs import ARTIFACT_IRS
from .diff_tree import DiffView, diff_counts
from ..store import PassRecord
from .overview import changed_text

__all__ = ["AlignmentTable", "DivergenceView", "count_line"]

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
