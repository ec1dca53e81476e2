"""What a command can be given to read a graph from: a RelayViz snapshot or graph JSON.

Files are recognised by their keys, not their names, so a snapshot copied out of a trace
and the ``graph.json`` written next to a built library are both accepted wherever a graph
is read.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from ._files import parse_json, read_input
from .errors import RelayVizError, RelayVizFormatError, RelayVizUsageError, UnknownNodeKindWarning
from .store import PassRecord
from .format import FORMAT
from .format.validate import checked
from .graph_json import document_from_graph

__all__ = ["read_document", "is_graph_json", "FileCheck", "check_file", "select_event"]


def is_graph_json(obj: Any) -> bool:
    """Whether a parsed JSON value is graph JSON (``nodes`` without a RelayViz ``format`` tag)."""
    return isinstance(obj, dict) and "nodes" in obj and "format" not in obj


def read_document(path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """Read a RelayViz document, or graph executor / NNVM graph JSON converted to one.

    ``"format": "relayviz"`` makes the file a RelayViz document (validated); ``nodes``
    without ``format`` makes it graph JSON (checked and converted). Anything else raises
    :class:`RelayVizFormatError` naming the file; a file that cannot be read raises
    :class:`~relayviz_instrument.errors.RelayVizIOError`.
    """
    source = os.fspath(path)
    obj = parse_json(read_input(path), source)
    if isinstance(obj, dict) and "format" in obj:
        return checked(obj, source)
    if is_graph_json(obj):
        return document_from_graph(obj, source)
    raise RelayVizFormatError(
        "neither a RelayViz document (no 'format' key) nor graph JSON (no 'nodes' key)",
        source=source, hint=f"pass a '{FORMAT}' snapshot or the JSON of lib.get_graph_json()")


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
            obj = parse_json(read_input(path), source)
            doc = document_from_graph(obj, source) if is_graph_json(obj) else checked(obj, source)
        except RelayVizError as exc:
            return FileCheck(source, error=exc)
    prefix = f"{source}: "
    notes = [str(w.message)[len(prefix):] if str(w.message).startswith(prefix) else str(w.message)
             for w in caught if issubclass(w.category, UnknownNodeKindWarning)]
    if doc.get("ir") in ("graph_executor", "nnvm"):
        what = "graph executor JSON" if doc["ir"] == "graph_executor" else "NNVM graph JSON"
        calls = sum(1 for node in doc["nodes"] if node["node_kind"] == "Call")
        return FileCheck(source, f"{what}, {calls} operators (read as a RelayViz graph of "
                                 f"{len(doc['nodes'])} nodes; see relayviz inspect)", notes)
    version = ".".join(map(str, doc["version"]))
    return FileCheck(source, f"RelayViz {version}, {len(doc['nodes'])} nodes", notes)


def select_event(trace: Any, selector: Union[str, int]) -> PassRecord:
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
