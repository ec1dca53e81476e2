"""``relayviz validate FILE...``: check RelayViz documents."""

from __future__ import annotations

import argparse
import warnings

from rich.console import Console
from rich.markup import escape

from ..errors import RelayVizFormatError, UnknownNodeKindWarning
from ..format import load


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "validate", help="check RelayViz documents against the format",
        description="Check each FILE is a valid RelayViz document: JSON, format tag, version, "
                    "required fields, references in range and of the right kind, no cycles. "
                    "Exits with status 2 if any file is invalid.")
    parser.add_argument("files", nargs="+", metavar="FILE", help="RelayViz JSON documents")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    errors = Console(stderr=True)
    failed = 0
    for path in args.files:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UnknownNodeKindWarning)
            try:
                doc = load(path)
            except RelayVizFormatError as exc:
                failed += 1
                errors.print(f"[red]invalid[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
                continue
        version = ".".join(map(str, doc["version"]))
        console.print(f"[green]valid[/]   {escape(path)}: RelayViz {version}, {len(doc['nodes'])} nodes",
                      highlight=False, soft_wrap=True)
        for warning in caught:
            if issubclass(warning.category, UnknownNodeKindWarning):
                note = str(warning.message)
                if note.startswith(f"{path}: "):  # the file is named on the line above
                    note = note[len(path) + 2:]
                console.print(f"        [yellow]note:[/] {escape(note)}", highlight=False, soft_wrap=True)
    return 2 if failed else 0
