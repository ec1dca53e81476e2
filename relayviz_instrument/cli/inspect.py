"""``relayviz inspect GRAPH [--json] [--params FILE]``: the operators of a built graph."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..views.inspect import inspect_graph
from ._output import print_result


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
    print_result(console, inspect_graph(args.graph, params=args.params), args.json)
    return 0
