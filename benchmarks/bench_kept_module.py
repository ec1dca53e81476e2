"""What keeping a Relax module for ``relayviz replay`` costs, as TVMScript and as ``save_json``.

For each model and stage (as made, after LegalizeOps, after the zero pipeline), side by side:
the seconds to keep the module and to read it back, and the size kept (raw and with zstandard
at the trace's level), in each form. ``save_json`` runs in a child process, since it crashes
the process on TVM 0.27 with apache-tvm-ffi 0.1.15 (the table then says so). Nothing is asserted.

    python benchmarks/bench_kept_module.py [--models llama resnet18] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

from rich.console import Console
from rich.table import Table

#: Run in a child process: the module, kept with save_json and read back with load_json.
_SAVE_JSON_CHILD = """
import json, statistics, sys, time
import tvm, zstandard
from tvm import relax
from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload
name, stage, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
mod = relax_workload(name)
if stage != "as made":
    with tvm.target.Target(relax_host_target()):
        mod = (relax.transform.LegalizeOps() if stage == "LegalizeOps" else relax.get_pipeline("zero"))(mod)
times = []
for _ in range(repeat):
    started = time.perf_counter(); text = tvm.ir.save_json(mod).encode(); times.append(time.perf_counter() - started)
started = time.perf_counter(); tvm.ir.load_json(text.decode()); load = time.perf_counter() - started
print(json.dumps([statistics.median(times), load, len(text), len(zstandard.ZstdCompressor(level=3).compress(text))]))
"""


def staged(name: str, stage: str) -> Any:
    """The model ``name`` as made, after LegalizeOps, or after the zero pipeline."""
    import tvm
    from tvm import relax

    from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload

    mod = relax_workload(name)
    if stage == "as made":
        return mod
    with tvm.target.Target(relax_host_target()):
        return (relax.transform.LegalizeOps() if stage == "LegalizeOps" else relax.get_pipeline("zero"))(mod)


def timed(call: Callable[[], Any], repeat: int) -> Tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> None:
    import zstandard

    from relayviz_instrument.capture.kept_module import TVMSCRIPT, keep_module, load_kept_module
    from relayviz_instrument.store.directory import COMPRESSION_LEVEL

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["llama", "resnet18"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    table = Table(title=f"keeping a module for replay (keep: median of {args.repeat}; read back: one run)")
    for column in ("model", "stage", "TVMScript keep s", "read s", "MB (zstd)", "save_json keep s", "read s",
                   "MB (zstd)", "keep save_json/TVMScript"):
        table.add_column(column, justify="right")
    compress = zstandard.ZstdCompressor(level=COMPRESSION_LEVEL).compress
    for name in args.models:
        for stage in ("as made", "LegalizeOps", "zero pipeline"):
            mod = staged(name, stage)
            keep, (form, data) = timed(lambda: keep_module(mod), args.repeat)
            assert form == TVMSCRIPT
            read, _ = timed(lambda: load_kept_module(form, data, name), 1)
            row: List[str] = [name, stage, f"{keep:.3f}", f"{read:.2f}",
                              f"{len(data) / 1e6:.2f} ({len(compress(data)) / 1e6:.2f})"]
            child = subprocess.run([sys.executable, "-c", _SAVE_JSON_CHILD, name, stage, str(args.repeat)],
                                   capture_output=True, text=True)
            if child.returncode != 0:
                row += [f"crashed (exit {child.returncode})", "", "", ""]
            else:
                measured = json.loads(child.stdout.splitlines()[-1])
                sj: Dict[str, float] = dict(zip(("keep", "read", "size", "zstd"), measured))
                row += [f"{sj['keep']:.3f}", f"{sj['read']:.2f}", f"{sj['size'] / 1e6:.2f} ({sj['zstd'] / 1e6:.2f})",
                        f"{sj['keep'] / keep:.1f}"]
            table.add_row(*row)
    Console(width=180).print(table)


if __name__ == "__main__":
    main()
