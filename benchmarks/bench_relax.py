"""What tracing costs a Relax build, default and with ``tir=True``, measured side by side.

For each CPU model (``--models``), the zero pipeline and ``tvm.compile`` (llvm, opt_level 3;
``relax.build`` on TVM 0.16); for each CUDA model (``--cuda-models``, the MLC-LLM-shaped decoder
with Llama-2-7B's widths by default), ``tvm.compile`` for CUDA sm_90 with its default pipeline
(the CUDA one, dlight's schedules), as MLC-LLM compiles: no GPU is needed. Each runs four ways,
each compile in a fresh process (a Python process compiles once, as a user's script does: no
operator strategy or LLVM state left warm by an earlier compile), the ways alternating over
``--repeat`` rounds so that machine noise hits all four alike:

- plain: no instrument;
- traced: under ``RelayVizTrace`` writing a trace directory (Relax modules snapshotted, TIR
  passes counted and timed);
- tir: the same with ``tir=True`` (every TIR pass event snapshotted, statement by statement);
- printed: TVM's ``PrintAfterAll`` instead (the pass and the module's text after every pass,
  into a file), the baseline a user would otherwise run.

Only the compile is timed, with recording what it built for the traced ways (``record_graph``,
as ``trace_compile``, ``relayviz run`` and ``RELAYVIZ_TRACE`` do); making the model (a
``torch.export`` for the PyTorch ones) is not.
It prints the median compile times, each traced/plain ratio and the printed one, and beside them the median time
spent inside the instrument's callbacks (its own seconds), the same ratios in the process's CPU
time (which other jobs on a shared machine disturb less than wall time), pass events and
snapshots. Nothing is asserted. CUDA models are left out, saying why, where CUDA cannot be
compiled (``relayviz_instrument.demo.cuda.cuda_unavailable``).

``--against DIR`` adds two ways, traced and ``tir=True`` with the instrument of the checkout DIR
(the code before a change) on the same workload (made by this checkout's ``demo``), alternating
with the others: a change's cost measured side by side in one run.

    python benchmarks/bench_relax.py [--models resnet18 llama] [--cuda-models decoder-7b] [--repeat 5]
    python benchmarks/bench_relax.py --models --repeat 1      # the CUDA model only
    python benchmarks/bench_relax.py --models --repeat 3 --against /tmp/before
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

from baselines import print_after_all
from fresh_process import run_fresh

WAYS = ("plain", "traced", "tir", "printed")


def child(target_kind: str, model: str, way: str, against: str, out: str) -> None:
    """One compile of ``model`` for ``target_kind`` (``llvm`` or ``cuda``) in this process, ``way``
    traced or not (with the instrument of the checkout ``against``, unless it is ``-``); print
    one JSON line."""
    import tvm

    from relayviz_instrument.demo.cuda import cuda_target
    from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload

    cuda = target_kind == "cuda"
    target = cuda_target() if cuda else relax_host_target()
    mod = relax_workload(model, target=target)
    if against != "-":  # this checkout made the workload; the other one's package traces it
        for name in [m for m in sys.modules if m == "relayviz_instrument" or m.startswith("relayviz_instrument.")]:
            del sys.modules[name]
        sys.path.insert(0, str(Path(against).resolve()))
    from relayviz_instrument import RelayVizTrace
    from relayviz_instrument.capture import compile_relax

    trace = None if way in ("plain", "printed") else RelayVizTrace(Path(out) / "trace", tir=way == "tir")
    instruments: List[Any] = [] if trace is None else [trace]
    if way == "printed":  # what a user would otherwise run: TVM's PrintAfterAll, into a file
        instruments.append(print_after_all())
    with open(Path(out) / "printed.txt", "w") as printed, contextlib.redirect_stdout(printed):
        started, cpu = time.perf_counter(), time.process_time()
        with tvm.transform.PassContext(opt_level=3, instruments=instruments):
            built = compile_relax(mod, target=target, pipeline=None if cuda else "zero")
        if trace is not None:  # as trace_compile, relayviz run and RELAYVIZ_TRACE record it
            trace.record_graph(built)
        result: Dict[str, Any] = {"seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu}
    if trace is not None:
        result.update(instrument=trace.instrument_seconds, events=len(trace.records),
                      snapshots=len(list((Path(out) / "trace" / "snapshots").iterdir())))
    print(json.dumps(result))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:7])
        return
    from rich.console import Console
    from rich.table import Table

    from relayviz_instrument.demo.cuda import cuda_unavailable
    from relayviz_instrument.demo.relax_models import torch_available

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=[m for m in ("resnet18", "llama")
                                                        if m != "resnet18" or torch_available()],
                        help="models compiled for llvm (none: only the CUDA ones)")
    parser.add_argument("--cuda-models", nargs="*", default=["decoder-7b"],
                        help="models compiled for CUDA sm_90 (none: only the llvm ones)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--against", metavar="DIR", default=None,
                        help="also trace with the relayviz_instrument of the checkout DIR (the code before a change)")
    args = parser.parse_args()
    ways: Dict[str, Tuple[str, str]] = {way: (way, "-") for way in WAYS}
    if args.against:
        ways.update({"traced (before)": ("traced", args.against), "tir (before)": ("tir", args.against)})
    console = Console(width=220)
    compiles = [("llvm", name) for name in args.models]
    why = cuda_unavailable() if args.cuda_models else None
    if why is not None:
        console.print(f"CUDA models left out ({', '.join(args.cuda_models)}): {why}")
    else:
        compiles += [("cuda", name) for name in args.cuda_models]
    table = Table(title=f"llvm: zero pipeline + tvm.compile; cuda (sm_90): tvm.compile's CUDA pipeline; "
                        f"opt_level=3, a fresh process per compile (median of {args.repeat}, alternating)")
    for column in ("model", "target", "code", "events", "plain s", "traced s", "traced/plain", "instrument s", "tir s",
                   "tir/plain", "instrument (tir) s", "PrintAfterAll/plain", "CPU traced/plain", "CPU tir/plain",
                   "snapshots", "snapshots (tir)"):
        table.add_column(column, justify="right")
    for target_kind, name in compiles:
        runs: Dict[str, List[Dict[str, Any]]] = {way: [] for way in ways}
        for _ in range(args.repeat):
            for way, (mode, code) in ways.items():
                runs[way].append(run_fresh(__file__, target_kind, name, mode, code))

        def med(way: str, key: str = "seconds") -> float:
            return statistics.median(r[key] for r in runs[way])

        for suffix, code in [("", "this")] + ([(" (before)", args.against)] if args.against else []):
            traced, tir = "traced" + suffix, "tir" + suffix
            table.add_row(name, target_kind, code, str(runs[traced][-1]["events"]), f"{med('plain'):.2f}",
                          f"{med(traced):.2f}",
                          f"{med(traced) / med('plain'):.2f}", f"{med(traced, 'instrument'):.2f}",
                          f"{med(tir):.2f}", f"{med(tir) / med('plain'):.2f}", f"{med(tir, 'instrument'):.2f}",
                          f"{med('printed') / med('plain'):.2f}",
                          f"{med(traced, 'cpu') / med('plain', 'cpu'):.2f}",
                          f"{med(tir, 'cpu') / med('plain', 'cpu'):.2f}",
                          str(runs[traced][-1]["snapshots"]), str(runs[tir][-1]["snapshots"]))
    console.print(table)


if __name__ == "__main__":
    main()
