"""What tracing costs a real compilation, against what a user would otherwise run.

The honest baseline is TVM's ``PrintAfterAll``: ``str(mod)`` after every pass event (no
weights). For each model, ``relay.build`` (this machine's CPU, opt_level 3) runs in a fresh
process per measurement, the modes alternating round by round so that machine noise hits them
alike; each line gives the median of ``--repeat`` rounds and says what it compares:

- ``traced/plain``: build wall time under ``RelayVizTrace`` (default, and with ``tir=True``)
  over the build alone;
- ``capture/str(mod)``: the instrument's own time per Relay pass event over the time of
  ``str(mod)`` on the same events (and over ``astext()`` with metadata, which prints weights);
- ``peak RSS``: the traced process's peak resident memory over the untraced one's;
- ``trace/text``: the trace directory's bytes over the bytes of ``str(mod)`` after every pass
  event (what ``PrintAfterAll`` writes);
- ``relayviz report``: the wall time of ``relayviz report`` on the trace, cold (its diff
  summaries not cached yet) and warm.

Nothing is asserted: the figures are printed, for the README's Performance section.

    python benchmarks/bench_capture.py [--models resnet50 inception_v3 transformer qnn_mobilenet]
                                       [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

MODES = ("plain", "traced", "traced_tir")


def child(model: str, mode: str, out: str) -> None:
    """One build in this process; print one JSON line of what was measured."""
    import tvm
    from tvm import relay

    from relayviz_instrument import RelayVizTrace
    from relayviz_instrument.demo.relay_models import host_target, workload

    mod, params = workload(model)
    instruments: List[Any] = []
    trace = None
    text = _TextAfterEveryPass() if mode == "print" else None
    if mode.startswith("traced"):
        trace = RelayVizTrace(Path(out) / "trace", tir=mode == "traced_tir")
        instruments.append(trace)
    if text is not None:
        instruments.append(text)
    started = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3, instruments=instruments):
        lib = relay.build(mod, target=host_target(), params=params)
    if trace is not None:
        trace.record_graph(lib)
    seconds = time.perf_counter() - started
    result: Dict[str, Any] = {"seconds": seconds,
                              "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    if trace is not None:
        relay_events = sum(1 for r in trace.records if r.ir == "relay")
        files = [f for f in (Path(out) / "trace").rglob("*") if f.is_file()]
        result.update(instrument=trace.instrument_seconds, relay_events=relay_events, events=len(trace.records),
                      trace_bytes=sum(f.stat().st_size for f in files),
                      snapshots=len(list((Path(out) / "trace" / "snapshots").iterdir())))
    if text is not None:
        result.update(text.result())
    print(json.dumps(result))


class _TextAfterEveryPass:
    """What PrintAfterAll does, timed and sized, not printed: ``str(mod)`` after every pass
    event; and on Relay events also ``astext()`` with metadata (every weight printed)."""

    def __new__(cls) -> Any:
        import tvm

        class Instrument(tvm.instrument.PassInstrument):
            def __init__(self) -> None:
                super().__init__()
                self.text_seconds = self.relay_text_seconds = self.meta_seconds = 0.0
                self.text_bytes = self.relay_events = 0

            def run_after_pass(self, mod: Any, info: Any) -> None:
                from relayviz_instrument.serialize import module_ir

                started = time.perf_counter()
                text = str(mod)
                spent = time.perf_counter() - started
                self.text_seconds += spent
                self.text_bytes += len(text.encode())
                if module_ir(mod) == "relay":
                    self.relay_events += 1
                    self.relay_text_seconds += spent
                    started = time.perf_counter()
                    mod.astext(show_meta_data=True)
                    self.meta_seconds += time.perf_counter() - started

            def result(self) -> Dict[str, Any]:
                return {"text_seconds": self.text_seconds, "relay_text_seconds": self.relay_text_seconds,
                        "meta_seconds": self.meta_seconds, "text_bytes": self.text_bytes,
                        "relay_events_printed": self.relay_events}

        return Instrument()


def run_child(model: str, mode: str) -> Dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="bench-capture-")
    try:
        done = subprocess.run([sys.executable, __file__, "--child", model, mode, tmp],
                              capture_output=True, text=True, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        if mode == "traced":
            result["report"] = _report_seconds(Path(tmp) / "trace")
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _report_seconds(trace: Path) -> Dict[str, float]:
    """``relayviz report TRACE`` wall time, cold then warm (its cache of diff summaries kept)."""
    out = {}
    for key in ("cold", "warm"):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "relayviz_instrument", "report", str(trace)],
                       stdout=subprocess.DEVNULL, check=True)
        out[key] = time.perf_counter() - started
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet50", "inception_v3", "transformer", "qnn_mobilenet"])
    parser.add_argument("--repeat", type=int, default=5, help="rounds per model (default 5)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    from rich.console import Console
    from rich.table import Table

    med = statistics.median
    console = Console(width=200)
    table = Table(title=f"relay.build on this machine's CPU, opt_level 3; fresh process per build, modes alternating, "
                        f"median of {args.repeat}")
    for column in ("model", "events (relay)", "plain s", "traced/plain", "tir=True/plain", "instrument s",
                   "capture/str(mod)", "capture/astext+meta", "peak RSS traced/plain", "trace/text",
                   "trace MB", "report cold s", "report warm s"):
        table.add_column(column, justify="right")
    for name in args.models:
        runs: Dict[str, List[Dict[str, Any]]] = {mode: [] for mode in MODES}
        run_child(name, "plain")  # warm the file cache and TVM's caches on disk
        for _ in range(args.repeat):
            for mode in MODES:
                runs[mode].append(run_child(name, mode))
        printed = run_child(name, "print")
        traced = runs["traced"]
        plain_s = med(r["seconds"] for r in runs["plain"])
        instrument = med(r["instrument"] for r in traced)
        per_event = instrument / traced[0]["relay_events"]
        table.add_row(
            name, f"{traced[0]['events']} ({traced[0]['relay_events']})", f"{plain_s:.2f}",
            f"{med(r['seconds'] for r in traced) / plain_s:.3f}",
            f"{med(r['seconds'] for r in runs['traced_tir']) / plain_s:.3f}",
            f"{instrument:.3f}",
            f"{per_event / (printed['relay_text_seconds'] / printed['relay_events_printed']):.3f}",
            f"{per_event / (printed['meta_seconds'] / printed['relay_events_printed']):.4f}",
            f"{med(r['maxrss_kb'] for r in traced) / med(r['maxrss_kb'] for r in runs['plain']):.3f}",
            f"{med(r['trace_bytes'] for r in traced) / printed['text_bytes']:.4f}",
            f"{med(r['trace_bytes'] for r in traced) / 1e6:.2f}",
            f"{med(r['report']['cold'] for r in traced):.2f}", f"{med(r['report']['warm'] for r in traced):.2f}")
        console.print(f"{name}: done", style="dim")
    console.print(table)
    console.print("capture/str(mod): the instrument's time per Relay pass event over str(mod) per Relay pass event "
                  "(PrintAfterAll's work on the same modules); trace/text: the trace directory over str(mod) after "
                  "every pass event.", style="dim")


if __name__ == "__main__":
    os.environ.setdefault("TVM_NUM_THREADS", "1")  # the same on a loaded machine and an idle one
    main()
