"""``relayviz show TRACE``: the pass table of a trace."""

from __future__ import annotations

import argparse

from rich.console import Console

from ..store import load_trace
from ..trace_view import show_trace
from ._output import print_result


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "show", help="print the pass table of a trace",
        description="Print what each pass of a traced compilation did: pass, depth, time, whether it "
                    "changed the module, node counts before and after, and nodes added, removed and "
                    "changed. By default only passes that changed the module (or failed) are listed.")
    parser.add_argument("trace", metavar="TRACE", help="a trace directory (written by RelayVizTrace)")
    parser.add_argument("--all", action="store_true", dest="everything",
                        help="list every pass event, including unchanged passes and TIR lowering")
    parser.add_argument("--json", action="store_true", help="print the records as JSON, for scripts")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    print_result(console, show_trace(load_trace(args.trace), everything=args.everything), args.json)
    return 0
