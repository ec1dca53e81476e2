"""``relayviz validate FILE...``: check RelayViz documents (and graph JSON)."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.text import Text

from ..views.validate import check_file
from ._output import OutputConsole


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "validate", help="check RelayViz documents (or graph JSON) against the format",
        description="Check each FILE is a valid RelayViz document (JSON, format tag, version, "
                    "required fields, references in range and of the right kind, no cycles) or valid "
                    "graph executor / NNVM graph JSON. Exits with status 2 if any file is invalid.")
    parser.add_argument("files", nargs="+", metavar="FILE", help="RelayViz documents or graph JSON files")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    errors = OutputConsole(stderr=True, soft_wrap=True, highlight=False)
    failed = 0
    for path in args.files:
        check = check_file(path)
        if not check.valid:
            failed += 1
            errors.print(Text.assemble(("invalid", "red"), f" {check.error}"))
            continue
        console.print(Text.assemble(("valid", "green"), f"   {path}: {check.description}"),
                      soft_wrap=True, highlight=False)
        for note in check.notes:
            console.print(Text.assemble("        ", ("note:", "yellow"), f" {note}"), soft_wrap=True, highlight=False)
    return 2 if failed else 0
