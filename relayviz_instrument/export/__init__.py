"""Exporters: RelayViz documents in the formats of other tools, one module per format.

Every exporter implements :class:`~relayviz_instrument.export.base.Exporter` and is listed
in :data:`EXPORTERS` by the module that holds it, so an exporter whose optional dependency
is missing costs nothing until it is asked for. Exporters read documents and write files;
they never change a document.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import RelayVizUsageError
from .base import Exporter, ExportGraph, OutputPath
from .netron import write_netron

__all__ = ["EXPORTERS", "EXPORT_FORMATS", "Exporter", "ExportGraph", "exporter", "export", "export_sources",
           "write_netron"]

#: ``--to`` name -> ``module:class`` of its exporter (imported when first asked for).
EXPORTERS: Mapping[str, str] = {
    "netron": "netron:NetronExporter",
}
#: The formats ``relayviz export --to`` writes.
EXPORT_FORMATS = tuple(EXPORTERS)


def exporter(name: str) -> Exporter:
    """The exporter registered as ``name``; :class:`RelayVizUsageError` for an unknown one."""
    try:
        module, cls = EXPORTERS[name].split(":")
    except KeyError:
        raise RelayVizUsageError(f"unknown export format {name!r}; choose one of: "
                                 + ", ".join(EXPORT_FORMATS)) from None
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)()


def export(graphs: Sequence[ExportGraph], to: str, out: OutputPath, *,
           params: Optional[Mapping[str, Any]] = None, params_source: str = "<params>") -> List[Path]:
    """Write ``graphs`` in format ``to`` at ``out``; return the files written."""
    return exporter(to).write(graphs, out, params=params, params_source=params_source)


def export_sources(snapshot: Union[str, "os.PathLike[str]"], *, params: Union[str, "os.PathLike[str]", None] = None
                   ) -> Tuple[List[ExportGraph], Optional[Dict[str, Any]]]:
    """The graphs and parameters ``relayviz export`` was given: a snapshot or graph JSON file,
    and optionally a ``.params`` file (read without TVM)."""
    from ..graph_json import load_params
    from ..sources import read_document

    source = os.fspath(snapshot)
    graphs = [ExportGraph(name=Path(source).name, document=read_document(snapshot), source=source)]
    return graphs, (None if params is None else dict(load_params(params)))
