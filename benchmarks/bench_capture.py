"""What tracing costs a real compilation, measured side by side in one run.

For each model, ``relay.build`` (llvm, opt_level 3) runs three ways, interleaved over
``--repeat`` rounds so that machine noise hits all three alike:

- plain: no instrument;
- traced: under ``RelayVizTrace`` writing a trace directory;
- printed: under an instrument that does what TVM's ``PrintAfterAll`` does for every pass
  event, ``mod.astext()``, without writing the text anywhere.

It prints the median build times, the traced/plain ratio, and the ratio of the time spent
inside RelayVizTrace's callbacks to the time spent in ``astext()``. Nothing is asserted.

    python benchmarks/bench_capture.py [--models resnet18 resnet50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import tvm
from rich.console import Console
from rich.table import Table
from tvm import relay

from relayviz_instrument import RelayVizTrace
from relayviz_instrument.models import workload


class AsTextAfterEveryPass(tvm.instrument.PassInstrument):
    """The work of PrintAfterAll (printing the module after each pass), timed, not printed."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0
        self.chars = 0

    def run_after_pass(self, mod, info):
        started = time.perf_counter()
        self.chars += len(mod.astext())
        self.seconds += time.perf_counter() - started


def build(mod, params, instruments):
    started = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3, instruments=instruments):
        relay.build(mod, target="llvm", params=params)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet18", "resnet50"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    console = Console(width=160)
    table = Table(title=f"relay.build, llvm, opt_level=3 (median of {args.repeat})")
    for column in ("model", "events", "plain s", "traced s", "traced/plain", "instrument s",
                   "astext-all s", "instrument/astext", "snapshots", "trace MB"):
        table.add_column(column, justify="right")
    for name in args.models:
        mod, params = workload(name)
        build(mod, params, [])  # warm-up: operator strategies, LLVM initialisation
        plain, traced, overhead, printed, printing = [], [], [], [], []
        events = snapshots = size = 0
        for _ in range(args.repeat):
            plain.append(build(mod, params, []))
            with tempfile.TemporaryDirectory() as tmp:
                trace = RelayVizTrace(Path(tmp) / "trace")
                traced.append(build(mod, params, [trace]))
                overhead.append(trace.instrument_seconds)
                events = len(trace.records)
                files = list((Path(tmp) / "trace").rglob("*"))
                snapshots = len(list((Path(tmp) / "trace" / "snapshots").iterdir()))
                size = sum(f.stat().st_size for f in files if f.is_file())
            as_text = AsTextAfterEveryPass()
            printed.append(build(mod, params, [as_text]))
            printing.append(as_text.seconds)
        med = statistics.median
        table.add_row(name, str(events), f"{med(plain):.2f}", f"{med(traced):.2f}",
                      f"{med(traced) / med(plain):.3f}", f"{med(overhead):.3f}", f"{med(printing):.3f}",
                      f"{med(overhead) / med(printing):.3f}", str(snapshots), f"{size / 1e6:.2f}")
        console.print(f"{name}: done", style="dim")
    console.print(table)


if __name__ == "__main__":
    main()
