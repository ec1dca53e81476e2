"""``inspect_graph``: a built graph operator by operator, with shapes, producers and storage —
the use case behind ``relayviz inspect``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape as _escape
from rich.table import Table
from rich.text import Text

from ..graph_json.summary import GraphSummary, summarize_graph
from ..graph_json import check_params, load_params, params_path
from ..names import printable
from ..store.documents import read_document

__all__ = ["GraphReport", "inspect_graph"]


def escape(text: str) -> str:  # rich's, on printable text
    """Text from the graph file as markup: printable (no control character, a huge name by its
    ends), then escaped for rich's markup."""
    return _escape(printable(text))


@dataclass
class GraphReport:
    """A :class:`~relayviz_instrument.graph_json.summary.GraphSummary` as a table (one row per
    operator) and the graph's arguments and results; ``params_file`` names where the
    parameter names came from."""

    summary: GraphSummary
    params_file: Optional[Path] = None

    def to_json(self) -> List[Dict[str, Any]]:
        """The operators: ``[{name, op, inputs, outputs}]`` (``relayviz inspect --json``)."""
        return self.summary.operators

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = self._table()
        wide = options.update(max_width=100_000)
        needed = console.measure(table, options=wide).maximum
        if needed <= options.max_width:
            yield table
        elif console.is_terminal:  # too narrow for the table: one block per operator, no name split
            yield from self._blocks()
        else:  # a file or a pipe: the whole table, however wide
            yield from console.render(table, options.update(max_width=needed))
        yield from (Text.from_markup(line) for line in self._argument_lines())

    def _table(self) -> Table:
        summary = self.summary
        table = Table(show_lines=True, expand=False)
        table.add_column("node", justify="right", style="dim", no_wrap=True)
        table.add_column("operator", no_wrap=True)
        table.add_column("inputs  (<- the node each comes from)", no_wrap=True)
        table.add_column("outputs", no_wrap=True)
        table.add_column("storage", justify="right", no_wrap=True)
        for node_id, row in zip(summary.node_ids, summary.operators):
            operator = escape(row["name"])
            if row["op"] != row["name"]:
                operator += f"\n[dim]= {escape(row['op'])}[/]"
            inputs = "\n".join(f"{_tensor(i)} <- {escape(_source(i))}" for i in row["inputs"]) or "[dim]none[/]"
            outputs = "\n".join(_tensor(o) for o in row["outputs"])
            storage = "\n".join("?" if o["storage_id"] is None else str(o["storage_id"]) for o in row["outputs"])
            table.add_row(str(node_id), operator, inputs, outputs, storage)
        return table

    def _blocks(self) -> RenderResult:
        for node_id, row in zip(self.summary.node_ids, self.summary.operators):
            head = f"[dim]node {node_id}[/]  [bold]{escape(row['name'])}[/]"
            if row["op"] != row["name"]:
                head += f"  [dim]= {escape(row['op'])}[/]"
            yield Text.from_markup(head)
            for item in row["inputs"]:
                yield Text.from_markup(f"  in   {_tensor(item)} <- {escape(_source(item))}")
            for item in row["outputs"]:
                storage = "?" if item["storage_id"] is None else item["storage_id"]
                yield Text.from_markup(f"  out  {_tensor(item)}  [dim]storage {storage}[/]")

    def _argument_lines(self) -> List[str]:
        summary = self.summary
        lines = [_arguments_line("inputs", summary.inputs)]
        if self.params_file is not None:
            lines.append(_arguments_line("parameters", summary.params)
                         + f"  [dim](from {escape(str(self.params_file))})[/]")
        else:
            lines.append("[bold]parameters[/]  [dim]unknown without a .params file: every argument is listed "
                         "as an input[/]")
        outputs = ", ".join(f"{_tensor(o)} <- {escape(_source(o))}" for o in summary.outputs)
        lines.append(f"[bold]outputs[/] ({len(summary.outputs)})  {outputs}")
        return lines


def inspect_graph(path: Union[str, "os.PathLike[str]"], *,
                  params: Union[str, "os.PathLike[str]", None] = None) -> GraphReport:
    """Read a graph (graph JSON, or a RelayViz document made from one) and summarize it.

    ``params`` is a ``.params`` file naming (and holding) the parameters; by default
    ``GRAPH.params`` beside ``GRAPH.json`` if it exists. Its arrays are checked against the
    graph's arguments the way ``relayviz export`` checks them.
    """
    doc = read_document(path)
    source = os.fspath(path)
    params_file = Path(params) if params is not None else _beside(Path(path))
    names: List[str] = []
    if params_file is not None:
        values = load_params(params_file)
        nodes = doc["nodes"]
        main = nodes[doc["functions"]["main"]] if "main" in doc.get("functions", {}) else None
        if main is not None and main.get("node_kind") == "Function":
            declared = {nodes[p]["name"]: (nodes[p].get("shape"), nodes[p].get("dtype"),
                                           f"argument {nodes[p]['name']!r}")
                        for p in main["params"]}
            check_params(declared, values, source=str(params_file))
        names = list(values)
    return GraphReport(summarize_graph(doc, param_names=names, source=source), params_file)


def _beside(graph: Path) -> Optional[Path]:
    if graph.name.endswith(".json") and params_path(graph).is_file():
        return params_path(graph)
    return None


def _arguments_line(title: str, args: List[Dict[str, Any]]) -> str:
    items = ", ".join(f"{escape(a['name'])} {_tensor(a)}" for a in args) or "[dim]none[/]"
    return f"[bold]{title}[/] ({len(args)})  {items}"


def _tensor(item: Dict[str, Any]) -> str:
    shape = item.get("shape")
    text = "?" if shape is None else "[" + ", ".join(str(d) for d in shape) + "]"
    return escape(f"{text} {item.get('dtype') or '?'}")


def _source(item: Dict[str, Any]) -> str:
    return item["node"] if item["index"] == 0 else f"{item['node']}:{item['index']}"
