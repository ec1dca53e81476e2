"""``relayviz diff A.json B.json`` / ``relayviz diff TRACE --pass P`` / ``relayviz diff TRACE_A TRACE_B``:
compare two snapshots node by node, or two compilations pass by pass.

Exit status as for diff(1): 0 when the two are the same, 1 when they differ, 2 for input that
cannot be read.
"""

from __future__ import annotations

import argparse
import os
from typing import Union

from rich.console import Console

from ..views.diff import FileComparison, TraceComparison, compare_files, compare_pass, compare_traces
from ..errors import RelayVizUsageError
from ._output import print_result

_FORMS = ("give two snapshots (relayviz diff A.json B.json), two trace directories (relayviz diff "
          "TRACE_A TRACE_B) or a trace and a pass (relayviz diff TRACE --pass NAME|INDEX)")


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "diff", help="compare two snapshots node by node, or two traces pass by pass",
        description="Pair the nodes of two RelayViz documents (from one trace or from two) or graph "
                    "executor / NNVM graph JSON files and print what was added, removed, changed and "
                    "rewired, grouped into hunks. Given two trace directories, align their passes "
                    "(a pass one pipeline ran and the other did not is an insertion, not a shift), "
                    "print them side by side and the first pass whose outputs differ, node by node. "
                    "Exits with 0 when the two are the same, 1 when they differ.")
    parser.add_argument("before", metavar="A", help="a snapshot, graph JSON or trace directory")
    parser.add_argument("after", metavar="B", nargs="?", help="a snapshot, graph JSON or trace directory")
    parser.add_argument("--pass", dest="pass_", metavar="NAME|INDEX",
                        help="diff this pass of the trace A, its input against its output")
    parser.add_argument("--all", action="store_true", dest="everything",
                        help="with two traces, list every pair of passes, not only those where something happened")
    parser.add_argument("--json", action="store_true", help="print the result as JSON (docs/json.md)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    if (args.pass_ is None) == (args.after is None):
        raise RelayVizUsageError(_FORMS)
    dirs = [os.path.isdir(path) for path in (args.before, args.after or "")]
    traces = all(dirs)
    if dirs[0] != dirs[1] and args.after is not None:
        raise RelayVizUsageError(f"{args.before if dirs[0] else args.after} is a directory and the other is "
                                 f"not: {_FORMS}")
    result: Union[TraceComparison, FileComparison]
    if traces:
        result = compare_traces(args.before, args.after, everything=args.everything)
    elif args.after is not None:
        result = compare_files(args.before, args.after)
    else:
        result = compare_pass(args.before, args.pass_)
    print_result(console, result, args.json)
    return 0 if result.same else 1
