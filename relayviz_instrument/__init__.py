"""relayviz_instrument: a pass-by-pass account of what TVM's passes do to a model.

The pipeline, one module per stage::

    capture (RelayVizTrace) -> serialize (IR -> RelayViz) -> store (trace directory)
                                     |
              diff (graph matching) -> report (rich) / export (netron, ...)

The public API is re-exported here; everything else is private.
"""

from .errors import (
    GraphJSONError,
    RelayVizDependencyError,
    RelayVizError,
    RelayVizFormatError,
    RelayVizSerializeError,
    RelayVizTraceError,
    RelayVizWarning,
    TraceIncompleteWarning,
    UnknownNodeKindWarning,
)
from .format import FORMAT, VERSION, load, loads, validate
from .serialize import dumps, to_relayviz
from .serialize.graph_json import from_graph_json, read_document
from .graph_inspect import GraphSummary, summarize_graph
from .export import to_graph_executor_json, write_netron
from .store import PassRecord, Trace, load_trace
from .diff import GraphDiff, diff

__version__ = "0.1.0"


__all__ = [
    "diff",
    "GraphDiff",
    "RelayVizTrace",
    "trace_build",
    "PassRecord",
    "Trace",
    "load_trace",
    "FORMAT",
    "VERSION",
    "to_relayviz",
    "dumps",
    "load",
    "loads",
    "validate",
    "from_graph_json",
    "read_document",
    "summarize_graph",
    "GraphSummary",
    "to_graph_executor_json",
    "write_netron",
    "RelayVizError",
    "RelayVizFormatError",
    "GraphJSONError",
    "RelayVizSerializeError",
    "RelayVizTraceError",
    "RelayVizDependencyError",
    "RelayVizWarning",
    "UnknownNodeKindWarning",
    "TraceIncompleteWarning",
]


def __getattr__(name: str) -> object:  # PEP 562: TVM is imported only when the instrument is asked for
    if name in ("RelayVizTrace", "trace_build"):
        from . import capture

        return getattr(capture, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
