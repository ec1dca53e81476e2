"""The ``relayviz`` command line: argument parsing and printing only.

Each command lives in its own module with ``register(subparsers)``, which adds its parser
and sets ``func`` to a ``run(args, console) -> int`` that calls one library function and
prints what it returns (a rich renderable, or its JSON with ``--json``). Bad input (any
:class:`RelayVizError`) prints one line to standard error and exits with the status
:data:`~relayviz_instrument.errors.EXIT_STATUS` gives it (2), without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional

from ..errors import RelayVizError
from ._output import OutputConsole, print_error

__all__ = ["main", "build_parser"]

#: Command modules, in the order ``--help`` lists them.
COMMANDS = ("demo", "run", "show", "report", "history", "kernel", "diff", "validate", "inspect", "export", "view",
            "replay", "bisect", "doctor")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``relayviz`` with every command registered."""
    parser = argparse.ArgumentParser(
        prog="relayviz",
        description="Record, inspect and compare what each TVM pass does to a model.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``relayviz`` with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    console = OutputConsole()
    try:
        return int(args.func(args, console) or 0)
    except RelayVizError as exc:
        return print_error(exc)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `relayviz show ... | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
