"""What keeping input modules for ``relayviz replay`` costs.

For ResNet-18 from ``tvm.relay.testing`` with its parameters bound as constants (as
``relay.build`` binds them), this measures side by side in one run (median of several
alternating repetitions):

- ``trace``: ``relay.optimize`` under a ``RelayVizTrace`` (nothing kept: what a trace costs
  when no pass raises, reproducer included, since it is written only on failure);
- ``keep 3``: the same with ``keep_modules="FoldConstant|FuseOps|AlterOpLayout"``;
- ``keep all``: the same with ``keep_modules="."`` (every pass event's input);

and the size of what was kept (``modules/``, compressed), then the cost of one reproducer
alone (``tvm.ir.save_json`` of the module and its compression), which is what a failing
pass adds. It asserts nothing: ``make bench``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Dict, List

import tvm
import tvm.relay.testing
import zstandard
from tvm import relay
from tvm.relay.build_module import bind_params_by_name

from relayviz_instrument import RelayVizTrace

VARIANTS = {"trace": None, "keep 3": "FoldConstant|FuseOps|AlterOpLayout", "keep all": "."}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per variant (median)")
    args = parser.parse_args()
    mod, params = tvm.relay.testing.resnet.get_workload(num_layers=18, batch_size=1)
    bound = tvm.IRModule.from_expr(bind_params_by_name(mod["main"], params))
    work = Path(tempfile.mkdtemp(prefix="relayviz-bench-"))
    times: Dict[str, List[float]] = {name: [] for name in VARIANTS}
    sizes: Dict[str, int] = {}
    kept: Dict[str, int] = {}
    try:
        for rep in range(args.repeat):
            for name, keep in VARIANTS.items():  # alternating, so load on the machine hits all alike
                out = work / f"{name.replace(' ', '-')}-{rep}"
                trace = RelayVizTrace(out, keep_modules=keep)
                started = time.perf_counter()
                with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
                    relay.optimize(bound, target="llvm -mtriple=x86_64-linux-gnu")
                times[name].append(time.perf_counter() - started)
                modules = list((out / "modules").glob("*")) if (out / "modules").exists() else []
                sizes[name] = sum(p.stat().st_size for p in modules)
                kept[name] = sum(1 for r in trace.records if r.replay is not None)
                shutil.rmtree(out)
        base = statistics.median(times["trace"])
        print(f"ResNet-18, parameters bound; relay.optimize under RelayVizTrace; median of {args.repeat}")
        print(f"{'variant':10} {'seconds':>8} {'ratio':>6} {'events kept':>12} {'modules MB':>11}")
        for name in VARIANTS:
            median = statistics.median(times[name])
            print(f"{name:10} {median:8.2f} {median / base:6.2f} {kept[name]:12d} {sizes[name] / 2**20:11.1f}")
        saves = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            data = tvm.ir.save_json(bound).encode()
            compressed = zstandard.ZstdCompressor(level=3).compress(data)
            saves.append(time.perf_counter() - started)
        print(f"one reproducer (save_json + zstd of the module): {statistics.median(saves):.2f} s, "
              f"{len(data) / 2**20:.1f} MB of JSON, {len(compressed) / 2**20:.1f} MB stored")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
