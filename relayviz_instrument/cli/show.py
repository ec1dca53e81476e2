"""``relayviz show TRACE``: the pass table of a trace."""

from __future__ import annotations

import argparse
import sys

import orjson
from rich.console import Console

from ..store import load_trace
from ..trace_view import PassTable, TraceSummary, select_records


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
    trace = load_trace(args.trace)
    if args.json:
        out = {"trace": str(trace.path), "complete": trace.complete, "problems": trace.problems,
               "header": trace.header, "records": [r.to_json() for r in trace.records]}
        sys.stdout.buffer.write(orjson.dumps(out, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
        return 0
    console.print(TraceSummary(trace, path=str(trace.path)))
    console.print(PassTable(select_records(trace.records, everything=args.everything)))
    return 0
