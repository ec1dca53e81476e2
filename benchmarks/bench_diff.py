"""How long a node-level diff takes, how it grows with the graph, and the first engine beside it.

Every line compares the diff engine of this tree (``new``) with the first one, kept frozen in
``tests/legacy_diff`` (``old``), on the same two documents, runs alternating in one process
(median of ``--repeat``; the old engine runs in a forked child that is stopped after
``--old-limit`` seconds, and is not run again on larger graphs of that workload).

- synthetic workloads at each of ``--sizes`` nodes (``tests/diffgraphs.py``):
  identical documents (equal JSON), identical with node ids shuffled, 10 known edits, half
  the calls replaced by other operators (runs of 25), SimplifyInference over a whole
  conv2d + batch_norm + relu chain (the documents TVM writes, checked in
  ``tests/test_diff_workloads.py``), and FoldConstant-shaped (``add(y, multiply(Const,
  Const))`` to ``add(y, Const)``); per workload, µs per node (of the before document) and the
  growth of the time per 10x nodes;
- the 6000-block SimplifyInference chain (54k -> 120k nodes);
- real pass pairs of ``tvm.relay.testing`` models with parameters bound, as ``relay.build``
  sees them: densenet-121 FoldConstant; ResNet-50 SimplifyInference, FuseOps and
  AlterOpLayout (x86).

``new (indexed)`` times ``diff()`` of two documents indexed beforehand with
``index_document`` (a trace indexes each snapshot once and diffs it twice). Nothing is
asserted.

    python benchmarks/bench_diff.py [--sizes 1000 10000 100000] [--repeat 5] [--old-limit 60]
                                    [--no-models] [--no-chain]
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from diffgraphs import conv_bn_relu_chain, fold_constant_chain, mutate, replace_half, synthetic
from legacy_diff import diff as old_diff

from relayviz_instrument.diff import diff, index_document

Doc = Dict[str, Any]


def seconds(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _child(conn: Any, a: Doc, b: Doc) -> None:
    conn.send(seconds(lambda: old_diff(a, b)))


def old_seconds(a: Doc, b: Doc, limit: float) -> Optional[float]:
    """One run of the old engine in a forked child; ``None`` when it takes over ``limit``."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, a, b))
    proc.start()
    ready = parent.poll(limit)
    result = parent.recv() if ready else None
    if not ready:
        proc.kill()
    proc.join()
    return result


def measure(a: Doc, b: Doc, repeat: int, limit: Optional[float]) -> Dict[str, Optional[float]]:
    """Medians of new, new on indexed documents, and old (None: skipped or over the limit)."""
    ia, ib = index_document(a), index_document(b)
    new, indexed, old = [], [], []
    for _ in range(repeat):
        new.append(seconds(lambda: diff(a, b)))
        indexed.append(seconds(lambda: diff(ia, ib)))
        if limit is not None:
            took = old_seconds(a, b, limit)
            if took is None:
                old = []
                limit = None
            else:
                old.append(took)
    return {"new": statistics.median(new), "indexed": statistics.median(indexed),
            "old": statistics.median(old) if old else None, "over": limit is None and not old}


