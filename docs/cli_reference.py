"""A Sphinx extension: the ``relayviz-commands`` directive writes each command's ``--help``, taken
from the argument parser of ``relayviz`` when the manual is built."""

from __future__ import annotations

import argparse
from typing import Any, Dict, List

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class RelayvizCommands(SphinxDirective):
    """One section per command of ``relayviz``, in the order ``relayviz --help`` lists them."""

    def run(self) -> List[nodes.Node]:
        from relayviz_instrument.cli import build_parser

        parser = build_parser()
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sections: List[nodes.Node] = []
        for name, sub in subparsers.choices.items():
            section = nodes.section(ids=[f"relayviz-{name}"])
            section += nodes.title(text=f"relayviz {name}")
            section += nodes.literal_block(text=sub.format_help().rstrip())
            sections.append(section)
        return sections


def setup(app: Sphinx) -> Dict[str, Any]:
    app.add_directive("relayviz-commands", RelayvizCommands)
    return {"parallel_read_safe": True}
