"""``relayviz diff A.json B.json`` / ``relayviz diff TRACE --pass P``: compare node by node.

Exit status as for diff(1): 0 when the two are the same graph, 1 when they differ, 2 for
input that cannot be read.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from ..compare import compare_files, compare_pass
from ..errors import RelayVizUsageError
from ._output import print_result


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "diff", help="compare two snapshots node by node",
        description="Pair the nodes of two RelayViz documents (from one trace or from two) or graph "
                    "executor / NNVM graph JSON files (two builds of one model, say) and print what "
                    "was added, removed, changed and rewired, grouped into hunks. "
                    "Exits with 0 when the graphs are the same, 1 when they differ.")
    parser.add_argument("before", metavar="A", help="the earlier snapshot or graph JSON; or a trace, with --pass")
    parser.add_argument("after", metavar="B", nargs="?", help="the later snapshot, or graph JSON")
    parser.add_argument("--pass", dest="pass_", metavar="NAME|INDEX",
                        help="diff this pass of the trace A, its input against its output")
    parser.add_argument("--json", action="store_true",
                        help="print the diff as JSON (keys added, removed, changed, rewired, hunks, summary)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    if (args.pass_ is None) == (args.after is None):
        raise RelayVizUsageError("give two snapshots (relayviz diff A.json B.json) or a trace and a pass "
                                 "(relayviz diff TRACE --pass NAME|INDEX)")
    result = compare_files(args.before, args.after) if args.pass_ is None else compare_pass(args.before, args.pass_)
    print_result(console, result, args.json)
    return 0 if result.same else 1
