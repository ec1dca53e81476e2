"""``relayviz history TRACE [NODE] [--op NAME] [--at PASS|INDEX] [--json]``: where a node came
from, and for a node of an earlier snapshot, what it became."""

from __future__ import annotations

import argparse

from rich.console import Console

from ..errors import RelayVizUsageError
from ..views.history_tree import HistoryTree
from ..analysis.provenance import Provenance, provenance
from ..store import load_trace
from ._output import print_json


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "history", help="print where a node came from and what it became, pass by pass",
        description="Follow a node through every pass on the pipeline: the passes that changed, rewired or "
                    "created it, the nodes each creation replaced, down to the input module's nodes it stems "
                    "from; and for a node of an earlier snapshot, what it became in the last one (the kernels "
                    "that compute it).")
    parser.add_argument("trace", metavar="TRACE", help="a trace directory (written by RelayVizTrace)")
    parser.add_argument("node", metavar="NODE", nargs="?",
                        help="a node of the snapshot: its id, or its name (a variable, a global "
                             "function, a built graph's node)")
    parser.add_argument("--op", metavar="NAME",
                        help="instead of NODE: every call of the operator (or built kernel) NAME; without "
                             "--at, in the last snapshot if it has one, else in the input module (followed "
                             "forward), else in the last snapshot that has one")
    parser.add_argument("--at", metavar="PASS|INDEX",
                        help="the snapshot to pick the node from: after the pass PASS (its first event on "
                             "the pipeline) or after the event INDEX; 'input' for the input module. "
                             "Default: the last snapshot")
    parser.add_argument("--json", action="store_true", help="print the histories as JSON, for scripts")
    parser.set_defaults(func=run)


def _position(prov: Provenance, args: argparse.Namespace) -> int:
    """The snapshot to pick nodes from (see the options)."""
    if args.at is not None:
        return prov.position_at(args.at)
    last = prov.last
    if args.op is None:
        return last
    # An operator the last snapshot no longer calls (a built module holds only kernels): the
    # input module's calls, followed forward; else the latest snapshot that calls it.
    for position in [last, 0, *range(last - 1, 0, -1)]:
        view = prov.view(position)
        if any(view.op_name(r) == args.op for r in range(view.size)):
            return position
    return last  # find() says which operators there are


def run(args: argparse.Namespace, console: Console) -> int:
    if (args.node is None) == (args.op is None):
        raise RelayVizUsageError("give a NODE (an id or a name) or --op NAME, not both and not neither")
    prov = provenance(load_trace(args.trace))
    position = _position(prov, args)
    ids = prov.find(position, node=args.node, op=args.op)
    last = prov.last
    if args.json:
        histories = []
        for i in ids:
            history = prov.history((position, i)).to_json()
            if position < last:
                history["descendants"] = list(prov.descendants((position, i)))
            histories.append(history)
        out = {"trace": str(prov.trace.path),
               "snapshot": {"position": position, "ref": prov.refs[position], "where": prov.where(position)},
               "last": {"position": last, "ref": prov.refs[last]},
               "histories": histories}
        print_json(out)
        return 0
    for i in ids:
        console.print(HistoryTree(prov, (position, i)))
    return 0
