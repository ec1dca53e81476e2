"""``relayviz show TRACE``: the pass table of a trace."""

from __future__ import annotations

import argparse

from rich.console import Console

from ..store import load_trace
from ..store.suite import is_suite
from ..views.suite import show_suite
from ..views.show import show_trace
from ._output import print_result


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "show", help="print the pass table of a trace",
        description="Print what each pass of a traced compilation did: pass, depth, time, whether it "
                    "changed the module, node counts before and after, and nodes added, removed and "
                    "changed. By default only pipeline passes that changed the module (or failed) are "
                    "listed, one table per compilation; --all adds every event, scratch work included.")
    parser.add_argument("trace", metavar="TRACE", help="a trace directory (written by RelayVizTrace), or a folder "
                        "of per-test traces (written by pytest --relayviz-trace): one row per test")
    parser.add_argument("--all", action="store_true", dest="everything",
                        help="list every pass event, including unchanged passes and TIR lowering")
    parser.add_argument("--paths", action="store_true",
                        help="also list the snapshot files of each row (for relayviz diff and export)")
    parser.add_argument("--json", action="store_true", help="print the records as JSON, for scripts")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    if is_suite(args.trace):
        print_result(console, show_suite(args.trace), args.json)
        return 0
    overview = show_trace(load_trace(args.trace), everything=args.everything, paths=args.paths)
    print_result(console, overview, args.json)
    return 0
