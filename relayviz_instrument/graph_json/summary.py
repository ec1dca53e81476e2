"""What runs after ``relay.build``: one row per operator of a graph executor graph.

For each operator node this answers the questions people ask of graph executor JSON:
which shapes feed it and from which node, what it produces, and in which storage. It
reads the RelayViz document that :func:`relayviz_instrument.from_graph_json` makes, so it
works the same for a graph JSON file and for a trace's final snapshot. The result is plain
data (the rows of ``relayviz inspect --json``); the CLI renders it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Dict, List, Optional, Tuple

from ..errors import RelayVizFormatError
from ..format import Document
from ..format.irs import GRAPH_IRS

__all__ = ["GraphSummary", "summarize_graph"]

_Tensor = Tuple[Optional[List[Any]], Optional[str]]  # (shape, dtype), either may be unknown


@dataclass(frozen=True)
class GraphSummary:
    """A built graph at a glance.

    ``operators`` has one row per operator node, in graph order:
    ``{"name", "op", "inputs": [{"node", "index", "shape", "dtype"}],
    "outputs": [{"shape", "dtype", "storage_id"}]}``. ``inputs`` and ``params`` list the
    graph's arguments (``{"name", "shape", "dtype"}``), split by the parameter names given;
    ``outputs`` the graph's results (``{"node", "index", "shape", "dtype"}``);
    ``node_ids`` the id of each operator's node in the graph JSON (its index in ``nodes``).
    An unknown shape, dtype or storage id is ``None``.
    """

    operators: List[Dict[str, Any]]
    inputs: List[Dict[str, Any]]
    params: List[Dict[str, Any]]
    outputs: List[Dict[str, Any]]
    node_ids: List[int]


def summarize_graph(doc: Document, *, param_names: Collection[str] = (),
                    source: str = "<document>") -> GraphSummary:
    """Summarize a RelayViz document made from graph JSON (``ir`` ``graph_executor`` or ``nnvm``).

    Arguments whose names are in ``param_names`` (the names of a ``.params`` file) are
    listed as parameters, the others as inputs. Raises :class:`RelayVizFormatError` naming
    ``source`` for a document of another dialect.
    """
    ir = doc.get("ir")
    if ir not in GRAPH_IRS:
        raise RelayVizFormatError(
            f"'ir' is {ir!r}: inspect reads graphs made from graph executor or NNVM JSON", source=source,
            field="ir",
            hint="inspect the file written by `relayviz export SNAPSHOT --to netron -o FILE.json`")
    nodes = doc["nodes"]
    main_id = doc.get("functions", {}).get("main")
    if main_id is None or nodes[main_id]["node_kind"] != "Function":
        raise _not_a_graph("it has no function 'main'", source, field="functions.main")
    main = nodes[main_id]
    entries = _GraphEntries(nodes, source)

    operators, node_ids = [], []
    calls = [nid for nid, node in enumerate(nodes) if node["node_kind"] == "Call"]
    for nid in sorted(calls, key=entries.order):
        node_ids.append(entries.order(nid)[0])
        call = nodes[nid]
        if nodes[call["op"]]["node_kind"] != "Op":
            raise _not_a_graph(f"calls a {nodes[call['op']]['node_kind']}, not an operator", source, nid, "op")
        inputs = []
        for k, arg in enumerate(call["args"]):
            producer, index = entries.entry(arg, nid, f"args[{k}]")
            shape, dtype = entries.output(producer, index, nid, f"args[{k}]")
            inputs.append({"node": entries.name(producer), "index": index, "shape": shape, "dtype": dtype})
        storage = call.get("graph", {}).get("storage_id")
        outputs = [{"shape": shape, "dtype": dtype, "storage_id": storage[k] if storage else None}
                   for k, (shape, dtype) in enumerate(entries.output_types(nid))]
        operators.append({"name": entries.name(nid), "op": nodes[call["op"]]["name"],
                          "inputs": inputs, "outputs": outputs})

    args = [{"name": nodes[p]["name"], "shape": nodes[p].get("shape"), "dtype": nodes[p].get("dtype")}
            for p in main["params"]]
    body = nodes[main["body"]]
    heads = body["fields"] if body["node_kind"] == "Tuple" else [main["body"]]
    outputs = []
    for k, head in enumerate(heads):
        producer, index = entries.entry(head, main_id, f"body[{k}]")
        shape, dtype = entries.output(producer, index, main_id, f"body[{k}]")
        outputs.append({"node": entries.name(producer), "index": index, "shape": shape, "dtype": dtype})
    names = set(param_names)
    return GraphSummary(operators=operators,
                        inputs=[a for a in args if a["name"] not in names],
                        params=[a for a in args if a["name"] in names],
                        outputs=outputs, node_ids=node_ids)


class _GraphEntries:
    """The entries of a graph document: which node and output a reference stands for, its
    name, and the shapes and dtypes of its outputs."""

    def __init__(self, nodes: List[Dict[str, Any]], source: str) -> None:
        self.nodes = nodes
        self.source = source
        self.used: Dict[int, int] = {}  # node id -> outputs its consumers take, when untyped
        for node in nodes:
            if node["node_kind"] == "TupleGetItem":
                tup = node["tuple_value"]
                self.used[tup] = max(self.used.get(tup, 1), node["index"] + 1)

    def order(self, nid: int) -> Tuple[int, int]:
        return (self.nodes[nid].get("graph", {}).get("node", nid), nid)

    def entry(self, nid: int, user: int, field: str) -> Tuple[int, int]:
        """The (producer node, output index) a reference from ``user``'s ``field`` stands for."""
        node = self.nodes[nid]
        producer, index = (node["tuple_value"], node["index"]) if node["node_kind"] == "TupleGetItem" else (nid, 0)
        kind = self.nodes[producer]["node_kind"]
        if kind not in ("Var", "Call"):
            raise _not_a_graph(f"refers to a {kind}: a graph node's inputs are inputs, parameters or "
                               "operator outputs", self.source, user, field)
        return producer, index

    def output(self, producer: int, index: int, user: int, field: str) -> _Tensor:
        """Output ``index`` of ``producer``, as ``user``'s ``field`` uses it."""
        outputs = self.output_types(producer)
        if not 0 <= index < len(outputs):
            raise _not_a_graph(f"takes output {index} of node {producer}, which has {len(outputs)}",
                               self.source, user, field)
        return outputs[index]

    def name(self, nid: int) -> str:
        node = self.nodes[nid]
        name: str
        if node["node_kind"] == "Var":
            name = node["name"]
        else:
            name = node.get("graph", {}).get("name") or self.nodes[node["op"]]["name"]
        return name

    def output_types(self, nid: int) -> List[_Tensor]:
        node = self.nodes[nid]
        ty = node.get("type")
        if ty is None and node["node_kind"] == "Var" and ("shape" in node or "dtype" in node):
            return [(node.get("shape"), node.get("dtype"))]
        if ty is None:
            shapes = node.get("graph", {}).get("shape")
            if shapes is not None:  # shapes known without dtypes (NNVM)
                return [(shape, None) for shape in shapes]
            return [(None, None)] * self.used.get(nid, 1)
        fields = ty["fields"] if ty.get("kind") == "tuple" else [ty]
        return [(f.get("shape"), f.get("dtype")) for f in fields]


def _not_a_graph(message: str, source: str, node: Optional[int] = None,
                 field: Optional[str] = None) -> RelayVizFormatError:
    return RelayVizFormatError(message, source=source, node=node, field=field,
                               hint="inspect reads the graphs relayviz makes of graph executor or NNVM JSON")
