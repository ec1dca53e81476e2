"""How fast the HTML report opens and switches passes in headless Chromium, and how big it is.

For the ``relay.build`` traces of ResNet-50 and Inception-v3 (``tvm.relay.testing``): the time
to write the report, its size, then in Debian's headless Chromium (as the browser tests run it):

- **open**: from navigation start to the first pass drawn (two animation frames after the
  viewer is ready), median of ``--repeat`` fresh page loads;
- **switch**: selecting a pass and drawing its graph (two animation frames), for every pass
  that has a graph, visited in order and then in reverse (each visited twice): median, 90th
  percentile and the slowest, with the number of nodes it drew.

Targets (issue 10): open < 2 s and switch < 200 ms for ResNet-50; Inception-v3 usable. Nothing
is asserted. Building a trace takes about a minute per model; ``--trace NAME=DIR`` reuses one.

    python benchmarks/bench_html.py [--models resnet50 inception_v3] [--repeat 5] [--trace resnet50=DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from browser import chromium, missing, open_report

from relayviz_instrument.html_report import write_html_report
from relayviz_instrument.store import load_trace

OPENED = """async () => {
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  return performance.now();
}"""

SWITCH = """async (i) => {
  const t0 = performance.now();
  window.relayvizViewer.selectPass(i);
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  return [performance.now() - t0, window.relayvizViewer.pane.visibleCount || 0];
}"""


def trace_dir(name: str, given: Dict[str, str], scratch: Path) -> Path:
    if name in given:
        return Path(given[name])
    from relayviz_instrument.capture import trace_build
    from relayviz_instrument.demo.relay_models import workload

    mod, params = workload(name)
    path = scratch / name
    started = time.perf_counter()
    trace_build(mod, params=params, target="llvm", opt_level=3, out_dir=path)
    print(f"{name}: traced relay.build in {time.perf_counter() - started:.0f} s", flush=True)
    return path


def measure(name: str, trace: Path, out: Path, repeat: int) -> Dict[str, Any]:
    loaded = load_trace(trace)
    started = time.perf_counter()
    write_html_report(loaded, out)
    written = time.perf_counter() - started
    opens: List[float] = []
    switches: List[Any] = []
    with chromium() as browser:
        for _ in range(repeat):
            page = browser.new_page()
            open_report(page, out)
            opens.append(page.evaluate(OPENED))
            page.close()
        page = browser.new_page()
        open_report(page, out)
        with_graph = page.evaluate("window.relayvizViewer.data.passes.flatMap((p, i) => p.graph != null ? [i] : [])")
        names = page.evaluate("window.relayvizViewer.data.passes.map((p) => p.name + ' #' + p.i)")
        for i in with_graph + with_graph[::-1]:
            took, drawn = page.evaluate(SWITCH, i)
            switches.append((took, drawn, names[i]))
    times = sorted(t for t, _, _ in switches)
    slowest = max(switches)
    return {"model": name, "write_s": written, "mb": out.stat().st_size / 1e6, "open_ms": statistics.median(opens),
            "open_max_ms": max(opens), "passes": len(with_graph), "switch_ms": statistics.median(times),
            "switch_p90_ms": times[int(0.9 * (len(times) - 1))], "slowest": slowest}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["resnet50", "inception_v3"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--trace", action="append", default=[], metavar="NAME=DIR",
                        help="reuse the trace directory DIR for model NAME")
    args = parser.parse_args()
    why = missing()
    if why:
        print(f"bench_html: cannot run: {why}")
        return 1
    given = dict(item.split("=", 1) for item in args.trace)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-html-") as scratch:
        for name in args.models:
            trace = trace_dir(name, given, Path(scratch))
            rows.append(measure(name, trace, Path(scratch) / f"{name}.html", args.repeat))
    print(f"\n{'model':<14}{'file MB':>8}{'write s':>9}{'open ms':>9}{'(max)':>7}{'passes':>8}"
          f"{'switch ms':>11}{'p90':>7}  slowest switch")
    for r in rows:
        took, drawn, pass_name = r["slowest"]
        print(f"{r['model']:<14}{r['mb']:>8.2f}{r['write_s']:>9.2f}{r['open_ms']:>9.0f}{r['open_max_ms']:>7.0f}"
              f"{r['passes']:>8}{r['switch_ms']:>11.0f}{r['switch_p90_ms']:>7.0f}"
              f"  {took:.0f} ms ({pass_name}, {drawn} boxes)")
    print("\ntargets: ResNet-50 opens in < 2,000 ms and switches passes in < 200 ms (issue 10)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
