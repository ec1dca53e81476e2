"""``relayviz demo``: trace relay.build of a built-in model (``--relax``: a Relax pipeline and
tvm.compile) and print what each pass did."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from ..demo.relay_models import MODELS, host_target, workload
from ..demo.cuda import cuda_target, cuda_unavailable
from ..demo.relax_models import RELAX_MODELS, relax_host_target, relax_workload, torch_available
from ..errors import RelayVizDependencyError, RelayVizUsageError
from ..store import PassRecord
from ..views.show import show_trace


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "demo", help="trace relay.build (or, with --relax, tvm.compile) of a built-in model",
        description="Build a model for this machine's CPU under RelayVizTrace, then print the pass-by-pass "
                    "table and where the trace was written. Relay: a model from tvm.relay.testing through "
                    "relay.build. --relax: a PyTorch model (cnn) or a tvm.relax.frontend.nn one (mlp) through "
                    "the zero pipeline and tvm.compile; with --target cuda, an MLC-LLM-shaped decoder through "
                    "tvm.compile's CUDA pipeline (dlight schedules, no GPU needed).")
    parser.add_argument("--relax", action="store_true",
                        help=f"trace a Relax build (the default on a TVM without Relay); models: "
                             f"{', '.join(RELAX_MODELS)} (default: cnn if PyTorch is installed, else mlp; "
                             "decoder with --target cuda)")
    parser.add_argument("--model", choices=sorted(set(MODELS) | set(RELAX_MODELS)), default=None,
                        help="default: resnet18 (Relay)")
    parser.add_argument("--out", metavar="DIR", default=None,
                        help="trace directory (default: a new relayviz-trace/<timestamp>/)")
    parser.add_argument("--opt-level", type=int, default=3, choices=range(0, 5), metavar="N",
                        help="PassContext opt_level (default: 3)")
    parser.add_argument("--tir", action="store_true", help="also snapshot the TIR passes (RelayVizTrace(tir=True))")
    parser.add_argument("--target", choices=("llvm", "cuda"), default="llvm",
                        help="compile for this machine's CPU (llvm, the default) or, with --relax, for a CUDA GPU "
                             "(sm_90) with tvm.compile's default CUDA pipeline, as MLC-LLM does")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    import importlib.util

    from ..capture import trace_build, trace_compile  # imports TVM

    relax = args.relax or importlib.util.find_spec("tvm.relay") is None
    cuda = args.target == "cuda"
    if cuda:
        if not relax:
            raise RelayVizUsageError("--target cuda traces a Relax build: add --relax")
        why = cuda_unavailable()
        if why is not None:
            raise RelayVizDependencyError(f"cannot compile for CUDA here: {why}")
    if relax:
        name = args.model or ("decoder" if cuda else "cnn" if torch_available() else "mlp")
        target = cuda_target() if cuda else relax_host_target()
        with console.status(f"making the Relax model {name}"):
            mod = relax_workload(name, target=target)
        what = "tvm.compile (CUDA)" if cuda else "tvm.compile"
    else:
        name = args.model or "resnet18"
        with console.status(f"loading {name} from tvm.relay.testing"):
            mod, params = workload(name)
        what = "relay.build"
    progress = Progress(SpinnerColumn(), TextColumn(f"[bold]{what}[/] {{task.description}}"),
                        BarColumn(bar_width=None), TextColumn("{task.completed} pass events"),
                        TimeElapsedColumn(), console=console, transient=True)
    with progress:
        task = progress.add_task(name, total=None)

        def on_pass(record: PassRecord) -> None:  # called by the instrument as each pass ends
            progress.update(task, completed=record.index + 1, description=escape(f"{name}: {record.name}"))

        options = dict(opt_level=args.opt_level, out_dir=args.out, progress=on_pass, tir=args.tir)
        if relax:
            # For CUDA, tvm.compile's own default pipeline (the CUDA one, with dlight's schedules),
            # as MLC-LLM compiles; for a CPU, the zero pipeline first (fusion), then tvm.compile.
            _, trace = trace_compile(mod, target=target, pipeline=None if cuda else "zero", **options)
        else:
            _, trace = trace_build(mod, params=params, target=host_target(), **options)
    console.print(show_trace(trace))
    console.print(f"\nNext: [bold]relayviz report {escape(str(trace.path))}[/] shows what each pass did, "
                  "node by node.", soft_wrap=True)
    return 0 if trace.complete else 1
