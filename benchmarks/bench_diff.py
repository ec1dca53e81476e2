"""How long a node-level diff takes, and how it grows with the graph.

Two parts, measured in one run (best of ``--repeat``; the diff is deterministic, so the best
run is the one least disturbed by the machine):

- synthetic Relay-like graphs (``tests/diffgraphs.py``) of about 1k, 10k and 50k nodes, with
  ``--edits`` known edits, diffed with node ids as the serializer writes them and with ids
  shuffled; the growth factor between sizes, and the time per node;
- real pass pairs on ResNet-18 and ResNet-50 from ``tvm.relay.testing`` (what the trace's
  capture stage diffs after each pass that changed the module): SimplifyInference, FuseOps,
  ConvertLayout, and a module against itself.

Nothing is asserted.

    python benchmarks/bench_diff.py [--sizes 1000 10000 50000] [--edits 10] [--repeat 3] [--no-models]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from diffgraphs import mutate, synthetic  # noqa: E402

from relayviz_instrument.diff import diff  # noqa: E402


def best_seconds(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def print_rows(rows: List[List[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(w) if j == 0 else cell.rjust(w) for j, (cell, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def synthetic_pairs(sizes: List[int], edits: int, repeat: int) -> None:
    rows = [["graph", "nodes", "ms", "us/node", "growth", "size ratio", "ms (shuffled ids)", "growth"]]
    previous: Dict[str, Tuple[int, float]] = {}
    for size in sizes:
        rng = random.Random(size)
        before = synthetic(rng, size)
        after = before.copy()
        done = mutate(after, rng, edits)
        cells = [f"synthetic, {len(done)} edits"]
        for shuffled in (False, True):
            a, _ = before.render(rng if shuffled else None)
            b, _ = after.render(rng if shuffled else None)
            seconds = best_seconds(lambda: diff(a, b), repeat)
            key = "shuffled" if shuffled else "ordered"
            growth = f"{seconds / previous[key][1]:.2f}x" if key in previous else "-"
            ratio = f"{len(a['nodes']) / previous[key][0]:.1f}x" if key in previous else "-"
            if shuffled:
                cells += [f"{seconds * 1e3:.1f}", growth]
            else:
                cells += [str(len(a["nodes"])), f"{seconds * 1e3:.1f}", f"{seconds * 1e6 / len(a['nodes']):.1f}",
                          growth, ratio]
            previous[key] = (len(a["nodes"]), seconds)
        rows.append(cells)
    print(f"synthetic graphs, best of {repeat} runs; growth: time ratio to the previous size")
    print_rows(rows)


def model_pairs(repeat: int) -> None:
    from tvm import relay

    from relayviz_instrument import to_relayviz
    from relayviz_instrument.models import workload

    rows = [["model", "pass", "nodes before", "nodes after", "+", "-", "~", "hunks", "ms"]]
    for model in ("resnet18", "resnet50"):
        mod, _ = workload(model)
        mod = relay.transform.InferType()(mod)
        simplified = relay.transform.InferType()(relay.transform.SimplifyInference()(mod))
        pairs = [
            ("(itself)", mod, mod),
            ("SimplifyInference", mod, simplified),
            ("FuseOps", simplified, relay.transform.FuseOps(2)(simplified)),
            ("ConvertLayout NHWC", mod, relay.transform.InferType()(
                relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "default"]})(mod))),
        ]
        for name, first, second in pairs:
            a, b = to_relayviz(first), to_relayviz(second)
            seconds = best_seconds(lambda: diff(a, b), repeat)
            result = diff(a, b)
            s = result.summary
            rows.append([model, name, str(len(a["nodes"])), str(len(b["nodes"])), str(s["added"]),
                         str(s["removed"]), str(s["changed"] + s["rewired"]), str(len(result.hunks)),
                         f"{seconds * 1e3:.1f}"])
    print(f"\nreal pass pairs (tvm.relay.testing, parameters unbound), best of {repeat} runs")
    print_rows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--edits", type=int, default=10, help="known edits per synthetic pair")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best)")
    parser.add_argument("--no-models", action="store_true", help="skip the ResNet pass pairs")
    args = parser.parse_args()
    synthetic_pairs(args.sizes, args.edits, args.repeat)
    if not args.no_models:
        model_pairs(args.repeat)


if __name__ == "__main__":
    main()
