"""What tracing costs many small compilations: the instrument's fixed cost per pass event.

A workload shaped like TVM's own unit tests: ``--modules`` small Relay modules (a few
operators each: element-wise chains with constants, a small conv2d block, a dense layer and a
softmax, in varying shapes), each run under its own PassContext through a few passes
(InferType, SimplifyExpr, FoldConstant, EliminateCommonSubexpr, FuseOps), then InferType once
more; every ``--build-every``-th module also goes through ``relay.build``. Traced, each
PassContext gets its own ``RelayVizTrace`` writing a trace directory (as a test suite traced
test by test would).

Each run is a fresh process, traced and untraced alternating over ``--repeat`` rounds. It
prints the median workload time of each, their ratio, and, from the traced runs, the
instrument's own time per pass event: on average over all events, and over the events that
changed nothing (``changed`` False: the fixed path of callbacks, change test and manifest
lines, without a new snapshot), measured around the instrument's two callbacks of each event.
Nothing is asserted.

``--against DIR`` adds a third way, traced by the ``relayviz_instrument`` of the checkout DIR
(the code before a change), alternating with the other two: a change measured side by side.

    python benchmarks/bench_events.py [--modules 100] [--build-every 10] [--repeat 5] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

from fresh_process import run_fresh


def _module(i: int) -> Any:
    """The ``i``-th small module of the workload: one of four shapes, sizes varying with ``i``."""
    import numpy as np
    from tvm import relay

    n = 4 + i % 7
    kind = i % 4
    rng = np.random.default_rng(i)
    if kind == 0:  # element-wise chain with constants to fold and a common subexpression
        x = relay.var("x", shape=(1, n), dtype="float32")
        c = relay.add(relay.const(rng.random((1, n), dtype="float32")), relay.const(1.0))
        y = relay.nn.relu(relay.multiply(relay.add(x, c), relay.add(x, c)))
        body = relay.subtract(y, relay.const(0.5))
        return relay.Function([x], body)
    if kind == 1:  # conv2d + bias + relu
        x = relay.var("x", shape=(1, 3, n, n), dtype="float32")
        w = relay.const(rng.random((4, 3, 3, 3), dtype="float32"))
        b = relay.const(rng.random((4,), dtype="float32"))
        y = relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1), channels=4, kernel_size=(3, 3)), b)
        return relay.Function([x], relay.nn.relu(y))
    if kind == 2:  # dense + softmax
        x = relay.var("x", shape=(2, n), dtype="float32")
        w = relay.const(rng.random((8, n), dtype="float32"))
        return relay.Function([x], relay.nn.softmax(relay.nn.dense(x, w)))
    # reshape / transpose / concatenate, nothing to fold
    x = relay.var("x", shape=(2, n), dtype="float32")
    y = relay.var("y", shape=(2, n), dtype="float32")
    z = relay.concatenate([relay.transpose(x), relay.transpose(y)], axis=0)
    return relay.Function([x, y], relay.reshape(z, (-1,)))


class _Timed:
    """``RelayVizTrace`` with the time of its two callbacks of each event kept per event."""

    def __new__(cls, out: Path) -> Any:
        from relayviz_instrument import RelayVizTrace

        class Timed(RelayVizTrace):
            def __init__(self) -> None:
                super().__init__(out)
                self.event_seconds: Dict[int, float] = {}

            def run_before_pass(self, mod: Any, info: Any) -> None:
                started = time.perf_counter()
                super().run_before_pass(mod, info)
                index = len(self.records) - 1
                self.event_seconds[index] = self.event_seconds.get(index, 0.0) + time.perf_counter() - started

            def run_after_pass(self, mod: Any, info: Any) -> None:
                started = time.perf_counter()
                # The open events (the code before the capture split held them as _stack); read from
                # the instance's own attributes: a name TVM's object lacks costs an FFI lookup.
                events = vars(self).get("_events")
                stack = events.stack if events is not None else vars(self)["_stack"]
                index = stack[-1].record.index if stack else -1
                super().run_after_pass(mod, info)
                self.event_seconds[index] = self.event_seconds.get(index, 0.0) + time.perf_counter() - started

        return Timed()


def child(mode: str, out: str, modules: int, build_every: int) -> None:
    """The workload in this process, traced or not; print one JSON line of what was measured."""
    import tvm
    from tvm import relay

    target = tvm.target.Target("llvm -mtriple=x86_64-linux-gnu")
    passes = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.SimplifyExpr(),
                                       relay.transform.FoldConstant(), relay.transform.EliminateCommonSubexpr(),
                                       relay.transform.FuseOps(fuse_opt_level=2)])
    funcs = [_module(i) for i in range(modules)]  # made before the clock starts, as test inputs are
    traces: List[Any] = []
    started = time.perf_counter()
    for i, func in enumerate(funcs):
        mod = tvm.IRModule.from_expr(func)
        instruments = []
        if mode == "traced":
            traces.append(_Timed(Path(out) / f"trace-{i}"))
            instruments.append(traces[-1])
        with tvm.transform.PassContext(opt_level=3, instruments=instruments):
            mod = passes(mod)
            mod = relay.transform.InferType()(mod)
            if build_every and i % build_every == 0:
                relay.build(tvm.IRModule.from_expr(func), target=target)
    result: Dict[str, Any] = {"seconds": time.perf_counter() - started}
    if traces:
        events = [(r.changed, t.event_seconds.get(r.index, 0.0)) for t in traces for r in t.records]
        unchanged = [s for changed, s in events if changed is False]
        result.update(instrument=sum(t.instrument_seconds for t in traces), events=len(events),
                      unchanged=len(unchanged), unchanged_seconds=sum(unchanged),
                      callback_seconds=sum(s for _, s in events))
    print(json.dumps(result))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[5], int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=100)
    parser.add_argument("--build-every", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--against", metavar="DIR", default=None,
                        help="also trace with the relayviz_instrument of the checkout DIR (the code before a change)")
    args = parser.parse_args()
    ways = {"plain": ("plain", None), "traced": ("traced", None)}
    if args.against:
        ways["traced (before)"] = ("traced", args.against)
    runs: Dict[str, List[Dict[str, Any]]] = {way: [] for way in ways}
    for _ in range(args.repeat):
        for way, (mode, code) in ways.items():
            runs[way].append(run_fresh(__file__, mode, str(args.modules), str(args.build_every), code=code))
    plain = statistics.median(r["seconds"] for r in runs["plain"])
    print(f"{args.modules} small Relay modules, 5 passes + InferType each, relay.build every {args.build_every}th; "
          f"a fresh process per run, median of {args.repeat}, alternating")
    for way in (w for w in ways if w != "plain"):
        traced = statistics.median(r["seconds"] for r in runs[way])
        per_event = statistics.median(1e6 * r["callback_seconds"] / r["events"] for r in runs[way])
        per_unchanged = statistics.median(1e6 * r["unchanged_seconds"] / r["unchanged"] for r in runs[way])
        last = runs[way][-1]
        print(f"{way}: pass events: {last['events']} ({last['unchanged']} changed nothing)")
        print(f"  untraced {plain:.2f} s   traced {traced:.2f} s   traced/untraced {traced / plain:.2f}")
        print(f"  instrument {statistics.median(r['instrument'] for r in runs[way]):.2f} s; per pass event "
              f"{per_event:.0f} us; per event that changed nothing {per_unchanged:.0f} us")


if __name__ == "__main__":
    main()
