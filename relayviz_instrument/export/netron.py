"""Netron: a graph as graph executor JSON, with its weights in ``FILE.params`` beside it.

Netron recognises a ``.json`` file as a TVM graph when its root has the lists ``nodes``,
``arg_nodes`` and ``heads`` and every node's ``op`` is ``null`` or ``tvm_op``; it loads
weights from the ``.params`` file of the same name. The format itself (reading, writing,
parameters) lives in :mod:`relayviz_instrument.graph_json`; this module only packages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from .._files import atomic_write_bytes
from ..errors import RelayVizUsageError
from ..format import Document
from ..graph_json import (ConstantData, GraphExecutorExport, check_params, params_path, save_params,
                          to_graph_executor_json)
from .base import ExportGraph, ExportOptions, OutputPath

__all__ = ["NetronExporter", "write_netron"]


def write_netron(doc: Document, path: OutputPath, *, params: Optional[Mapping[str, Any]] = None,
                 source: str = "<document>", params_source: str = "<params>") -> List[Path]:
    """Write ``doc`` as graph executor JSON to ``path`` (which must end in ``.json``).

    When parameter values are available (``params``, name to array, and constants whose
    values the document carries), the ones that name ``null`` nodes are written beside it
    as ``<name>.params`` in TVM's format (what ``tvm.runtime.save_param_dict`` writes),
    after :func:`~relayviz_instrument.graph_json.check_params` compared them with the graph.
    Both files are written atomically. Returns the paths written.
    """
    path = Path(path)
    if not path.name.endswith(".json") or path.name == ".json":
        raise RelayVizUsageError(f"{path}: Netron recognises TVM graphs only in files named *.json "
                                 "(name the output FILE.json)")
    export = to_graph_executor_json(doc, source=source)
    values = _param_values(export, params or {}, params_source)
    param_bytes = save_params(values) if values else None
    atomic_write_bytes(path, export.to_json())
    if param_bytes is None:
        return [path]
    atomic_write_bytes(params_path(path), param_bytes)
    return [path, params_path(path)]


def _param_values(export: GraphExecutorExport, params: Mapping[str, Any], source: str) -> Dict[str, Any]:
    """name -> array for every null node with a value: the given ones, checked, and constants."""
    graph = export.graph
    shapes = graph["attrs"].get("shape", [None, None])[1]
    dtypes = graph["attrs"].get("dltype", [None, None])[1]
    declared = {}
    for nid in graph["arg_nodes"]:
        eid = graph["node_row_ptr"][nid]
        declared[graph["nodes"][nid]["name"]] = (shapes[eid] if shapes else None,
                                                 dtypes[eid] if dtypes else None, f"node {nid}")
    given = {name: value.numpy() if hasattr(value, "numpy") else np.asarray(value)
             for name, value in params.items()}
    check_params(declared, given, source=source)
    out: Dict[str, Any] = {}
    for name in declared:
        if name in given:
            out[name] = given[name]
        elif name in export.constants:
            array = _const_array(export.constants[name])
            if array is not None:
                out[name] = array
    return out


def _const_array(const: ConstantData) -> Any:
    try:
        dtype = np.dtype(const.dtype)
    except TypeError:  # bfloat16, float8...: no NumPy dtype to write them with
        return None
    values = [float(v) if isinstance(v, str) else v for v in const.values]  # "nan", "inf"
    return np.array(values, dtype=dtype).reshape(const.shape)


class NetronExporter:
    """``--to netron``: graph executor JSON (and ``.params``) that Netron opens."""

    name = "netron"
    summary = "graph executor JSON that Netron opens, with FILE.params beside FILE.json"
    extra = None
    many = False
    node_limit = None

    def write(self, graphs: Sequence[ExportGraph], out: OutputPath, *,
              params: Optional[Mapping[str, Any]] = None, options: ExportOptions = ExportOptions()) -> List[Path]:
        if len(graphs) != 1:
            raise RelayVizUsageError(f"netron writes one graph per file, not {len(graphs)}; "
                                     "pick one pass with --pass")
        graph = graphs[0]
        if graph.diff is not None:
            raise RelayVizUsageError("netron shows one graph, not a diff; --diff is drawn by "
                                     "dot, svg, tensorboard and model-explorer")
        return write_netron(graph.document, out, params=params, source=graph.source,
                            params_source=options.params_source)
