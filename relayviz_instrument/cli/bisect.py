"""``relayviz bisect -- COMMAND...``: find the pass whose inclusion makes COMMAND fail.

Exit status: 0 when a pass was found, 1 when the command passes with every pass or fails
with every limit, 2 for a command that records no trace (no RelayVizBisect) or bad arguments.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.text import Text

from ..views.bisect import BisectRun, bisect_command
from ._output import OutputConsole, print_result


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "bisect", help="find the pass that makes a check fail, by running it with fewer passes",
        description="Run COMMAND (a script or test that exits non-zero when the compiled model is wrong, and "
                    "compiles under a PassContext holding relayviz_instrument.RelayVizBisect()) again and again, "
                    "letting only the first N skippable passes run (N in RELAYVIZ_BISECT_LIMIT), and bisect N. "
                    "Prints the pass whose inclusion makes COMMAND fail and what it changed, node by node.")
    parser.add_argument("command", nargs="+", metavar="COMMAND", help="the command to run, after --")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="seconds per run; a run that takes longer counts as failing")
    parser.add_argument("--keep-traces", metavar="DIR", help="keep the trace of every run in DIR")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    err = OutputConsole(stderr=True, highlight=False)

    def progress(one: BisectRun) -> None:
        limit = "no limit" if one.limit is None else f"limit {one.limit}"
        outcome = "timed out" if one.timed_out else f"exit {one.status}"
        err.print(Text(f"run {limit}: {outcome}, {one.skipped} of {one.numbered} passes skipped, "
                       f"{one.seconds:.1f} s", style="dim"))

    result = bisect_command(args.command, timeout=args.timeout, keep_traces=args.keep_traces, progress=progress)
    print_result(console, result, args.json)
    return result.status
