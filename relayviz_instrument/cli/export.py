"""``relayviz export SNAPSHOT --to FORMAT -o OUT``: a snapshot in another tool's format."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.text import Text

from ..export import EXPORT_FORMATS, export, export_sources


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "export", help="write a snapshot in another tool's format (netron: TVM graph JSON)",
        description="Write SNAPSHOT (a RelayViz document, or graph JSON) in another tool's format. "
                    "netron: graph executor JSON that Netron opens, with FILE.params beside FILE.json "
                    "when parameter values are known (from --params, or constants the snapshot "
                    "carries in full).")
    parser.add_argument("snapshot", metavar="SNAPSHOT", help="RelayViz document or graph JSON")
    parser.add_argument("--to", choices=EXPORT_FORMATS, required=True, help="the output format")
    parser.add_argument("-o", "--output", metavar="OUT", type=Path, required=True, help="the file to write")
    parser.add_argument("--params", metavar="FILE", type=Path,
                        help="TVM .params file with values for the graph's parameters")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    graphs, params = export_sources(args.snapshot, params=args.params)
    for path in export(graphs, args.to, args.output, params=params, params_source=str(args.params)):
        console.print(Text(f"wrote {path}"), soft_wrap=True)
    return 0
