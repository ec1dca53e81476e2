"""``relayviz replay TRACE [--pass N]``: run a recorded pass again from the module its trace kept.

Exit status: 0 the pass succeeds (with the recorded output, when one was recorded), 1 it
fails the same way as recorded, 3 another outcome (another error, another output), 2 for
input that cannot be read or a pass that cannot be made again.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from ..views.replay import replay_event
from ._output import print_result


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "replay", help="run the pass that failed again, without the script that ran it",
        description="Load the input module a trace kept for a pass (the pass that raised, by default), make "
                    "the pass again from its name and run it under the recorded PassContext (opt_level, "
                    "config, required and disabled passes) and target. Exits with 0 if it succeeds (the bug "
                    "is gone; with --pass, with the recorded output), 1 if it fails the same way as recorded, "
                    "3 if the outcome differs otherwise (another error, another output).")
    parser.add_argument("trace", metavar="TRACE", help="a trace directory (written by RelayVizTrace)")
    parser.add_argument("--pass", dest="pass_", metavar="NAME|INDEX",
                        help="replay this pass event instead (its input must have been kept: "
                             "RelayVizTrace(keep_modules=...)) and diff its output against the recorded one")
    parser.add_argument("--pass-from", metavar="MODULE:NAME",
                        help="make the pass with this importable pass, or function returning one, instead of by "
                             "its name (for passes defined in Python)")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    result = replay_event(args.trace, args.pass_, pass_from=args.pass_from)
    print_result(console, result, args.json)
    return result.status
