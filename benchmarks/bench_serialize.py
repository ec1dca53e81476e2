"""What a RelayViz snapshot costs, next to printing the module as text.

For ResNet-18 and ResNet-50 from ``tvm.relay.testing`` (parameters unbound, then bound as
constants) this prints, measured side by side in one run (median of several repetitions):

- ``cold``: a fresh ``RelaySerializer`` serializing the module (IR -> document dict);
- ``warm``: the same serializer serializing the same module again, as the instrument does
  when a pass leaves a function untouched;
- ``encode``: the document to JSON bytes;
- ``astext``: ``mod.astext()``, TVM's own text printer (with bound parameters it also prints
  them, as metadata; ``no meta`` is ``mod.astext(show_meta_data=False)``);

then the cost per node and the ratios to ``astext``. It asserts nothing: run it with
``make bench`` (or ``.venv/bin/python benchmarks/bench_serialize.py --repeat 7``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable, List, Tuple

import tvm
import tvm.relay.testing
from tvm.relay.build_module import bind_params_by_name

from relayviz_instrument.format import encode
from relayviz_instrument.serialize.relay import RelaySerializer


def median_seconds(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def modules() -> List[Tuple[str, str, tvm.IRModule]]:
    out = []
    for layers in (18, 50):
        mod, params = tvm.relay.testing.resnet.get_workload(num_layers=layers, batch_size=1)
        bound = tvm.IRModule.from_expr(bind_params_by_name(mod["main"], params))
        out += [(f"ResNet-{layers}", "unbound", mod), (f"ResNet-{layers}", "bound", bound)]
    return out


def measure(mod: tvm.IRModule, repeat: int) -> List[Any]:
    doc = RelaySerializer().module(mod)
    nodes = len(doc["nodes"])
    cold = median_seconds(lambda: RelaySerializer().module(mod), repeat)
    warm_serializer = RelaySerializer()
    warm_serializer.module(mod)
    warm = median_seconds(lambda: warm_serializer.module(mod), repeat)
    encoding = median_seconds(lambda: encode(doc), repeat)
    astext = median_seconds(mod.astext, repeat)
    no_meta = median_seconds(lambda: mod.astext(show_meta_data=False), repeat)
    return [nodes, cold * 1e3, warm * 1e3, encoding * 1e3, astext * 1e3, no_meta * 1e3,
            cold * 1e6 / nodes, warm * 1e6 / nodes, cold / astext, warm / astext]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per measurement (median)")
    args = parser.parse_args()

    header = ["model", "params", "nodes", "cold ms", "warm ms", "encode ms", "astext ms", "no meta ms",
              "cold us/node", "warm us/node", "cold/astext", "warm/astext"]
    formats = ["{}", "{}", "{}"] + ["{:.1f}"] * 7 + ["{:.2f}"] * 2
    rows = [header]
    for model, variant, mod in modules():
        values = [model, variant] + measure(mod, args.repeat)
        rows.append([f.format(v) for f, v in zip(formats, values)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    print(f"tvm {tvm.__version__}, median of {args.repeat} runs")
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(w) if j < 2 else cell.rjust(w) for j, (cell, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


if __name__ == "__main__":
    main()
