"""relayviz_instrument: a pass-by-pass account of what TVM's passes do to a model.

The pipeline, one module (or small package) per stage; ``docs/architecture.md`` draws it::

    capture/ (RelayVizTrace) -> serialize/ (IR -> RelayViz) -> store/ (trace directory)
                                     |
              diff/ (graph matching) -> views and use cases (rich) / export/ (netron, ...)

The public API is re-exported here. Names that need TVM (the instrument) are imported when
first used, so the package imports without TVM, and on a TVM without Relay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__
from .analysis.alignment import AlignedPass, Alignment, align
from .views.comparison import FileComparison, TraceComparison, compare_files, compare_traces
from .diff import DIFF_VERSION, GraphDiff, diff
from .views.diff_tree import DiffView, OpDeltaTable
from .errors import (CompilationInterrupted, GraphJSONError, RelayVizDependencyError, RelayVizError,
                     RelayVizExportError, RelayVizFormatError, RelayVizIOError, RelayVizSerializeError,
                     RelayVizTraceError, RelayVizUsageError, RelayVizWarning, TraceIncompleteWarning,
                     UnknownNodeKindWarning)
from .export import export, write_netron
from .format import FORMAT, VERSION, load, loads, validate
from .graph_json.summary import GraphSummary, summarize_graph
from .graph_json import from_graph_json, to_graph_executor_json
from .views.graph_report import GraphReport, inspect_graph
from .analysis.pass_diffs import PassDiffs
from .views.bisection import BisectResult, bisect_command
from .views.pass_replay import ReplayResult, replay_event
from .views.trace_report import TraceReport, report_trace
from .serialize import dumps, to_relayviz
from .store.documents import read_document
from .store import PassRecord, Trace, load_trace
from .views.overview import PassTable, TraceOverview, TraceSummary, show_trace

if TYPE_CHECKING:  # imported lazily at run time (they import TVM): see __getattr__
    from .capture import RelayVizBisect, RelayVizTrace, trace_build, trace_compile

__all__ = [
    "__version__",
    # capture
    "RelayVizTrace",
    "RelayVizBisect",
    "trace_build",
    "trace_compile",
    # serialize and the format
    "to_relayviz",
    "dumps",
    "FORMAT",
    "VERSION",
    "load",
    "loads",
    "validate",
    "read_document",
    "from_graph_json",
    "to_graph_executor_json",
    # store
    "PassRecord",
    "Trace",
    "load_trace",
    # diff
    "diff",
    "DIFF_VERSION",
    "GraphDiff",
    "PassDiffs",
    # use cases and their views
    "show_trace",
    "TraceOverview",
    "TraceSummary",
    "PassTable",
    "report_trace",
    "TraceReport",
    "DiffView",
    "OpDeltaTable",
    "compare_files",
    "FileComparison",
    "align",
    "Alignment",
    "AlignedPass",
    "compare_traces",
    "TraceComparison",
    "inspect_graph",
    "GraphReport",
    "replay_event",
    "ReplayResult",
    "bisect_command",
    "BisectResult",
    "summarize_graph",
    "GraphSummary",
    # export
    "export",
    "write_netron",
    # errors and warnings
    "RelayVizError",
    "RelayVizUsageError",
    "RelayVizFormatError",
    "GraphJSONError",
    "RelayVizIOError",
    "RelayVizTraceError",
    "RelayVizSerializeError",
    "RelayVizExportError",
    "RelayVizDependencyError",
    "RelayVizWarning",
    "UnknownNodeKindWarning",
    "TraceIncompleteWarning",
    "CompilationInterrupted",
]

_LAZY = {"RelayVizTrace": "capture", "RelayVizBisect": "capture", "trace_build": "capture", "trace_compile": "capture"}


def __getattr__(name: str) -> object:  # PEP 562: TVM is imported only when the instrument is asked for
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
