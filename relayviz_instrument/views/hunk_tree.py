"""Rich renderables for diffs: one diff's header and hunk tree, and the op-count table.

Each class is a plain object with ``__rich_console__``; printing it (``console.print(view)``)
renders it. They take a :class:`~relayviz_instrument.diff.GraphDiff` and never compute one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..diff.changes import type_text
from ..diff.model import FieldChange, GraphDiff, Hunk, NodeInfo
from ..names import printable, shorten

__all__ = ["DiffView", "OpDeltaTable", "diff_counts", "field_changes_text"]

#: Node lines shown under a hunk before "… N more".
NODE_LINES = 6
#: Function names listed under a group of hunks, each on one function, before "+N more".
FUNCTION_NAMES = 48
#: Characters of one field value shown before "…".
VALUE_CHARS = 48

_KIND_STYLE = {
    "replaced": "magenta", "merged": "blue", "wrapped": "cyan", "unwrapped": "cyan", "lowered": "cyan",
    "inserted": "green", "added": "green", "removed": "red", "changed": "yellow", "rewired": "blue",
}


def diff_counts(summary: Mapping[str, Any]) -> Text:
    """``+added −removed ~changed-or-rewired`` from a diff summary, coloured."""
    text = Text()
    text.append(f"+{summary.get('added', 0)}", style="green")
    text.append(" ")
    text.append(f"−{summary.get('removed', 0)}", style="red")
    text.append(" ")
    text.append(f"~{summary.get('changed', 0) + summary.get('rewired', 0)}", style="yellow")
    return text


@dataclass(frozen=True)
class DiffView:
    """A header line (``title``, ``details``, counts), the ``notes`` (the kernels whose loop
    nests changed, one line each), and the diff's hunks as a tree.

    Hunks of the same kind and label are shown once, with their count; the first of them
    lists its nodes (at most ``node_lines``): ``−`` removed, ``+`` added, ``~`` changed
    (with each field, old → new) or rewired, ``=`` moved into or out of a function. A group
    whose hunks are each one whole function (a pass that changed the same attribute of many
    PrimFuncs) names every function it holds.
    """

    diff: GraphDiff
    title: str
    details: Sequence[str] = ()
    node_lines: int = NODE_LINES
    #: Lines shown above the hunks: what the change did to each kernel's loop nest.
    notes: Sequence[Text] = ()

    def header(self) -> Text:
        text = Text(printable(self.title), style="bold")
        for detail in self.details:
            text.append("  ")
            text.append(printable(detail, None), style="dim")
        text.append("  ")
        text.append_text(diff_counts(self.diff.summary))
        return text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        tree = Tree(self.header(), guide_style="dim")
        for note in self.notes:
            tree.add(note)
        if self.diff.is_empty:
            tree.add(Text("no differences", style="dim"))
        for group in self.diff.groups():
            hunk = self.diff.hunks[group.first]
            label = Text()
            label.append(group.kind, style=_KIND_STYLE.get(group.kind, ""))
            if group.count > 1:
                label.append(f" ×{group.count}", style="bold")
            label.append("  " + printable(group.label))
            branch = tree.add(label)
            lines = list(self._lines(hunk))
            shown = lines if len(lines) <= self.node_lines else lines[: self.node_lines - 1]
            for line in shown:
                branch.add(line)
            if len(shown) < len(lines):
                branch.add(Text(f"… {len(lines) - len(shown)} more", style="dim"))
            if group.count > 1:
                names = self._functions(group.kind, group.label)
                if names:
                    listed = ", ".join(printable(n) for n in names[:FUNCTION_NAMES])
                    more = f", +{len(names) - FUNCTION_NAMES} more" if len(names) > FUNCTION_NAMES else ""
                    branch.add(Text(f"in {listed}{more}", style="dim"))
        for change in self.diff.module:
            line = Text()
            line.append("module", style="yellow")
            what = "added" if change.before is None else "removed" if change.after is None else "changed"
            line.append(f"  {printable(change.field)} {what}")
            if what == "changed":
                line.append("  ")
                line.append_text(field_changes_text([change]))
            tree.add(line)
        yield tree

    def _functions(self, kind: str, label: str) -> List[str]:
        """The functions (``@name``) of the hunks of one group, if each hunk is one function."""
        diff = self.diff
        names = []
        for hunk in diff.hunks:
            if (hunk.kind, hunk.label) != (kind, label):
                continue
            nodes = ([diff.info_after[b] for _, b in hunk.matched] + [diff.info_after[b] for b in hunk.added]
                     + [diff.info_before[a] for a in hunk.removed])
            if len(nodes) != 1 or nodes[0].kind not in _FUNCTION_KINDS or not nodes[0].detail.startswith("@"):
                return []
            names.append(nodes[0].detail)
        return names

    def _lines(self, hunk: Hunk) -> List[Text]:
        diff = self.diff
        changed = {m.before: m for m in diff.changed}
        rewired = {m.before: m for m in diff.rewired}
        gone = [_node_line("−", "red", diff.info_before[nid]) for nid in _ordered(hunk.removed, diff.info_before)]
        came = [_node_line("+", "green", diff.info_after[nid]) for nid in _ordered(hunk.added, diff.info_after)]
        pairs = []
        for a, b in sorted(hunk.matched, key=lambda ab: diff.info_after[ab[1]].kind != "Call"):
            info = diff.info_after[b]
            if a in changed:
                line = _node_line("~", "yellow", info, with_type=False)
                line.append("  ")
                line.append_text(field_changes_text(changed[a].fields))
                if changed[a].inputs_changed:
                    line.append(", inputs rewired", style="blue")
            elif a in rewired:
                line = _node_line("~", "blue", info)
                line.append("  inputs rewired", style="blue")
            else:
                line = _node_line("=", "dim", info)
            pairs.append(line)
        if hunk.kind == "wrapped":  # the new function, what moved into it, then its call and parameters
            return came[:1] + pairs + came[1:]
        if hunk.kind == "unwrapped":
            return gone[:1] + pairs + gone[1:]
        return gone + came + pairs


#: The node kinds of a module's functions.
_FUNCTION_KINDS = ("PrimFunc", "Function")


def _ordered(ids: Sequence[int], info: Mapping[int, NodeInfo]) -> List[int]:
    """Functions first, then calls, then the rest, each in the diff's order."""
    rank = {"Function": 0, "Call": 1}
    return sorted(ids, key=lambda nid: rank.get(info[nid].kind, 2))


