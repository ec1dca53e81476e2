"""Exporters: RelayViz documents in the formats of other tools (one module per format).

Exporters read documents and write files; they never change a document.
"""

from __future__ import annotations

from .netron import ConstantData, GraphExecutorExport, params_path, to_graph_executor_json, write_netron

__all__ = [
    "EXPORT_FORMATS",
    "ConstantData",
    "GraphExecutorExport",
    "to_graph_executor_json",
    "params_path",
    "write_netron",
]

#: The formats ``relayviz export --to`` writes.
EXPORT_FORMATS = ("netron",)
