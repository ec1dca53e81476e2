"""``relayviz report TRACE --html OUT.html``: a trace as one self-contained HTML page.

One module per concern::

    graphs.py    a snapshot and a pass as the page draws them (pure)
    payload.py   everything the page shows, as JSON-able data (pure)
    page.py      the page: the viewer (assets/, built from web/ by `make web`) and the data
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

from .._files import atomic_write_bytes
from ..analysis.reading import TraceReading
from ..store import TraceLike
from .page import render_page
from .payload import COLLAPSE_ABOVE, report_data

__all__ = ["write_html_report", "render_html_report", "report_data"]


def render_html_report(trace: TraceLike, *, reading: Optional[TraceReading] = None,
                       collapse_above: int = COLLAPSE_ABOVE) -> bytes:
    """The HTML report of ``trace`` as bytes: the pass list, each changed pass's graph coloured
    by its diff and its hunks, and every node's history. The same trace gives the same bytes.
    Graphs of more than ``collapse_above`` nodes open with their unchanged regions collapsed.
    ``reading``: the trace's reading, if made already."""
    return render_page(report_data(trace, reading=reading, collapse_above=collapse_above))


def write_html_report(trace: TraceLike, path: Union[str, "os.PathLike[str]"], *,
                      reading: Optional[TraceReading] = None, collapse_above: int = COLLAPSE_ABOVE) -> Path:
    """Write the HTML report of ``trace`` (see :func:`render_html_report`) to ``path``,
    atomically; return the path. The file needs no network: script, style and data are inside."""
    target = Path(path)
    atomic_write_bytes(target, render_html_report(trace, reading=reading, collapse_above=collapse_above))
    return target
