"""``relayviz report TRACE [--pass REGEX] [--json]``: what each pass did, hunk by hunk."""

from __future__ import annotations

import argparse
import re
from typing import Pattern

from rich.console import Console
from rich.text import Text

from ..views.report import report_trace
from ..store import load_trace
from ._output import print_json_lines, print_result


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "report", help="print what each pass changed, as hunks of nodes",
        description="For each pass of a trace that changed the module: a header (pass, depth, time, "
                    "nodes before and after, + - ~ counts) and its changes grouped into hunks; then a "
                    "table of operator calls added and removed across the passes.")
    parser.add_argument("trace", metavar="TRACE", help="a trace directory (written by RelayVizTrace)")
    parser.add_argument("--pass", dest="pass_pattern", metavar="REGEX", type=_pattern,
                        help="only passes whose name matches REGEX (re.search)")
    parser.add_argument("--all", action="store_true", dest="everything",
                        help="also scratch work and the type inference passes run on their own result")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the report as one JSON object (docs/json.md)")
    out.add_argument("--jsonl", action="store_true", help="print it as JSON lines, one per pass, as they are made")
    out.add_argument("--html", metavar="OUT.html",
                     help="write one self-contained HTML page instead: every pass, its graph coloured by its "
                          "diff, and where each node came from")
    parser.set_defaults(func=run)


def _pattern(text: str) -> Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"not a regular expression: {exc}") from None


def run(args: argparse.Namespace, console: Console) -> int:
    trace = load_trace(args.trace)
    if args.html:
        from ..html_report import write_html_report

        console.print(Text(f"wrote {write_html_report(trace, args.html)}"), soft_wrap=True)
        return 0
    report = report_trace(trace, args.pass_pattern, everything=args.everything)
    if args.jsonl:
        print_json_lines(report.json_lines())
    else:
        print_result(console, report, args.json)
    return 0
