"""``relayviz demo``: trace relay.build of a built-in model and print what each pass did."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from ..models import MODELS, host_target, workload
from ..trace_view import show_trace


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "demo", help="trace relay.build of a built-in model",
        description="Build a model from tvm.relay.testing for this machine's CPU under RelayVizTrace, "
                    "then print the pass-by-pass table and where the trace was written.")
    parser.add_argument("--model", choices=sorted(MODELS), default="resnet18", help="default: resnet18")
    parser.add_argument("--out", metavar="DIR", default=None,
                        help="trace directory (default: a new relayviz-trace/<timestamp>/)")
    parser.add_argument("--opt-level", type=int, default=3, choices=range(0, 5), metavar="N",
                        help="PassContext opt_level (default: 3)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from ..capture import trace_build  # imports TVM

    with console.status(f"loading {args.model} from tvm.relay.testing"):
        mod, params = workload(args.model)
    progress = Progress(SpinnerColumn(), TextColumn("[bold]relay.build[/] {task.description}"),
                        BarColumn(bar_width=None), TextColumn("{task.completed} pass events"),
                        TimeElapsedColumn(), console=console, transient=True)
    with progress:
        task = progress.add_task(args.model, total=None)

        def on_pass(record):  # called by the instrument as each pass ends
            progress.update(task, completed=record.index + 1,
                            description=escape(f"{args.model}: {record.name}"))

        _, trace = trace_build(mod, params=params, target=host_target(), opt_level=args.opt_level,
                               out_dir=args.out, progress=on_pass)
    console.print(show_trace(trace))
    console.print(f"\nNext: [bold]relayviz report {escape(str(trace.path))}[/] shows what each pass did, "
                  "node by node.", soft_wrap=True)
    return 0 if trace.complete else 1
