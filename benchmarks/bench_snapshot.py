"""How big a regression snapshot is, and what writing, reading, aligning and explaining cost.

For ``relay.optimize`` at opt_level 3 (parameters bound) of models of ``tvm.relay.testing``:
the snapshot file's size (bytes, lines, modules, pass rows) with constants pinned by digest
(the default) and by shape; the time to encode it from the trace in memory, to decode it, to
align two snapshots of the same compilation and, as a failing test does, to explain the
difference when FoldConstant is disabled. Times are medians of ``--repeat`` runs; nothing is
asserted.

    python benchmarks/bench_snapshot.py [--models resnet18 mobilenet] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable, List

import tvm
from tvm import relay

from relayviz_instrument import RelayVizTrace, align
from relayviz_instrument.demo.relay_models import workload
from relayviz_instrument.regression import SnapshotOptions, decode_snapshot, encode_snapshot, explain

TARGET = "llvm -mtriple=x86_64-linux-gnu"


def optimized(name: str, disabled: List[str]) -> RelayVizTrace:
    mod, params = workload(name)  # a new module: relay.optimize binds the parameters into it
    trace = RelayVizTrace(out_dir=False)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace], disabled_pass=disabled):
        relay.optimize(mod, target=TARGET, params=params)
    return trace


def median_ms(work: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["resnet18", "mobilenet"])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for name in args.models:
        started = time.perf_counter()
        trace = optimized(name, [])
        unfolded = optimized(name, ["FoldConstant"])
        print(f"{name}: two relay.optimize traces in {time.perf_counter() - started:.0f} s "
              f"({len(trace.records)} pass events)")
        for options in (SnapshotOptions(), SnapshotOptions(constants="shapes")):
            data = encode_snapshot(trace, options)
            stored = decode_snapshot(data)
            lines = data.count(b"\n")
            print(f"  constants={options.constants}: {len(data):,} bytes, {lines:,} lines, "
                  f"{len(stored.records)} pass rows, {len(stored.modules)} modules")
        data, other = encode_snapshot(trace), encode_snapshot(unfolded)
        stored = decode_snapshot(data)
        print(f"  encode {median_ms(lambda: encode_snapshot(trace), args.repeat):.0f} ms, "
              f"decode {median_ms(lambda: decode_snapshot(data), args.repeat):.0f} ms, "
              f"align with itself {median_ms(lambda: align(stored, stored), args.repeat):.0f} ms, "
              f"explain FoldConstant disabled {median_ms(lambda: explain(data, other), args.repeat):.0f} ms "
              f"(medians of {args.repeat})")


if __name__ == "__main__":
    main()
