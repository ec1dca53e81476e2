"""``relayviz inspect GRAPH [--json] [--params FILE]``: the operators of a built graph."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Dict, List, Optional

import orjson
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..errors import RelayVizFormatError
from ..export import params_path
from ..graph_inspect import GraphSummary, summarize_graph
from ..serialize.graph_json import param_names, read_document


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "inspect", help="show each operator of a built graph with its input and output shapes",
        description="Show one row per operator of a graph executor or NNVM graph JSON (or a RelayViz "
                    "document made from one): its function, the shape and dtype of each input and "
                    "the node it comes from, each output with its storage id; then the graph's "
                    "inputs, parameters and outputs. Parameters are the names in the .params file "
                    "(--params, or GRAPH.params beside GRAPH.json).")
    parser.add_argument("graph", metavar="GRAPH", help="graph JSON (lib.get_graph_json()) or a RelayViz document")
    parser.add_argument("--json", action="store_true",
                        help="print the operators as JSON: [{name, op, inputs, outputs}]")
    parser.add_argument("--params", metavar="FILE", type=Path,
                        help="TVM .params file naming the parameters (default: GRAPH.params if present)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    doc = read_document(args.graph)
    params_file = _params_file(Path(args.graph), args.params)
    names: List[str] = []
    if params_file is not None:
        try:
            data = params_file.read_bytes()
        except OSError as exc:
            raise RelayVizFormatError(f"cannot read the file: {exc.strerror or exc}", source=str(params_file),
                                      hint="check the path") from None
        names = param_names(data, source=str(params_file))
    summary = summarize_graph(doc, param_names=names)
    if args.json:
        console.file.write(orjson.dumps(summary.operators, option=orjson.OPT_INDENT_2).decode() + "\n")
        console.file.flush()
        return 0
    console.print(render_summary(summary, params_file=params_file))
    return 0


def _params_file(graph: Path, explicit: Optional[Path]) -> Optional[Path]:
    if explicit is not None:
        return explicit
    if graph.name.endswith(".json") and params_path(graph).is_file():
        return params_path(graph)
    return None


def render_summary(summary: GraphSummary, *, params_file: Optional[Path] = None) -> Group:
    """The summary as a rich table, one row per operator, and the graph's arguments and results."""
    table = Table(show_lines=True, expand=False)
    table.add_column("node", justify="right", style="dim")
    table.add_column("operator", overflow="fold", ratio=1)
    table.add_column("inputs  (<- the node each comes from)", overflow="fold", ratio=1)
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
    lines = [_arguments_line("inputs", summary.inputs)]
    if params_file is not None:
        lines.append(_arguments_line("parameters", summary.params) + f"  [dim](from {escape(str(params_file))})[/]")
    else:
        lines.append("[bold]parameters[/]  [dim]unknown without a .params file: every argument is listed "
                     "as an input[/]")
    outputs = ", ".join(f"{_tensor(o)} <- {escape(_source(o))}" for o in summary.outputs)
    lines.append(f"[bold]outputs[/] ({len(summary.outputs)})  {outputs}")
    return Group(table, *(Text.from_markup(line) for line in lines))


def _arguments_line(title: str, args: List[Dict[str, Any]]) -> str:
    items = ", ".join(f"{escape(a['name'])} {_tensor(a)}" for a in args) or "[dim]none[/]"
    return f"[bold]{title}[/] ({len(args)})  {items}"


def _tensor(item: Dict[str, Any]) -> str:
    shape = item.get("shape")
    text = "?" if shape is None else "[" + ", ".join(str(d) for d in shape) + "]"
    return escape(f"{text} {item.get('dtype') or '?'}")


def _source(item: Dict[str, Any]) -> str:
    return item["node"] if item["index"] == 0 else f"{item['node']}:{item['index']}"
