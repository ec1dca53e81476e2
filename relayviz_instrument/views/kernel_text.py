"""A kernel's loop nest as lines of text: one line per loop, block, allocation, barrier, store
and conditional, indented by nesting, bound loops marked. The terminal (:class:`LoopNestView`),
the JSON outputs and the HTML report (:func:`nest_lines`) show the same lines.

A loop reads as TVMScript's range and kind (``for ax1_2 in 0..8 threadIdx.x``, ``for k in
0..64 unrolled``), a thread launch of lowered code as ``launch threadIdx.x in 0..8``, a block
as its name, iteration variables, and what it writes and reads, an allocation as ``alloc
A_shared float32[8, 4096] shared``; an item repeated (an unrolled body) ends with ``  ×N``.

A kernel's change as one line of a report (:func:`kernel_change_text`): ``scheduled @K: i1 split
32 → blockIdx.x(1) × threadIdx.x(8) × 4; +shared A_shared float32[8, 4096]``, the verb coloured
(see :mod:`~relayviz_instrument.analysis.schedule_changes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple, Union

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from ..analysis.loop_nest import (ALLREDUCE, THREAD_BINDING, Alloc, Block, Branch, Dim, Loop, LoopNest, NestItem, Store,
                                  Sync)
from ..analysis.schedule_changes import SCHEDULED, SPLIT, KernelChange
from ..names import printable

__all__ = ["NestLine", "nest_lines", "LoopNestView", "loop_text", "alloc_text", "wrapped", "STYLES",
           "kernel_change_text", "kernel_change_lines"]

#: How each kind of line is styled in a terminal (the HTML report has a class per kind).
STYLES = {"bound": "bold cyan", "alloc": "magenta", "sync": "yellow", "block": "green", "launch": "bold cyan",
          "call": "yellow", "if": "", "else": "", "init": "dim", "loop": "", "store": "dim"}


@dataclass(frozen=True)
class NestLine:
    """One line of a loop nest: its depth (0 outermost), text, and kind (``loop``, ``bound``
    for a loop on a thread, ``block``, ``alloc``, ``sync``, ``store``, ``if``, ``else``,
    ``init``, ``call``, ``launch``)."""

    depth: int
    text: str
    kind: str

    def to_json(self) -> List[Any]:
        """``[depth, text, kind]``: the compact form the HTML report embeds."""
        return [self.depth, self.text, self.kind]


def _end(lo: Dim, extent: Dim) -> Dim:
    if isinstance(lo, int) and isinstance(extent, int):
        return lo + extent
    return extent if lo == 0 else f"{lo} + {extent}"


def loop_text(loop: Loop) -> str:
    """``for ax1_2 in 0..8 threadIdx.x``, ``for k in 0..64 unrolled``, ``launch blockIdx.x in
    0..128``, ``while cond``."""
    if loop.kind == "while":
        return f"while {loop.extent}"
    span = f"{loop.min}..{_end(loop.min, loop.extent)}"
    if not loop.var:
        return f"launch {loop.thread} in {span}"
    text = f"for {loop.var} in {span}"
    if loop.kind not in ("serial", THREAD_BINDING):
        text += f" {loop.kind}"
    if loop.thread:
        text += f" {loop.thread}"
    return text


def alloc_text(alloc: Alloc) -> str:
    """``A_shared float32[8, 4096] shared``."""
    return f"{alloc.buffer} {alloc.dtype}[{', '.join(str(d) for d in alloc.shape)}] {alloc.scope}"


def _block_text(block: Block) -> str:
    axes = ", ".join(f"{iv.name} {iv.extent}" + ("" if iv.kind == "spatial" else f" {iv.kind}")
                     for iv in block.iter_vars)
    text = f"block {block.name}" + (f" [{axes}]" if axes else "")
    if block.writes:
        text += "  writes " + ", ".join(block.writes)
    if block.reads:
        text += "  reads " + ", ".join(block.reads)
    if block.predicate:
        text += f"  if {block.predicate}"
    return text


def _times(repeat: int) -> str:
    return f"  ×{repeat}" if repeat != 1 else ""


def nest_lines(nest: LoopNest) -> List[NestLine]:
    """The lines of ``nest``, outermost first (names from the trace made printable)."""
    out: List[NestLine] = []
    # (depth, item or word line): a stack rather than recursion, for nests of any depth.
    pending: List[Tuple[int, Union[NestItem, str]]] = [(0, item) for item in reversed(nest.items)]
    while pending:
        depth, item = pending.pop()
        if isinstance(item, str):  # ``init`` or ``else``
            out.append(NestLine(depth, item, item))
            continue
        text, kind, nested = _line(item)
        out.append(NestLine(depth, printable(text + _times(item.repeat)), kind))
        pending.extend((depth + offset, entry) for offset, entry in reversed(nested))
    return out


def _line(item: NestItem) -> Tuple[str, str, List[Tuple[int, Union[NestItem, str]]]]:
    """An item's text and kind, and what goes under it: ``(levels deeper, item or word line)``."""
    nested: List[Tuple[int, Union[NestItem, str]]] = []
    if isinstance(item, Loop):
        kind = "launch" if not item.var and item.thread else "bound" if item.bound else "loop"
        return loop_text(item), kind, [(1, x) for x in item.body]
    if isinstance(item, Block):
        if item.init:
            nested = [(1, "init")] + [(2, x) for x in item.init]
        return _block_text(item), "block", nested + [(1, x) for x in item.body]
    if isinstance(item, Alloc):
        return "alloc " + alloc_text(item), "alloc", nested
    if isinstance(item, Sync):
        return f"sync {item.scope}", "sync", nested
    if isinstance(item, Store):
        return f"store {item.buffer}", "store", nested
    if isinstance(item, Branch):
        nested = [(1, x) for x in item.then]
        if item.orelse:
            nested += [(0, "else")] + [(1, x) for x in item.orelse]
        return f"if {item.condition}", "if", nested
    if item.op == ALLREDUCE:
        return "allreduce across threads", "call", nested
    return f"launch kernel @{item.target}", "call", nested


