"""How long each exporter takes on big graphs: ResNet-50 and Inception-v3 after FuseOps.

For each model: the module after SimplifyInference + FuseOps (parameters unbound, as a trace
of relay.build sees it before constants are bound), drawn alone and as the FuseOps diff.
Each exporter writes into a temporary directory; every step is timed over ``--repeat``
alternating rounds (formats interleaved, so machine noise spreads over all of them) and the
median is printed with the drawing's node count. ``svg`` includes GraphViz's ``dot`` layout.
Nothing is asserted.

    python benchmarks/bench_export.py [--repeat 5] [--models resnet50 inception_v3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Tuple

from relayviz_instrument import to_relayviz
from relayviz_instrument.diff import diff
from relayviz_instrument.errors import LargeGraphWarning
from relayviz_instrument.export import ExportGraph, export
from relayviz_instrument.export.drawing import draw

FORMATS = ("dot", "svg", "tensorboard", "model-explorer")


def fused(model: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """RelayViz documents of ``model`` before and after SimplifyInference + FuseOps."""
    import tvm
    from tvm import relay

    from relayviz_instrument.demo.relay_models import workload

    mod, _ = workload(model)
    mod = relay.transform.InferType()(mod)
    with tvm.transform.PassContext(opt_level=3):
        simplified = relay.transform.InferType()(relay.transform.SimplifyInference()(mod))
        after = relay.transform.InferType()(relay.transform.FuseOps(fuse_opt_level=2)(simplified))
    return to_relayviz(simplified), to_relayviz(after)


def output(fmt: str, where: Path, n: int) -> Path:
    if fmt == "model-explorer":
        return where / f"{fmt}{n}.json"
    return where / (f"{fmt}{n}" + ("" if fmt == "tensorboard" else f".{fmt}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--models", nargs="+", default=["resnet50", "inception_v3"])
    args = parser.parse_args()
    warnings.simplefilter("ignore", LargeGraphWarning)
    rows: List[List[str]] = [["graph", "nodes drawn", "draw ms"] + [f"{f} s" for f in FORMATS]]
    for model in args.models:
        before, after = fused(model)
        started = time.perf_counter()
        change = diff(before, after)
        diff_s = time.perf_counter() - started
        cases = {f"{model} after FuseOps": ExportGraph(model, after),
                 f"{model} FuseOps diff": ExportGraph(model, after, before=before, diff=change)}
        for label, graph in cases.items():
            times: Dict[str, List[float]] = {f: [] for f in ("draw",) + FORMATS}
            with tempfile.TemporaryDirectory() as tmp:
                for n in range(args.repeat):
                    for fmt, step in [("draw", lambda: draw(graph))] + [
                            (f, (lambda f=f: export([graph], f, output(f, Path(tmp), n)))) for f in FORMATS]:
                        started = time.perf_counter()
                        step()
                        times[fmt].append(time.perf_counter() - started)
            nodes = len(draw(graph).nodes)
            rows.append([label, str(nodes), f"{statistics.median(times['draw']) * 1e3:.0f}"]
                        + [f"{statistics.median(times[f]):.2f}" for f in FORMATS])
        print(f"{model}: diff of the FuseOps pair {diff_s:.2f} s (not part of any exporter below)")
    print(f"\nmedian of {args.repeat} alternating rounds; seconds per export of one graph, written to disk")
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


if __name__ == "__main__":
    main()
