"""``relayviz history TRACE [NODE] [--op NAME] [--at PASS|INDEX] [--json]``: where a node came
from, and for a node of an earlier snapshot, what it became."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.text import Text

from ..analysis.kernel_story import host_of
from ..analysis.loop_nest import KernelNests
from ..errors import RelayVizUsageError
from ..names import printable
from ..views.history import HistoryTree
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


def _position(prov: Provenance, args: argparse.Namespace, console: Console) -> int:
    """The snapshot to pick nodes from (see the options)."""
    if args.at is not None:
        return prov.position_at(args.at)
    if args.op is None:  # a name the last snapshot lacks (a device kernel): the first that has it
        found = None if args.node.isdigit() else prov.named(args.node)
        return prov.last if found is None else found
    found = prov.calling(args.op)
    host = None if found is not None else host_of(prov.trace, args.op, KernelNests(prov.cache))
    if host is not None and prov.calling(host) is not None:  # a device kernel: its host's calls
        if not args.json:
            console.print(Text(printable(f"{args.op} is launched by its host function {host}: the calls of {host}"),
                               style="dim"), soft_wrap=True)
        args.op, found = host, prov.calling(host)
    return prov.last if found is None else found  # find() says which operators there are


def run(args: argparse.Namespace, console: Console) -> int:
    if (args.node is None) == (args.op is None):
        raise RelayVizUsageError("give a NODE (an id or a name) or --op NAME, not both and not neither")
    prov = provenance(load_trace(args.trace))
    position = _position(prov, args, console)
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
