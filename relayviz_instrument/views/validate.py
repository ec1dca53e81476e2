"""``check_file``: whether a file is a valid RelayViz document or graph JSON, and what it
holds — the use case behind ``relayviz validate``."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import List, Optional, Union

from .._files import parse_json
from ..errors import RelayVizError, UnknownNodeKindWarning
from ..format.irs import GRAPH_EXECUTOR, GRAPH_IRS
from ..format.loading import checked
from ..graph_json import document_from_graph
from ..store.documents import is_graph_json
from ..store.trace import read_snapshot_bytes

__all__ = ["FileCheck", "check_file"]


@dataclass
class FileCheck:
    """What ``relayviz validate`` found in one file: ``error`` if it is invalid, else what it
    is (``description``) and ``notes`` about nodes kept unchecked."""

    path: str
    description: str = ""
    notes: List[str] = field(default_factory=list)
    error: Optional[RelayVizError] = None

    @property
    def valid(self) -> bool:
        return self.error is None


def check_file(path: Union[str, "os.PathLike[str]"]) -> FileCheck:
    """Validate one file: a RelayViz document, or graph JSON (checked as every command reads it)."""
    source = os.fspath(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownNodeKindWarning)
        try:
            obj = parse_json(read_snapshot_bytes(path), source)  # a trace's snapshot: against its digest
            doc = document_from_graph(obj, source) if is_graph_json(obj) else checked(obj, source)
        except RelayVizError as exc:
            return FileCheck(source, error=exc)
    prefix = f"{source}: "
    notes = [str(w.message)[len(prefix):] if str(w.message).startswith(prefix) else str(w.message)
             for w in caught if issubclass(w.category, UnknownNodeKindWarning)]
    if doc.get("ir") in GRAPH_IRS:
        what = "graph executor JSON" if doc["ir"] == GRAPH_EXECUTOR else "NNVM graph JSON"
        calls = sum(1 for node in doc["nodes"] if node["node_kind"] == "Call")
        return FileCheck(source, f"{what}, {calls} operators (read as a RelayViz graph of "
                                 f"{len(doc['nodes'])} nodes; see relayviz inspect)", notes)
    version = ".".join(map(str, doc["version"]))
    return FileCheck(source, f"RelayViz {version}, {len(doc['nodes'])} nodes", notes)
