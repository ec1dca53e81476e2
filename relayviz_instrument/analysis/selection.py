"""The pass event a command's ``--pass`` names: by index or by name."""

from __future__ import annotations

from typing import List, Union

from ..errors import RelayVizUsageError
from ..store import PassRecord, TraceLike

__all__ = ["select_event"]


def select_event(trace: TraceLike, selector: Union[str, int]) -> PassRecord:
    """The pass event of ``trace`` that ``--pass`` names: an index (``12`` or ``#12``), or a
    pass name. A name that several events carry selects the one that changed the module; if
    several did, the message lists their indices to choose from. Raises
    :class:`RelayVizUsageError` naming the trace when nothing matches.
    """
    records: List[PassRecord] = list(trace.records)
    where = str(getattr(trace, "path", None) or "the trace")
    text = str(selector).strip()
    if text.lstrip("#").isdigit():
        index = int(text.lstrip("#"))
        for record in records:
            if record.index == index:
                return record
        raise RelayVizUsageError(f"{where}: no pass event #{index} (the trace has events #0 to "
                                 f"#{len(records) - 1}; `relayviz show --all` lists them)")
    named = [r for r in records if r.name == text]
    if not named:
        close = sorted({r.name for r in records if text.lower() in r.name.lower()})[:8]
        hint = f"; passes with a similar name: {', '.join(close)}" if close else "; `relayviz show --all` lists them"
        raise RelayVizUsageError(f"{where}: no pass named {text!r}{hint}")
    changed = [r for r in named if r.changed]
    if len(changed) > 1:
        raise RelayVizUsageError(f"{where}: {text} changed the module in {len(changed)} events ("
                                 + ", ".join(f"#{r.index}" for r in changed) + "); pass one of these indices")
    return changed[0] if changed else named[0]
