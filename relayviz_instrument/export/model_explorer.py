"""Google's Model Explorer: each drawing as a Model Explorer graph, and a diff as node data.

Built with the classes of the ``ai-edge-model-explorer`` package (extra ``[model-explorer]``):
``graph_builder.GraphNode`` per node, with its cluster path as ``namespace`` (so a fused
function is a layer that expands), ``incomingEdges`` in input order, the output type as
``tensor_shape`` output metadata (what Model Explorer writes on edges) and the attributes;
the graphs of one export are a ``GraphCollection``, written as the JSON Model Explorer's
built-in JSON loader opens. A diff also writes ``<name>.nodedata.json`` beside it: a
``node_data_builder.ModelNodeData`` whose value for each node is its status as a number
(:data:`STATUS_CODES`: node data values are numbers), coloured as in every format (added
green, removed red, changed amber, rewired blue).
"""

from __future__ import annotations

import dataclasses
import re
import socket
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

import orjson

from .._files import atomic_write_bytes
from ..errors import RelayVizUsageError
from ..names import printable
from .base import ExportGraph, ExportOptions, OutputPath, require
from .drawing import STATUS_COLOURS, STATUSES, Drawing
from .sizing import prepare

__all__ = ["ModelExplorerExporter", "ModelExplorerExport", "ModelExplorerServer", "to_graph", "node_data",
           "node_data_path", "write_model_explorer", "explorer_server"]

#: A status as a node data value: 0 unchanged, 1 added, 2 removed, 3 changed, 4 rewired.
STATUS_CODES = {"unchanged": 0, **{status: i + 1 for i, status in enumerate(STATUSES[:-1])}}


@dataclasses.dataclass(frozen=True)
class ModelExplorerExport:
    """What an export wrote: the graph collection and, for a diff, the node data beside it."""

    graphs: Path
    node_data: Optional[Path] = None

    @property
    def files(self) -> List[Path]:
        return [self.graphs] + ([self.node_data] if self.node_data is not None else [])


def node_data_path(path: Path) -> Path:
    """The node data file written beside the graph file ``path`` (``x.json`` -> ``x.nodedata.json``)."""
    return path.with_name(path.name[:-len(".json")] + ".nodedata.json")


def to_graph(drawing: Drawing) -> Any:
    """``drawing`` as a ``model_explorer.graph_builder.Graph``."""
    gb = require("model_explorer.graph_builder", "model-explorer", "--to model-explorer")
    incoming: Dict[str, List[Any]] = {}
    for edge in drawing.edges:
        edges = incoming.setdefault(edge.dst, [])
        # Input ids must be unique per node; a collapsed node can take several edges at one port.
        edges.append(gb.IncomingEdge(sourceNodeId=edge.src, sourceNodeOutputId="0", targetNodeInputId=str(len(edges))))
    nodes = []
    for node in drawing.nodes:
        attrs = [gb.KeyValue(key="kind", value=node.kind)]
        if drawing.is_diff:
            attrs.append(gb.KeyValue(key="status", value=node.status))
        attrs += [gb.KeyValue(key=f"change {i}", value=c) for i, c in enumerate(node.changes)]
        attrs += [gb.KeyValue(key=k, value=v) for k, v in node.attrs]
        if node.count > 1:
            attrs.append(gb.KeyValue(key="nodes", value=str(node.count)))
        outputs = ([gb.MetadataItem(id="0", attrs=[gb.KeyValue(key="tensor_shape", value=node.type)])]
                   if node.type else [])
        nodes.append(gb.GraphNode(id=node.key, label=printable(node.label),
                                  namespace="/".join(drawing.cluster_path(node.cluster)), attrs=attrs,
                                  incomingEdges=incoming.get(node.key, []), outputsMetadata=outputs))
    groups: Dict[str, Dict[str, str]] = {}
    configs = []
    for cluster in drawing.clusters:
        namespace = "/".join(drawing.cluster_path(cluster.key))
        groups[namespace] = {"function": cluster.label, **dict(cluster.attrs)}
        if drawing.is_diff and cluster.status not in ("", "unchanged"):
            back, line = STATUS_COLOURS[cluster.status]
            configs.append(gb.GroupNodeConfig(namespaceRegex=f"^{re.escape(namespace)}$", backgroundColor=back,
                                              borderColor=line))
    if drawing.notes:
        groups[""] = {f"note {i}": note for i, note in enumerate(drawing.notes)}
    return gb.Graph(id=drawing.name, nodes=nodes, groupNodeAttributes=groups or None,
                    groupNodeConfigs=configs or None)


