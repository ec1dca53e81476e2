"""A kernel change as one line of a report: ``scheduled @K: i1 split 32 → blockIdx.x(1) ×
threadIdx.x(8) × 4; +shared A_shared float32[8, 4096]``, the verb coloured (see
:mod:`~relayviz_instrument.analysis.schedule_changes`)."""

from __future__ import annotations

from typing import List, Sequence

from rich.text import Text

from ..analysis.schedule_changes import SCHEDULED, SPLIT, KernelChange
from ..names import printable

__all__ = ["kernel_change_text", "kernel_change_lines"]

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
