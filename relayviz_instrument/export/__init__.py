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
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

from ..errors import RelayVizUsageError
from .base import Exporter, ExportGraph, ExportOptions, OutputPath
from .netron import write_netron
from .resolve import passes_to_draw, resolve_graphs

__all__ = ["EXPORTERS", "EXPORT_FORMATS", "Exporter", "ExportGraph", "ExportOptions", "exporter", "export",
           "export_sources", "resolve_graphs", "passes_to_draw", "write_netron"]

#: ``--to`` name -> ``module:class`` of its exporter (imported when first asked for).
EXPORTERS: Mapping[str, str] = {
    "netron": "netron:NetronExporter",
    "dot": "dot:DotExporter",
    "svg": "dot:SvgExporter",
    "tensorboard": "tensorboard:TensorBoardExporter",
    "model-explorer": "model_explorer:ModelExplorerExporter",
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
    # Imported by name, so mypy cannot see the class: every EXPORTERS entry names an Exporter.
    return cast(Exporter, getattr(importlib.import_module(f"{__name__}.{module}"), cls)())


def export(graphs: Sequence[ExportGraph], to: str, out: OutputPath, *,
           params: Optional[Mapping[str, Any]] = None, options: ExportOptions = ExportOptions()) -> List[Path]:
    """Write ``graphs`` in format ``to`` at ``out``; return the files written.

    A drawing format warns (:class:`~relayviz_instrument.errors.LargeGraphWarning`) about a
    graph above its node limit unless ``options.max_nodes`` cuts it.
    """
    return exporter(to).write(graphs, out, params=params, options=options)


def export_sources(source: Union[str, "os.PathLike[str]"], *, params: Union[str, "os.PathLike[str]", None] = None,
                   select: Union[str, int, None] = None, diff: bool = False
                   ) -> Tuple[List[ExportGraph], Optional[Dict[str, Any]]]:
    """The graphs and parameters ``relayviz export`` was given: a snapshot, graph JSON or a
    trace directory with ``select`` and ``diff`` as in :func:`resolve_graphs`, and optionally a
    ``.params`` file (read without TVM)."""
    from ..graph_json import load_params

    graphs = resolve_graphs(source, select=select, diff=diff)
    return graphs, (None if params is None else dict(load_params(params)))
