"""``relayviz export SOURCE --to FORMAT -o OUT``: a snapshot, a pass or a trace in another tool's format."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.text import Text

from ..export import EXPORT_FORMATS, ExportOptions, export, export_sources
from ._output import warnings_as_lines


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """SOURCE, --pass, --diff and --max-nodes: what `export` and `view` draw."""
    parser.add_argument("source", metavar="SOURCE", help="a RelayViz snapshot, graph JSON, or a trace directory")
    parser.add_argument("--pass", dest="select", metavar="NAME|INDEX",
                        help="the pass event of a trace to draw (default: every pass that changed the module)")
    parser.add_argument("--diff", action="store_true",
                        help="draw each pass's input and output as one graph coloured by the diff")
    parser.add_argument("--max-nodes", metavar="N", type=int,
                        help="cut each drawing to N nodes: unchanged regions first, then inputs, then functions")


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "export", help="write a snapshot, a pass or a trace in another tool's format",
        description="Write SOURCE in another tool's format. dot / svg: GraphViz; tensorboard: a log "
                    "directory with one run per graph; model-explorer: Model Explorer's graph JSON (and node "
                    "data colouring a diff); netron: graph executor JSON with FILE.params beside FILE.json. "
                    "A trace gives one graph per pass that changed the module (a directory of files for dot "
                    "and svg).")
    add_source_arguments(parser)
    parser.add_argument("--to", choices=EXPORT_FORMATS, required=True, help="the output format")
    parser.add_argument("-o", "--output", metavar="OUT", type=Path, required=True,
                        help="the file (or directory, for several graphs or tensorboard) to write")
    parser.add_argument("--params", metavar="FILE", type=Path,
                        help="netron: TVM .params file with values for the graph's parameters")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    with warnings_as_lines():
        graphs, params = export_sources(args.source, params=args.params, select=args.select, diff=args.diff)
        paths = export(graphs, args.to, args.output, params=params,
                       options=ExportOptions(max_nodes=args.max_nodes, params_source=str(args.params)))
    for path in paths:
        console.print(Text(f"wrote {path}"), soft_wrap=True)
    return 0
