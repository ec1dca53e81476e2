"""``relayviz doctor``: how the package is installed, and whether ``RELAYVIZ_TRACE`` works here."""

from __future__ import annotations

import argparse

from rich.console import Console

from ..views.doctor import check_installation
from ._output import print_json


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "doctor", help="check the installation: is the startup hook of RELAYVIZ_TRACE active?",
        description="Say where relayviz_instrument is installed and how (an editable install or not), "
                    "whether RELAYVIZ_TRACE=DIR python script.py traces a script with this Python (a new "
                    "Python is started with RELAYVIZ_TRACE set to see whether the startup hook "
                    "relayviz-trace.pth starts tracing in it), the TVM it finds and the optional extras "
                    "installed. Exits with 0 when the hook is active, 1 when it is not.")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    check = check_installation()
    if args.json:
        print_json(check.to_json())
    else:
        console.print(check)
    return 0 if check.hook_active else 1
