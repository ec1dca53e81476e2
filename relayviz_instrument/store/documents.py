"""A file that holds a graph, read as a RelayViz document: a snapshot or graph JSON.

Files are recognised by their keys, not their names, so a snapshot copied out of a trace
and the ``graph.json`` written next to a built library are both accepted wherever a graph
is read.
"""

from __future__ import annotations

import os
from typing import Any, Union

from .._files import parse_json
from ..errors import RelayVizFormatError
from ..format import FORMAT, Document
from ..format.loading import checked
from ..graph_json import document_from_graph
from .trace import read_snapshot_bytes

__all__ = ["read_document", "is_graph_json"]


def is_graph_json(obj: Any) -> bool:
    """Whether a parsed JSON value is graph JSON (``nodes`` without a RelayViz ``format`` tag)."""
    return isinstance(obj, dict) and "nodes" in obj and "format" not in obj


def read_document(path: Union[str, "os.PathLike[str]"]) -> Document:
    """Read a RelayViz document, or graph executor / NNVM graph JSON converted to one.

    ``"format": "relayviz"`` makes the file a RelayViz document (validated); ``nodes``
    without ``format`` makes it graph JSON (checked and converted). Anything else raises
    :class:`RelayVizFormatError` naming the file; a file that cannot be read raises
    :class:`~relayviz_instrument.errors.RelayVizIOError`. A file named as a trace names its
    snapshots is checked against the digest in its name
    (:func:`~relayviz_instrument.store.trace.read_snapshot_bytes`).
    """
    source = os.fspath(path)
    obj = parse_json(read_snapshot_bytes(path), source)
    if isinstance(obj, dict) and "format" in obj:
        return checked(obj, source)
    if is_graph_json(obj):
        return document_from_graph(obj, source)
    raise RelayVizFormatError(
        "neither a RelayViz document (no 'format' key) nor graph JSON (no 'nodes' key)",
        source=source, hint=f"pass a '{FORMAT}' snapshot or the JSON of lib.get_graph_json()")
