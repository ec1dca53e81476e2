"""Graph executor JSON (``lib.get_graph_json()``) and NNVM graph JSON: one home for the format.

Whoever reads a format also writes it, so everything about it lives here::

    reader.py   graph JSON -> RelayViz document (checked; errors name key and index)
    writer.py   RelayViz document -> graph executor JSON (TVM's codegen mapping)
    attrs.py    node attributes: the strings TVM writes <-> JSON values
    params.py   ``.params`` files: names, values (NumPy), deterministic writing, checks

None of it imports TVM. ``docs/graph_json.md`` describes the mapping.
"""

from __future__ import annotations

from .attrs import format_attr_value, parse_attr_value
from .params import check_params, load_params, param_names, params_path, read_params, save_params
from ..format.irs import GRAPH_IRS
from .reader import document_from_graph, from_graph_json
from .writer import ConstantData, GraphExecutorExport, to_graph_executor_json

__all__ = [
    "GRAPH_IRS",
    "from_graph_json",
    "document_from_graph",
    "to_graph_executor_json",
    "GraphExecutorExport",
    "ConstantData",
    "parse_attr_value",
    "format_attr_value",
    "param_names",
    "read_params",
    "load_params",
    "save_params",
    "params_path",
    "check_params",
]
