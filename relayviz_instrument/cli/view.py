"""``relayviz view SOURCE``: a snapshot, a pass or a trace opened in Model Explorer's local server."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from rich.console import Console
from rich.text import Text

from ..export import ExportOptions, export_sources
from ..export.model_explorer import explorer_server, write_model_explorer
from .export import add_source_arguments


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "view", help="open a snapshot, a pass or a trace in Model Explorer (pip extra [model-explorer])",
        description="Export SOURCE for Model Explorer (as `relayviz export --to model-explorer`) into a "
                    "temporary directory and serve it with Model Explorer's local server until Ctrl+C.")
    add_source_arguments(parser)
    parser.add_argument("--host", default="localhost", help="the address to serve on (default: localhost)")
    parser.add_argument("--port", type=int, help="the port (default: the first free one from 8080)")
    parser.add_argument("--no-browser", dest="browser", action="store_false",
                        help="print the address instead of opening a browser")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    graphs, _ = export_sources(args.source, select=args.select, diff=args.diff)
    with tempfile.TemporaryDirectory(prefix="relayviz-view-") as tmp:
        written = write_model_explorer(graphs, Path(tmp) / "relayviz.json",
                                       options=ExportOptions(max_nodes=args.max_nodes))
        server = explorer_server(written, host=args.host, port=args.port, open_browser=args.browser)
        console.print(Text(f"Model Explorer: {server.url}"), soft_wrap=True)
        server.run()
    return 0
