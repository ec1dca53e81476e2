"""The largest inputs: a 100,000-let A-normal-form Relay program and a 1,000,000-node document.

For each input this measures, one stage after the other in one process (``make scale``):

- ``build``: the input itself (the Relay program through TVM's constructors; the document
  as Python dicts);
- ``serialize``: the Relay program to a RelayViz document (``to_relayviz``);
- ``encode``: the document to JSON bytes (orjson);
- ``load``: the bytes parsed and validated (``loads``: every field, reference and cycle);
- ``diff``: the document against a copy with one call rewired in the middle (``diff``), within
  a time budget (``--diff-budget``): a diff still running then is stopped where it is, and
  the table names the function it was in.

Each stage's wall time and its peak memory above what the process held when it started
(Linux's VmHWM, reset before each stage through ``/proc/self/clear_refs``). Python's
recursion limit stays at its default (1,000), far below the depth of either input (every
let nests in the previous one; every call of the document's chain takes the previous
call): a stage that recursed would stop with RecursionError, and the table would say so,
with the function it stopped in.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from relayviz_instrument import diff, loads
from relayviz_instrument.format import encode, new_document


def anf_program(lets: int) -> Any:
    """``let v0 = x + 1; let v1 = v0 + 1; ...; v{n-1}``: ``lets`` nested lets, built with TVM."""
    import tvm
    from tvm import relay

    x = relay.var("x", shape=(4,), dtype="float32")
    names = [relay.var(f"v{i}", shape=(4,), dtype="float32") for i in range(lets)]
    one = relay.const(1.0)
    body = names[-1]
    for i in reversed(range(lets)):
        body = relay.Let(names[i], relay.add(names[i - 1] if i else x, one), body)
    return tvm.IRModule.from_expr(relay.Function([x], body))


def chain_document(nodes: int) -> Dict[str, Any]:
    """A document of ``nodes`` nodes: a chain of calls, each taking the previous one's result."""
    out: List[Dict[str, Any]] = [
        {"node_kind": "Var", "name": "x", "dtype": "float32", "shape": [4]},
        {"node_kind": "Op", "name": "add"},
        {"node_kind": "Const", "value": 1.0, "dtype": "float32"},
    ]
    out.extend({"node_kind": "Call", "op": 1, "args": [i - 1 if i > 3 else 0, 2]} for i in range(3, nodes - 1))
    out.append({"node_kind": "Function", "params": [0], "body": nodes - 2})
    return new_document(out, ir="relay", functions={"main": nodes - 1})


def changed_copy(doc: Dict[str, Any]) -> Dict[str, Any]:
    """``doc`` with the middle Call's first argument made the input: one node rewired."""
    nodes = list(doc["nodes"])
    middle = next(i for i in range(len(nodes) // 2, len(nodes)) if nodes[i]["node_kind"] == "Call")
    nodes[middle] = {**nodes[middle], "args": [0, *nodes[middle]["args"][1:]]}
    return {**doc, "nodes": nodes}


class Meter:
    """Wall time and peak resident memory above the starting point, per stage."""

    def __init__(self) -> None:
        self.rows: List[Tuple[str, str, str, str, str]] = []

    def stage(self, what: str, name: str, run: Callable[[], Any], nodes: Optional[int] = None) -> Any:
        start_rss = _status("VmRSS")
        _reset_peak()
        started = time.perf_counter()
        try:
            result = run()
            outcome = "ok"
        except (RecursionError, MemoryError, _OverBudget) as exc:
            frames = traceback.extract_tb(exc.__traceback__)
            frame = next((f for f in reversed(frames) if Path(f.filename).name != "bench_scale.py"), frames[-1])
            where = f"{frame.name} ({'/'.join(Path(frame.filename).parts[-2:])}:{frame.lineno})"
            result, outcome = None, f"{exc} in {where}" if isinstance(exc, _OverBudget) else \
                f"{type(exc).__name__} in {where}"
        seconds = time.perf_counter() - started
        peak = _status("VmHWM") - start_rss
        self.rows.append((what, name, f"{seconds:,.2f}", f"{peak / 1024:,.0f}", outcome))
        print(f"  {what:10} {name:10} {seconds:9,.2f} s {peak / 1024:8,.0f} MB  {outcome}", flush=True)
        return result


class _OverBudget(Exception):
    """A stage ran past its time budget (raised by SIGALRM inside it)."""


def within(seconds: float, run: Callable[[], Any]) -> Callable[[], Any]:
    """``run``, stopped with :class:`_OverBudget` after ``seconds``."""
    def budgeted() -> Any:
        def stop(signum: int, frame: Any) -> None:
            raise _OverBudget(f"stopped after {seconds:,.0f} s")
        previous = signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return run()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return budgeted


def _status(key: str) -> int:
    """A field of /proc/self/status in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS (Linux 4.0 and later)
    except OSError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lets", type=int, default=100_000, help="lets of the A-normal-form program")
    parser.add_argument("--nodes", type=int, default=1_000_000, help="nodes of the synthetic document")
    parser.add_argument("--diff-budget", type=float, default=300.0, help="seconds a diff may take")
    args = parser.parse_args()
    print(f"recursion limit {sys.getrecursionlimit()}, pid {os.getpid()}; peak memory above the start of "
          "each stage")
    meter = Meter()

    name = f"{args.lets:,} lets"
    mod = meter.stage("build", name, lambda: anf_program(args.lets))
    from relayviz_instrument import to_relayviz

    # the lambda runs inside stage(), before the `del` below (which ruff reads first)
    doc = meter.stage("serialize", name, lambda: to_relayviz(mod))  # noqa: F821  # see the comment above
    if doc is not None:
        print(f"  ({len(doc['nodes']):,} nodes)")
        _document_stages(meter, name, doc, args.diff_budget)
    del mod, doc

    name = f"{args.nodes:,} nodes"
    doc = meter.stage("build", name, lambda: chain_document(args.nodes))
    _document_stages(meter, name, doc, args.diff_budget)


def _document_stages(meter: Meter, name: str, doc: Dict[str, Any], budget: float) -> None:
    data = meter.stage("encode", name, lambda: encode(doc))
    print(f"  ({len(data) / 2**20:,.1f} MB of JSON)")
    meter.stage("load", name, lambda: loads(data))
    other = changed_copy(doc)
    result = meter.stage("diff", name, within(budget, lambda: diff(doc, other)))
    if result is not None:
        print(f"  (diff: {result.summary})")


if __name__ == "__main__":
    main()
