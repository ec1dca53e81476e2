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

__version__ = "0.1.0"

__all__ = [
    "FORMAT",
    "VERSION",
    "to_relayviz",
    "dumps",
    "load",
    "loads",
    "validate",
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
