"""What tracing costs a Relax build, default and with ``tir=True``, measured side by side.

For each model, the zero pipeline and ``tvm.compile`` (llvm, opt_level 3; ``relax.build`` on
TVM 0.16) run three ways, alternating over ``--repeat`` rounds so that machine noise hits all
three alike:

- plain: no instrument;
- traced: under ``RelayVizTrace`` writing a trace directory (Relax modules snapshotted, TIR
  passes counted and timed);
- tir: the same with ``tir=True`` (every TIR pass event snapshotted, statement by statement).

It prints the median build times, each traced/plain ratio, the median time spent inside the
instrument's callbacks, pass events and snapshots. Nothing is asserted.

    python benchmarks/bench_relax.py [--models cnn mlp] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from rich.console import Console
from rich.table import Table

from relayviz_instrument import RelayVizTrace
from relayviz_instrument.capture import compile_relax
from relayviz_instrument.demo.relax_models import RELAX_MODELS, relax_host_target, relax_workload, torch_available


def build(mod: Any, instruments: List[Any]) -> float:
    import tvm

    started = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3, instruments=instruments):
        compile_relax(mod, target=relax_host_target())
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=[m for m in RELAX_MODELS if m != "cnn" or torch_available()])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    console = Console(width=160)
    table = Table(title=f"zero pipeline + tvm.compile, llvm, opt_level=3 (median of {args.repeat}, alternating)")
    for column in ("model", "events", "plain s", "traced s", "traced/plain", "tir s", "tir/plain",
                   "instrument s", "instrument (tir) s", "snapshots", "snapshots (tir)"):
        table.add_column(column, justify="right")
    for name in args.models:
        mod = relax_workload(name)
        build(mod, [])  # warm-up: operator strategies, LLVM initialisation
        times: Dict[str, List[float]] = {"plain": [], "traced": [], "tir": []}
        overhead: Dict[str, List[float]] = {"traced": [], "tir": []}
        events = 0
        snapshots: Dict[str, int] = {}
        for _ in range(args.repeat):
            times["plain"].append(build(mod, []))
            for way, tir in (("traced", False), ("tir", True)):
                with tempfile.TemporaryDirectory() as tmp:
                    trace = RelayVizTrace(Path(tmp) / "trace", tir=tir)
                    times[way].append(build(mod, [trace]))
                    overhead[way].append(trace.instrument_seconds)
                    events = len(trace.records)
                    snapshots[way] = len(list((Path(tmp) / "trace" / "snapshots").iterdir()))
        med = {way: statistics.median(values) for way, values in times.items()}
        table.add_row(name, str(events), f"{med['plain']:.2f}", f"{med['traced']:.2f}",
                      f"{med['traced'] / med['plain']:.2f}", f"{med['tir']:.2f}", f"{med['tir'] / med['plain']:.2f}",
                      f"{statistics.median(overhead['traced']):.2f}", f"{statistics.median(overhead['tir']):.2f}",
                      str(snapshots["traced"]), str(snapshots["tir"]))
    console.print(table)


if __name__ == "__main__":
    main()
