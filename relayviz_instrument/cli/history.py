"""``relayviz history TRACE [NODE] [--op NAME] [--json]``: where a node of the last snapshot came from."""

from __future__ import annotations

import argparse

from rich.console import Console

from ..errors import RelayVizUsageError
from ..views.history_tree import HistoryTree
from ..analysis.provenance import provenance
from ..store import load_trace
from ._output import print_json


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "history", help="print where a node of the last snapshot came from, pass by pass",
        description="Follow a node of the trace's last snapshot back through every pass on the pipeline: "
                    "the passes that changed, rewired or created it, the nodes each creation replaced, "
                    "down to the input module's nodes it stems from.")
    parser.add_argument("trace", metavar="TRACE", help="a trace directory (written by RelayVizTrace)")
    parser.add_argument("node", metavar="NODE", nargs="?",
                        help="a node of the last snapshot: its id, or its name (a variable, a global "
                             "function, a built graph's node)")
    parser.add_argument("--op", metavar="NAME",
                        help="instead of NODE: every call of the operator (or built kernel) NAME")
    parser.add_argument("--json", action="store_true", help="print the histories as JSON, for scripts")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    if (args.node is None) == (args.op is None):
        raise RelayVizUsageError("give a NODE (an id or a name) or --op NAME, not both and not neither")
    prov = provenance(load_trace(args.trace))
    last = prov.last
    ids = prov.find(last, node=args.node, op=args.op)
    if args.json:
        out = {"trace": str(prov.trace.path),
               "snapshot": {"position": last, "ref": prov.refs[last], "where": prov.where(last)},
               "histories": [prov.history((last, i)).to_json() for i in ids]}
        print_json(out)
        return 0
    for i in ids:
        console.print(HistoryTree(prov, (last, i)))
    return 0