def _node_line(mark: str, style: str, info: NodeInfo, with_type: bool = True) -> Text:
    line = Text()
    line.append(mark + " ", style=style)
    line.append(printable(info.name), style="bold")
    if info.detail:
        line.append(" " + printable(info.detail))
    if with_type and info.type:
        line.append("  " + printable(info.type), style="dim")
    return line


def field_changes_text(changes: Sequence[FieldChange]) -> Text:
    text = Text()
    for i, change in enumerate(changes):
        if i:
            text.append(", ")
        text.append(printable(change.field) + ": ")
        text.append(_value_text(change.field, change.before), style="red")
        text.append(" → ")
        text.append(_value_text(change.field, change.after), style="green")
    return text


def _value_text(name: str, value: Any) -> str:
    if value is None:
        return "none"
    if name in ("type", "ret_type") and isinstance(value, dict):
        text = type_text(value)
    elif isinstance(value, str):
        text = value
    elif isinstance(value, dict) and "digest" in value:
        text = str(value["digest"])[:19]
    else:
        text = json.dumps(value, ensure_ascii=False)
    return printable(text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…")


@dataclass(frozen=True)
class OpDeltaTable:
    """Operator calls added and removed, summed over passes.

    ``passes`` holds ``(pass name, op delta)`` pairs: a diff's ``op_delta`` (or the ``ops`` of
    its summary), or for nested passes what :func:`own_op_deltas` makes of them. One row per
    operator, sorted by name.
    """

    passes: Sequence[Tuple[str, Mapping[str, int]]]
    title: str = "operator calls across the pipeline"
    rows: Dict[str, Tuple[int, int, List[str]]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rows: Dict[str, Tuple[int, int, List[str]]] = {}
        for name, delta in self.passes:
            for op, count in delta.items():
                plus, minus, names = rows.get(op, (0, 0, []))
                if count > 0:
                    plus += count
                else:
                    minus -= count
                if name not in names:
                    names = names + [name]
                rows[op] = (plus, minus, names)
        object.__setattr__(self, "rows", dict(sorted(rows.items())))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self.rows:
            return
        names = {op: printable(op) for op in self.rows}
        numbers = max(len(f"{plus}  {minus}  {plus - minus:+d}") for plus, minus, _ in self.rows.values()) + 8
        if console.is_terminal:
            # A narrow terminal shortens operator names in the middle (kernel names differ at
            # their end: ..._nn_relu_1, ..._nn_relu_2) and wraps the pass lists.
            room = max(16, options.max_width - numbers - 24)
            names = {op: shorten(printable(op), room) for op in self.rows}
        else:
            widest = max(len(op) for op in names.values()) + numbers + max(
                len(", ".join(map(printable, n))) for _, _, n in self.rows.values())
            options = options.update(max_width=max(options.max_width, widest + 8))
        table = Table(title=self.title, title_justify="left", show_edge=False)
        table.add_column("operator", no_wrap=True)
        table.add_column("+", justify="right", style="green", no_wrap=True)
        table.add_column("−", justify="right", style="red", no_wrap=True)
        table.add_column("net", justify="right", no_wrap=True)
        table.add_column("passes", overflow="fold")
        for op, (plus, minus, passes) in self.rows.items():
            net = plus - minus
            table.add_row(names[op], str(plus), str(minus), f"{net:+d}".replace("-", "−"),
                          ", ".join(map(printable, passes)))
        yield from console.render(table, options)