def wrapped(text: Text, console: Console, width: int, indent: int = 0) -> List[Text]:
    """``text`` wrapped to ``width`` columns, each part under ``indent`` spaces, without the
    spaces a wrap leaves at the end of a part (nothing is padded to the width)."""
    out = []
    for part in text.wrap(console, max(8, width - indent)):
        part.rstrip()
        out.append(Text(" " * indent) + part)
    return out


class LoopNestView:
    """A loop nest for the terminal: one line per item, indented two spaces a level (and
    ``indent`` levels more); a long line wraps under its own indentation. Bound loops are bold
    cyan."""

    def __init__(self, nest: LoopNest, *, indent: int = 0) -> None:
        self.nest = nest
        self.indent = indent

    def lines(self) -> List[NestLine]:
        return nest_lines(self.nest)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        room = max(8, options.max_width // 2)
        for line in self.lines():
            pad = min(room, 2 * (line.depth + self.indent))
            yield from wrapped(Text(line.text, style=STYLES.get(line.kind, "")), console, options.max_width, pad)

    def to_json(self) -> Dict[str, Any]:
        return {**self.nest.to_json(), "lines": [line.to_json() for line in self.lines()]}

_VERB_STYLE = {SCHEDULED: "bold cyan", SPLIT: "bold magenta"}


def kernel_change_text(change: KernelChange) -> Text:
    """One change as a line: its verb styled, the rest as :meth:`KernelChange.text` says it."""
    text = Text()
    text.append(change.verb, style=_VERB_STYLE.get(change.verb, "bold yellow"))
    text.append(printable(change.text()[len(change.verb):]))
    return text


def kernel_change_lines(changes: Sequence[KernelChange]) -> List[Text]:
    """Every change of a pass, one line each, in order."""
    return [kernel_change_text(c) for c in changes]
