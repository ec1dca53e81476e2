"""What ``relayviz export`` and ``relayviz view`` draw: a snapshot or graph JSON file, one pass
event of a trace (``--pass``), or every pass of a trace that changed the module; each as its
output graph or, with ``--diff``, as its input and output compared node by node."""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, Union

from ..diff import diff as diff_documents
from ..errors import RelayVizUsageError
from ..analysis.reading import TraceReading
from ..store.documents import read_document
from ..analysis.selection import select_event
from ..store import PassRecord, Trace, load_trace
from .base import ExportGraph

__all__ = ["resolve_graphs", "trace_graphs", "passes_to_draw"]


def resolve_graphs(source: Union[str, "os.PathLike[str]"], *, select: Union[str, int, None] = None,
                   diff: bool = False) -> List[ExportGraph]:
    """The graphs to draw from ``source``: a file (a RelayViz snapshot or graph JSON) gives its
    graph; a trace directory gives the pass event ``select`` names (index or pass name, as
    ``--pass``), or every pass that changed the module (:func:`passes_to_draw`). With
    ``diff``, each pass's graph carries its input document and the diff of the two.
    Raises :class:`RelayVizUsageError` for an option the source cannot honour.
    """
    path = Path(source)
    if path.is_dir():
        return trace_graphs(load_trace(path), select=select, diff=diff)
    if select is not None:
        raise RelayVizUsageError(f"{path}: --pass picks a pass event of a trace directory, and this is a file "
                                 "(pass the trace directory instead)")
    if diff:
        raise RelayVizUsageError(f"{path}: --diff draws what a pass changed, from a trace directory "
                                 "(pass the trace directory and --pass NAME)")
    return [ExportGraph(name=path.name, document=read_document(path), source=str(path))]


def passes_to_draw(reading: TraceReading) -> List[PassRecord]:
    """The pass events that changed the pipeline's module, innermost only: a Sequential whose
    passes changed it is left out (its passes are in), and so are passes that ran on
    temporary modules (see :attr:`~relayviz_instrument.analysis.reading.TraceReading.pipeline`)."""
    on = reading.pipeline
    changed = [r for r in reading.records if r.changed and r.index in on and r.before and r.after]
    parents = {r.parent for r in changed}
    return [r for r in changed if r.index not in parents]


def trace_graphs(trace: Trace, *, select: Union[str, int, None] = None, diff: bool = False) -> List[ExportGraph]:
    """The graphs of the pass event ``select`` of ``trace``, or of its :func:`passes_to_draw`."""
    if select is not None:
        records = [select_event(trace, select)]
    else:
        records = passes_to_draw(TraceReading(trace))
        if not records:
            raise RelayVizUsageError(f"{trace.path}: no pass changed the module; pick an event with --pass "
                                     "(`relayviz show --all` lists them)")
    return [_event_graph(trace, record, diff) for record in records]


def _event_graph(trace: Trace, record: PassRecord, diff: bool) -> ExportGraph:
    name = f"#{record.index} {record.name}"
    missing: Optional[str] = None
    if record.after is None:
        missing = "output"
    elif diff and record.before is None:
        missing = "input"
    if missing is not None or record.after is None:
        why = record.error or record.note or "the trace did not snapshot it"
        raise RelayVizUsageError(f"{trace.path}: pass event {name} has no {missing} snapshot ({why}); "
                                 "pick another event with --pass")
    after = trace.snapshot(record.after)
    source = str(trace.snapshot_path(record.after))
    if not diff:
        return ExportGraph(name=name, document=after, source=source)
    assert record.before is not None
    before = trace.snapshot(record.before)
    return ExportGraph(name=name, document=after, source=source, before=before, diff=diff_documents(before, after))