def node_data(drawings: Sequence[Drawing]) -> Any:
    """The diff of each drawing as Model Explorer node data (``ModelNodeData``, by graph id)."""
    nb = require("model_explorer.node_data_builder", "model-explorer", "--to model-explorer")
    graphs = {}
    for drawing in drawings:
        if not drawing.is_diff:
            continue
        results = {node.key: nb.NodeDataResult(value=STATUS_CODES[node.status], bgColor=STATUS_COLOURS[node.status][0])
                   for node in drawing.nodes}
        graphs[drawing.name] = nb.GraphNodeData(results=results, name="relayviz diff")
    return nb.ModelNodeData(graphsData=graphs) if graphs else None


def write_model_explorer(graphs: Sequence[ExportGraph], out: OutputPath, *,
                         options: ExportOptions = ExportOptions()) -> ModelExplorerExport:
    """Write ``graphs`` as one Model Explorer graph collection at ``out`` (a ``.json`` file),
    and their diffs as node data beside it; return what was written."""
    gb = require("model_explorer.graph_builder", "model-explorer", "--to model-explorer")
    from model_explorer.utils import remove_none

    path = Path(out)
    if not path.name.endswith(".json") or path.name == ".json":
        raise RelayVizUsageError(f"{path}: Model Explorer opens graphs from files named *.json "
                                 "(name the output FILE.json)")
    drawings = prepare(graphs, options, fmt="model-explorer")
    _check_unique([d.name for d in drawings])
    label = graphs[0].name if len(graphs) == 1 else path.name[:-len(".json")]
    collection = gb.GraphCollection(label=label, graphs=[to_graph(d) for d in drawings])
    data = orjson.dumps(remove_none(dataclasses.asdict(collection)))
    overlay = node_data(drawings)
    written = ModelExplorerExport(path, node_data_path(path) if overlay is not None else None)
    atomic_write_bytes(path, data)
    if overlay is not None and written.node_data is not None:
        atomic_write_bytes(written.node_data, overlay.to_json_string().encode())
    return written


def _check_unique(names: Sequence[str]) -> None:
    seen: Dict[str, int] = {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
    twice = sorted(name for name, n in seen.items() if n > 1)
    if twice:
        raise RelayVizUsageError(f"two graphs are named {twice[0]!r}; Model Explorer needs distinct graph names")


@dataclasses.dataclass(frozen=True)
class ModelExplorerServer:
    """Model Explorer's local server set up to open an export (and its node data).

    ``url`` opens it; :meth:`run` serves until interrupted (Ctrl+C).
    """

    export: ModelExplorerExport
    host: str
    port: int
    open_browser: bool = True

    def _config(self) -> Any:
        import model_explorer

        config = model_explorer.config()
        config.add_model_from_path(str(self.export.graphs))
        if self.export.node_data is not None:
            config.add_node_data_from_path(str(self.export.node_data))
        return config

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/?data={self._config().to_url_param_value()}"

    def run(self) -> None:
        """Start the server and serve until interrupted."""
        import model_explorer

        model_explorer.visualize_from_config(self._config(), host=self.host, port=self.port,
                                             no_open_in_browser=not self.open_browser)


def explorer_server(export: ModelExplorerExport, *, host: str = "localhost", port: Optional[int] = None,
         open_browser: bool = True) -> ModelExplorerServer:
    """Model Explorer's server for ``export`` on ``host``: at ``port``, or (``None``) the first
    free port from 8080 to 8099, as Model Explorer itself picks. :class:`RelayVizUsageError`
    if the port is taken; :class:`RelayVizDependencyError` without the package."""
    require("model_explorer", "model-explorer", "relayviz view")
    candidates = [port] if port is not None else list(range(8080, 8100))
    for candidate in candidates:
        if not _in_use(host, candidate):
            return ModelExplorerServer(export, host, candidate, open_browser)
    raise RelayVizUsageError(f"{host}: port {port} is in use; pass another --port" if port is not None else
                             f"{host}: ports 8080 to 8099 are all in use; pass a free --port")


def _in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex((host, port)) == 0


class ModelExplorerExporter:
    """``--to model-explorer``: a Model Explorer graph collection (``FILE.json``), with
    ``FILE.nodedata.json`` colouring the diff when one is drawn."""

    name = "model-explorer"
    summary = "Model Explorer graph JSON (FILE.json), and FILE.nodedata.json colouring a diff"
    extra = "model-explorer"
    many = True
    node_limit: Optional[int] = None

    def write(self, graphs: Sequence[ExportGraph], out: OutputPath, *,
              params: Optional[Mapping[str, Any]] = None, options: ExportOptions = ExportOptions()) -> List[Path]:
        return write_model_explorer(graphs, out, options=options).files
