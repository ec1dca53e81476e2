"""What tracing a whole process costs on many small compilations, the shape of TVM's own unit
tests: hundreds of small Relay modules, each through a few passes in a PassContext of its own,
every tenth also through ``relay.build`` (this machine's CPU).

Each round runs the workload in a fresh process three times: untraced, traced the way
``relayviz run`` traces (``relayviz_instrument.autotrace``: the instrument in every context, the
built graphs recorded), and with TVM's ``PrintAfterAll`` in every context instead (the honest
baseline: what a user would otherwise run), the order rotating round by round; another
process measures events that change nothing (InferType on typed modules, see
:func:`unchanged`). Printed, medians of ``--repeat`` rounds:

- ``traced/untraced``: the workload's wall time traced over untraced, and printed over untraced;
- ``per event``: the instrument's own time (``instrument_seconds``) per pass event of the
  workload, and per event that changes nothing;
- the events and builds of one run.

A fourth process measures the floor on the same unchanged events (:func:`floor`): what TVM's
call into two empty Python callbacks costs, and what one ``structural_equal`` of a pass's
input and output costs inside a callback, the least a change test does when a pass returns a
new module object.

Nothing is asserted: the figures are printed, for the README's Performance section.

    python benchmarks/bench_small.py [--modules 300] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

MODES = ("untraced", "traced", "printed")


def _small_module(i: int) -> Any:
    """A Relay function of a few operators; ``i`` varies the shapes and the operator mix."""
    import tvm
    from tvm import relay

    n = 4 + i % 5
    x = relay.var("x", shape=(n, n))
    y = relay.add(x, relay.const(1.0)) if i % 2 else relay.multiply(x, relay.const(2.0))
    y = relay.nn.relu(relay.add(y, relay.add(relay.const(1.0), relay.const(2.0))))
    if i % 3 == 0:
        y = relay.add(y, relay.multiply(x, x))
    return tvm.IRModule.from_expr(relay.Function([x], y))


def workload(modules: int) -> Dict[str, int]:
    """The mixed workload: every module through a few passes, every tenth also built."""
    import tvm
    from tvm import relay

    from relayviz_instrument.demo.relay_models import host_target

    seq = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.SimplifyExpr(),
                                    relay.transform.FoldConstant(), relay.transform.EliminateCommonSubexpr(),
                                    relay.transform.DeadCodeElimination()])
    builds = 0
    for i in range(modules):
        mod = _small_module(i)
        with tvm.transform.PassContext(opt_level=3):
            mod = seq(mod)
        if i % 10 == 0:
            with tvm.transform.PassContext(opt_level=3):
                relay.build(mod, target=host_target())
            builds += 1
    return {"builds": builds}


def unchanged(modules: int, out: str) -> Dict[str, Any]:
    """The instrument's time per event that changes nothing: InferType run on modules already
    typed, once and then 21 times per module, each under its own trace; the difference is 20
    unchanged events per module (the first event of a module snapshots it, in both runs)."""
    import tvm
    from tvm import relay

    from relayviz_instrument import autotrace

    typed = [relay.transform.InferType()(_small_module(i)) for i in range(modules)]
    infer = relay.transform.InferType()
    seconds: Dict[int, float] = {}
    events: Dict[int, int] = {}
    for reps in (1, 21):
        autotrace.start(Path(out) / f"unchanged-{reps}")
        for mod in typed:
            with tvm.transform.PassContext(opt_level=3):
                for _ in range(reps):
                    infer(mod)
        trace = autotrace.stop()
        seconds[reps], events[reps] = trace.instrument_seconds, len(trace.records)
    assert events[21] - events[1] == 20 * modules
    return {"per_unchanged_us": 1e6 * (seconds[21] - seconds[1]) / (events[21] - events[1]),
            "unchanged_events": events[21] - events[1]}


def floor(modules: int) -> Dict[str, Any]:
    """What any instrument pays on the same unchanged events (InferType on typed modules, 20
    runs per module), measured in this process: TVM's call into two Python callbacks that do
    nothing (wall time per event, over the untraced loop's), and inside callbacks, the one TVM
    call a change test cannot avoid when a pass returns a new module object: one
    ``structural_equal`` of its input and output (``structural_hash``, a cheaper walk, for
    comparison: it ignores what PlanDevices sets, virtual devices, so it cannot stand for it)."""
    import tvm
    from tvm import relay

    typed = [relay.transform.InferType()(_small_module(i)) for i in range(modules)]
    infer = relay.transform.InferType()
    inside = {"equal": 0.0, "hash": 0.0}

    @tvm.instrument.pass_instrument
    class Empty:
        def run_before_pass(self, mod: Any, info: Any) -> None:
            pass

        def run_after_pass(self, mod: Any, info: Any) -> None:
            pass

    @tvm.instrument.pass_instrument
    class Compares:
        def __init__(self, how: str) -> None:
            self.how, self.before = how, None

        def run_before_pass(self, mod: Any, info: Any) -> None:
            self.before = mod

        def run_after_pass(self, mod: Any, info: Any) -> None:
            started = time.perf_counter()
            if self.how == "equal":
                tvm.ir.structural_equal(self.before, mod)
            else:
                tvm.ir.structural_hash(mod)
            inside[self.how] += time.perf_counter() - started

    def loop(instruments: List[Any]) -> float:
        started = time.perf_counter()
        for mod in typed:
            with tvm.transform.PassContext(opt_level=3, instruments=instruments):
                for _ in range(20):
                    infer(mod)
        return time.perf_counter() - started

    events = 20 * modules
    loop([])  # warm
    plain, empty = [], []
    for _ in range(5):  # alternating; the fastest of each, the least disturbed by other jobs
        plain.append(loop([]))
        empty.append(loop([Empty()]))
    loop([Compares("equal")])
    loop([Compares("hash")])
    return {"dispatch_us": 1e6 * (min(empty) - min(plain)) / events, "pass_us": 1e6 * min(plain) / events,
            "equal_us": 1e6 * inside["equal"] / events, "hash_us": 1e6 * inside["hash"] / events}


def child(mode: str, modules: int, out: str) -> None:
    """One run in this process; print one JSON line of what was measured."""
    import tvm  # noqa: F401  (imported before the clock starts, in every mode)
    from tvm import relay  # noqa: F401  # imported before the clock starts

    from relayviz_instrument import autotrace

    if mode == "unchanged":
        print(json.dumps({"mode": mode, **unchanged(modules, out)}))
        return
    if mode == "floor":
        print(json.dumps({"mode": mode, **floor(modules)}))
        return
    if mode == "printed":
        seconds = _printed(modules, Path(out) / "printed.txt")
        print(json.dumps({"mode": mode, "seconds": seconds}))
        return
    if mode != "untraced":
        autotrace.start(Path(out) / "trace")
    started = time.perf_counter()
    facts: Dict[str, Any] = workload(modules)
    seconds = time.perf_counter() - started
    trace = autotrace.stop()
    if trace is not None:
        facts.update(events=len(trace.records), instrument_s=trace.instrument_seconds,
                     changed=sum(1 for r in trace.records if r.changed))
    print(json.dumps({"mode": mode, "seconds": seconds, **facts}))


def _printed(modules: int, into: Path) -> float:
    """The workload's time with TVM's ``PrintAfterAll`` in every pass context (the baseline a
    user would otherwise run: the pass and the module's text after each pass, here into a
    file), put there as ``relayviz run`` puts its instrument: added to each PassContext made.
    """
    import tvm

    from baselines import print_after_all

    original = tvm.transform.PassContext.__init__

    def with_printing(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["instruments"] = [*(kwargs.get("instruments") or ()), print_after_all()]
        original(self, *args, **kwargs)

    tvm.transform.PassContext.__init__ = with_printing
    stdout = sys.stdout
    with open(into, "w") as sys.stdout:
        started = time.perf_counter()
        workload(modules)
        seconds = time.perf_counter() - started
    sys.stdout = stdout
    tvm.transform.PassContext.__init__ = original
    return seconds


def _run(mode: str, modules: int) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run([sys.executable, __file__, "--child", mode, "--modules", str(modules), "--out", out],
                              capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", choices=MODES + ("unchanged", "floor"))
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.modules, args.out)
        return
    runs: Dict[str, List[Dict[str, Any]]] = {m: [] for m in MODES + ("unchanged", "floor")}
    for round_ in range(args.repeat):
        order = MODES[round_ % len(MODES):] + MODES[:round_ % len(MODES)]
        for mode in (*order, "unchanged", "floor"):
            runs[mode].append(_run(mode, args.modules))

    def median(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[mode])

    traced, plain = median("traced", "seconds"), median("untraced", "seconds")
    events = runs["traced"][0]["events"]
    print(f"{args.modules} small modules, {runs['traced'][0]['builds']} built with relay.build; "
          f"{events} pass events traced ({runs['traced'][0]['changed']} changed the module); "
          f"median of {args.repeat} rounds")
    print(f"traced/untraced: {traced / plain:.2f}x ({traced:.2f} s / {plain:.2f} s); "
          f"TVM's PrintAfterAll in every context instead: {median('printed', 'seconds') / plain:.2f}x")
    print(f"per event, mixed workload: {1e6 * median('traced', 'instrument_s') / events:.0f} us of instrument time")
    idle = runs["unchanged"][0]["unchanged_events"]
    print(f"per event that changes nothing ({idle} InferType events on typed modules): "
          f"{median('unchanged', 'per_unchanged_us'):.0f} us of instrument time")
    print(f"  the floor on the same events (InferType itself: {median('floor', 'pass_us'):.0f} us): TVM calling two "
          f"empty Python callbacks {median('floor', 'dispatch_us'):.0f} us of wall time; inside a callback, one "
          f"structural_equal of input and output {median('floor', 'equal_us'):.0f} us "
          f"(structural_hash of the output {median('floor', 'hash_us'):.0f} us)")


if __name__ == "__main__":
    main()
