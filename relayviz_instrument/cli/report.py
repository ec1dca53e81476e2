"""``relayviz report TRACE [--pass REGEX] [--json]``: what each pass did, hunk by hunk."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, Dict, List, Optional, Pattern

import orjson
from rich.console import Console
from rich.markup import escape

from ..diff import GraphDiff, diff
from ..report import DiffView, OpDeltaTable, pipeline_op_deltas
from ..store import PassRecord, Trace, load_trace


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "report", help="print what each pass changed, as hunks of nodes",
        description="For each pass of a trace that changed the module: a header (pass, depth, time, "
                    "nodes before and after, + - ~ counts) and its changes grouped into hunks; then a "
                    "table of operator calls added and removed across the passes.")
    parser.add_argument("trace", metavar="TRACE", help="a trace directory (written by RelayVizTrace)")
    parser.add_argument("--pass", dest="pass_pattern", metavar="REGEX", type=_pattern,
                        help="only passes whose name matches REGEX (re.search)")
    parser.add_argument("--json", action="store_true",
                        help="print each pass's diff as JSON (keys added, removed, changed, rewired, "
                             "hunks, summary)")
    parser.add_argument("--html", metavar="OUT.html",
                        help="write one self-contained HTML page instead: every pass, its graph coloured "
                             "by its diff, and where each node came from")
    parser.set_defaults(func=run)


def _pattern(text: str) -> Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"not a regular expression: {exc}") from None


def changed_passes(trace: Trace, pattern: Optional[Pattern[str]] = None) -> List[PassRecord]:
    """The records of passes that changed the module (with both snapshots), optionally by name."""
    return [r for r in trace.records
            if r.changed and r.before and r.after and (pattern is None or pattern.search(r.name))]


def run(args: argparse.Namespace, console: Console) -> int:
    trace = load_trace(args.trace)
    if args.html:
        from ..html_report import write_html_report

        console.print(f"wrote {escape(str(write_html_report(trace, args.html)))}", highlight=False)
        return 0
    records = changed_passes(trace, args.pass_pattern)
    documents: Dict[str, Dict[str, Any]] = {}

    def snapshot(ref: str) -> Dict[str, Any]:
        # A pass's output is the next pass's input: keep the documents of the last diff.
        if ref not in documents:
            if len(documents) > 2:
                documents.pop(next(iter(documents)))
            documents[ref] = trace.snapshot(ref)
        return documents[ref]

    diffs: List[GraphDiff] = []
    passes: List[Dict[str, Any]] = []
    for record in records:
        result = diff(snapshot(record.before), snapshot(record.after))  # type: ignore[arg-type]
        diffs.append(result)
        if args.json:
            passes.append({"index": record.index, "name": record.name, "depth": record.depth,
                           "duration_ms": record.duration_ms, "nodes_before": result.nodes_before,
                           "nodes_after": result.nodes_after, **result.to_json()})
        else:
            console.print(DiffView(result, record.name, [
                f"#{record.index}", f"depth {record.depth}", f"{record.duration_ms:,.2f} ms",
                f"{result.nodes_before} → {result.nodes_after} nodes"]))
    if args.json:
        out = {"trace": str(trace.path), "complete": trace.complete, "passes": passes}
        sys.stdout.buffer.write(orjson.dumps(out, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
        return 0
    if not records:
        console.print("no pass changed the module" + (" (among those --pass selects)" if args.pass_pattern else ""))
        return 0
    console.print(OpDeltaTable(pipeline_op_deltas(trace.records, {r.index: d for r, d in zip(records, diffs)})))
    return 0
