"""``relayviz kernel TRACE NAME [--brief] [--json]``: one kernel's loop nest after every pass
that changed it, from the pass that made it to the device kernel, and the operators it stems
from."""

from __future__ import annotations

import argparse

from rich.console import Console

from ..store import load_trace
from ..views.kernel import kernel_history
from ._output import print_result


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "kernel", help="print a kernel's loop nest after every pass that changed it",
        description="Follow one kernel (a PrimFunc, its host function or its device kernel) through a trace "
                    "recorded with tir=True: the pass that made it, each pass that changed its loop nest "
                    "(loops with their kind and thread bindings, blocks, allocations with their scope, "
                    "barriers) and how, the split into host and device kernel with its launch, and the "
                    "operators of the input module it stems from.")
    parser.add_argument("trace", metavar="TRACE", help="a trace directory (written by RelayVizTrace(tir=True))")
    parser.add_argument("name", metavar="NAME", help="the kernel: a PrimFunc's name, or a device kernel's (X_kernel)")
    parser.add_argument("--brief", action="store_true", help="what each pass changed, without the loop nests")
    parser.add_argument("--json", action="store_true", help="print the story as JSON, for scripts")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    print_result(console, kernel_history(load_trace(args.trace), args.name, brief=args.brief), args.json)
    return 0
