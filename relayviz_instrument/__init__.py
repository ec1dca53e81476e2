"""relayviz_instrument: a pass-by-pass account of what TVM's passes do to a model.

The pipeline, one module (or small package) per stage; ``docs/architecture.md`` draws it::

    capture/ (RelayVizTrace) -> serialize/ (IR -> RelayViz) -> store/ (trace directory)
                                     |
              diff/ (graph matching) -> views and use cases (rich) / export/ (netron, ...)

The public API is re-exported here. Names that need TVM (the instrument) are imported when
first used, so the package imports without TVM, and on a TVM without Relay.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, List

from ._version import __version__
from .errors import (CompilationInterrupted, GraphJSONError, RelayVizDependencyError, RelayVizError,
                     RelayVizExportError, RelayVizFormatError, RelayVizIOError, RelayVizSerializeError,
                     RelayVizTraceError, RelayVizUsageError, RelayVizWarning, TraceIncompleteWarning,
                     UnknownNodeKindWarning)

if TYPE_CHECKING:  # imported when first used at run time: see __getattr__
    from .analysis.alignment import AlignedPass, Alignment, align
    from .analysis.pass_diffs import PassDiffs
    from .analysis.reading import TraceReading
    from .capture import RelayVizBisect, RelayVizTrace, trace_build, trace_compile
    from .diff import DIFF_VERSION, GraphDiff, diff
    from .export import export, write_netron
    from .format import FORMAT, VERSION, load, loads, validate
    from .graph_json import from_graph_json, to_graph_executor_json
    from .graph_json.summary import GraphSummary, summarize_graph
    from .serialize import dumps, to_relayviz
    from .store import PassRecord, Trace, load_trace
    from .store.documents import read_document
    from .views.bisect import BisectResult, bisect_command
    from .views.diff import FileComparison, TraceComparison, compare_files, compare_traces
    from .views.hunk_tree import DiffView, OpDeltaTable
    from .views.inspect import GraphReport, inspect_graph
    from .views.kernel import KernelHistory, kernel_history
    from .views.show import PassTable, TraceOverview, TraceSummary, show_trace
    from .views.replay import ReplayResult, replay_event
    from .views.report import TraceReport, report_trace

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
    "TraceReading",
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
    "kernel_history",
    "KernelHistory",
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

#: Where each name of the public API lives. They are imported when first used (PEP 562): a
#: process that only traces (``relayviz run``, a test suite under ``--relayviz-trace``) never
#: imports the diff, the views or their dependencies, and the package imports without TVM.
_LAZY = {
    **dict.fromkeys(["RelayVizTrace", "RelayVizBisect", "trace_build", "trace_compile"], "capture"),
    **dict.fromkeys(["to_relayviz", "dumps"], "serialize"),
    **dict.fromkeys(["FORMAT", "VERSION", "load", "loads", "validate"], "format"),
    "read_document": "store.documents",
    **dict.fromkeys(["from_graph_json", "to_graph_executor_json"], "graph_json"),
    **dict.fromkeys(["PassRecord", "Trace", "load_trace"], "store"),
    **dict.fromkeys(["diff", "DIFF_VERSION", "GraphDiff"], "diff"),
    "PassDiffs": "analysis.pass_diffs",
    "TraceReading": "analysis.reading",
    **dict.fromkeys(["show_trace", "TraceOverview", "TraceSummary", "PassTable"], "views.show"),
    **dict.fromkeys(["report_trace", "TraceReport"], "views.report"),
    **dict.fromkeys(["DiffView", "OpDeltaTable"], "views.hunk_tree"),
    **dict.fromkeys(["compare_files", "FileComparison", "compare_traces", "TraceComparison"], "views.diff"),
    **dict.fromkeys(["align", "Alignment", "AlignedPass"], "analysis.alignment"),
    **dict.fromkeys(["inspect_graph", "GraphReport"], "views.inspect"),
    **dict.fromkeys(["kernel_history", "KernelHistory"], "views.kernel"),
    **dict.fromkeys(["replay_event", "ReplayResult"], "views.replay"),
    **dict.fromkeys(["bisect_command", "BisectResult"], "views.bisect"),
    **dict.fromkeys(["summarize_graph", "GraphSummary"], "graph_json.summary"),
    **dict.fromkeys(["export", "write_netron"], "export"),
}


class _Package(types.ModuleType):
    """This package's module object. ``diff`` and ``export`` are functions named like the
    subpackages that hold them: importing a subpackage would bind its name here to the
    subpackage (Python's import system sets it on the parent), and ``from relayviz_instrument
    import diff`` would then give a module; the function keeps the name."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in ("diff", "export") and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> object:  # PEP 562
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # once: later lookups do not come here
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))
