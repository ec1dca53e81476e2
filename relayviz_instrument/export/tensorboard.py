"""TensorBoard: each drawing as a GraphDef in an event file, one run per graph, so that
``tensorboard --logdir OUT`` lists the graphs (a trace's passes) and draws any of them.

Built with the ``tensorboard`` package's own protobufs (``GraphDef``, ``NodeDef``,
``Event``) and its ``RecordWriter`` (extra ``[tensorboard]``). TensorBoard groups nodes by
the ``/``-separated scopes of their names: a function's nodes are named under its cluster
path, so each fused function is a group that expands. Every node carries its output shapes
(``_output_shapes``, which TensorBoard writes on edges) and dtype (``T``); operator
attributes are string attributes. In a diff, a node's ``device`` is ``/status:<status>``, so
TensorBoard's *Color: Device* colours the diff, and ``relayviz.status`` says it in words.
Files are byte-for-byte deterministic: events carry wall time 0 and the file name no host.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from .._files import atomic_write_bytes
from ..names import printable
from .base import ExportGraph, ExportOptions, OutputPath, make_dir, require, slug
from .drawing import Drawing, DrawnNode
from .sizing import prepare

__all__ = ["TensorBoardExporter", "graph_def", "EVENT_FILE"]

#: The event file of each run. TensorBoard reads any file whose name contains ``tfevents``.
EVENT_FILE = "events.out.tfevents.0.relayviz"
_DTYPES = {"float16": "DT_HALF", "float32": "DT_FLOAT", "float64": "DT_DOUBLE", "bfloat16": "DT_BFLOAT16",
           "int8": "DT_INT8", "int16": "DT_INT16", "int32": "DT_INT32", "int64": "DT_INT64", "uint8": "DT_UINT8",
           "uint16": "DT_UINT16", "uint32": "DT_UINT32", "uint64": "DT_UINT64", "bool": "DT_BOOL"}


def _segment(text: str) -> str:
    """A scope or name segment TensorBoard parses as one: no ``/``, ``:`` or ``^``."""
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", text).strip("_") or "node"


def graph_def(drawing: Drawing) -> Any:
    """``drawing`` as a TensorBoard ``GraphDef`` (``tensorboard.compat.proto.graph_pb2``)."""
    require("tensorboard", "tensorboard", "--to tensorboard")
    from tensorboard.compat.proto import graph_pb2, types_pb2

    names: Dict[str, str] = {}
    for node in drawing.nodes:
        scope = [_segment(part) for part in drawing.cluster_path(node.cluster)]
        names[node.key] = "/".join(scope + [f"{_segment(node.label)}_{node.key}"])
    inputs: Dict[str, List[str]] = {}
    for edge in drawing.edges:
        inputs.setdefault(edge.dst, []).append(names[edge.src])
    graph = graph_pb2.GraphDef()
    graph.versions.producer = 1
    for node in drawing.nodes:
        out = graph.node.add()
        out.name = names[node.key]
        out.op = node.label if node.role == "op" else node.kind
        out.input.extend(inputs.get(node.key, ()))
        if drawing.is_diff:
            out.device = f"/status:{node.status}"
            out.attr["relayviz.status"].s = node.status.encode()
        _node_attrs(out, node, types_pb2)
    return graph


def _node_attrs(out: Any, node: DrawnNode, types_pb2: Any) -> None:
    if node.outputs:
        shapes = out.attr["_output_shapes"].list.shape
        for _, shape in node.outputs:
            proto = shapes.add()
            for dim in shape:
                proto.dim.add().size = dim if isinstance(dim, int) else -1
        dtype = _DTYPES.get(node.outputs[0][0])
        if dtype is not None:
            out.attr["T"].type = types_pb2.DataType.Value(dtype)
    if node.type:
        out.attr["relayviz.type"].s = node.type.encode()
    if node.label != node.kind:
        out.attr["relayviz.label"].s = printable(node.label).encode()
    for key, value in node.attrs:
        out.attr[key].s = value.encode()
    for i, change in enumerate(node.changes):
        out.attr[f"relayviz.change{i}"].s = change.encode()


def event_file_bytes(drawing: Drawing, step: int) -> bytes:
    """The bytes of an event file holding ``drawing``'s GraphDef, as TensorBoard's writer frames them."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    buffer = io.BytesIO()
    writer = RecordWriter(buffer)
    writer.write(event_pb2.Event(wall_time=0.0, step=step, file_version="brain.Event:2").SerializeToString())
    graph = graph_def(drawing).SerializeToString(deterministic=True)
    writer.write(event_pb2.Event(wall_time=0.0, step=step, graph_def=graph).SerializeToString(deterministic=True))
    return buffer.getvalue()


class TensorBoardExporter:
    """``--to tensorboard``: a log directory with one run (sub-directory) per graph."""

    name = "tensorboard"
    summary = "a TensorBoard log directory: one run per graph (tensorboard --logdir OUT)"
    extra = "tensorboard"
    many = True
    node_limit: Optional[int] = None

    def write(self, graphs: Sequence[ExportGraph], out: OutputPath, *,
              params: Optional[Mapping[str, Any]] = None, options: ExportOptions = ExportOptions()) -> List[Path]:
        require("tensorboard", self.extra, "--to tensorboard")
        root = Path(out)
        drawings = prepare(graphs, options, fmt=self.name)
        written = []
        for step, (graph, drawing) in enumerate(zip(graphs, drawings)):
            run = root / slug(graph.name) if len(graphs) > 1 else root
            make_dir(run)
            path = run / EVENT_FILE
            atomic_write_bytes(path, event_file_bytes(drawing, step))
            written.append(path)
        return written