def workloads(size: int) -> Iterator[Tuple[str, Doc, Doc]]:
    rng = random.Random(size)
    graph = synthetic(rng, size)
    a, _ = graph.render()
    yield "identical", a, graph.render()[0]
    yield "identical, ids shuffled", a, graph.render(random.Random(size + 1))[0]
    edited = graph.copy()
    mutate(edited, rng, 10)
    yield "10 edits", a, edited.render()[0]
    replaced = graph.copy()
    replace_half(replaced, rng)
    yield "half replaced", a, replaced.render()[0]
    yield "SimplifyInference chain", conv_bn_relu_chain(max(1, size // 9)), conv_bn_relu_chain(max(1, size // 9), True)
    yield "FoldConstant-shaped", fold_constant_chain(max(1, size // 6)), fold_constant_chain(max(1, size // 6), True)


def print_rows(rows: List[List[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(w) if j == 0 else cell.rjust(w) for j, (cell, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


HEADER = ["workload", "nodes", "new ms", "new us/node", "indexed us/node", "new growth/10x",
          "old ms", "old us/node", "old growth/10x", "old/new"]


def row(name: str, a: Doc, b: Doc, m: Dict[str, Any], previous: Optional[Tuple[int, Dict[str, Any]]],
        limit: float) -> List[str]:
    n = len(a["nodes"])

    def growth(key: str) -> str:
        if previous is None or previous[1].get(key) is None or m.get(key) is None:
            return "-"
        decades = math.log10(n / previous[0])
        return f"{(m[key] / previous[1][key]) ** (1 / decades):.1f}x" if decades > 0 else "-"

    old = m["old"]
    return [name, f"{n}->{len(b['nodes'])}", f"{m['new'] * 1e3:.1f}", f"{m['new'] * 1e6 / n:.2f}",
            f"{m['indexed'] * 1e6 / n:.2f}", growth("new"),
            f"> {limit:.0f} s" if m["over"] else ("-" if old is None else f"{old * 1e3:.1f}"),
            "-" if old is None else f"{old * 1e6 / n:.2f}", growth("old"),
            "-" if old is None else f"{old / m['new']:.1f}"]


def synthetic_table(sizes: List[int], repeat: int, limit: float) -> None:
    results: Dict[str, List[Tuple[int, Dict[str, Any], List[str]]]] = {}
    stopped: Dict[str, bool] = {}
    for size in sizes:
        for name, a, b in workloads(size):
            m = measure(a, b, repeat, None if stopped.get(name) else limit)
            stopped[name] = stopped.get(name, False) or m["over"] or m["old"] is None
            previous = results.get(name, [])
            prev = (previous[-1][0], previous[-1][1]) if previous else None
            results.setdefault(name, []).append((len(a["nodes"]), m, row(name, a, b, m, prev, limit)))
    print(f"synthetic workloads: wall time, median of {repeat} alternating runs; us per node of the "
          f"before document; growth: time ratio per 10x nodes; old/new: how many times faster new is")
    print_rows([HEADER] + [r for rows in results.values() for _, _, r in rows])


def chain_table(repeat: int, limit: float) -> None:
    a, b = conv_bn_relu_chain(6000), conv_bn_relu_chain(6000, True)
    m = measure(a, b, repeat, limit)
    print("\nSimplifyInference over a 6000-block conv2d + batch_norm + relu chain, in-process "
          f"(target: under 1 s), median of {repeat}")
    print_rows([HEADER, row("SimplifyInference, 6000 blocks", a, b, m, None, limit)])


def real_pairs() -> Iterator[Tuple[str, Doc, Doc]]:
    import tvm
    from tvm import relay
    from tvm.relay.build_module import bind_params_by_name

    from relayviz_instrument import to_relayviz
    from relayviz_instrument.demo.relay_models import workload

    T = relay.transform

    def bound(name: str) -> Any:
        mod, params = workload(name)
        mod = T.InferType()(mod)
        mod["main"] = bind_params_by_name(mod["main"], params)
        return T.InferType()(mod)

    with tvm.transform.PassContext(opt_level=3), tvm.target.Target("llvm -mtriple=x86_64-linux-gnu"):
        dense = T.InferType()(T.SimplifyInference()(bound("densenet121")))
        yield "densenet-121 FoldConstant", to_relayviz(dense), to_relayviz(T.FoldConstant()(dense))
        resnet = bound("resnet50")
        simplified = T.InferType()(T.SimplifyInference()(resnet))
        yield "resnet-50 SimplifyInference", to_relayviz(resnet), to_relayviz(simplified)
        folded = T.InferType()(T.CanonicalizeOps()(T.FoldScaleAxis()(T.FoldConstant()(simplified))))
        altered = T.InferType()(T.AlterOpLayout()(folded))
        yield "resnet-50 AlterOpLayout", to_relayviz(folded), to_relayviz(altered)
        fused = T.InferType()(T.FuseOps(2)(T.InferType()(T.FoldConstant()(altered))))
        yield "resnet-50 FuseOps", to_relayviz(T.InferType()(T.FoldConstant()(altered))), to_relayviz(fused)


def model_table(repeat: int, limit: float) -> None:
    rows = [HEADER + ["+", "-", "~", "hunks (new)", "hunks (old)"]]
    for name, a, b in real_pairs():
        m = measure(a, b, repeat, limit)
        new, old = diff(a, b), old_diff(a, b)
        s = new.summary
        rows.append(row(name, a, b, m, None, limit) + [
            str(s["added"]), str(s["removed"]), str(s["changed"] + s["rewired"]), str(len(new.hunks)),
            str(len(old.hunks))])
    print(f"\nreal pass pairs (tvm.relay.testing, parameters bound), median of {repeat}")
    print_rows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (median)")
    parser.add_argument("--old-limit", type=float, default=60.0, help="seconds an old-engine run may take")
    parser.add_argument("--no-models", action="store_true", help="skip the real pass pairs")
    parser.add_argument("--no-chain", action="store_true", help="skip the 6000-block chain")
    args = parser.parse_args()
    synthetic_table(args.sizes, args.repeat, args.old_limit)
    if not args.no_chain:
        chain_table(args.repeat, args.old_limit)
    if not args.no_models:
        model_table(args.repeat, args.old_limit)


if __name__ == "__main__":
    main()
