"""What reading a trace from anywhere costs: ``relayviz show`` of a manifest whose pass name is
megabytes long, and the digest check of every snapshot beside the rest of its read.

1. A traced ``relay.optimize`` of the MLP of ``tvm.relay.testing`` is copied with its
   FoldConstant events (3 of them) renamed to a name of 1, 10 and 50 MB; ``relayviz show``
   runs on each in a child process (wall time, median of ``--repeat``).
2. Every snapshot of a traced ResNet-18 ``relay.build`` (``--trace DIR`` reuses one) is read
   ``--repeat`` times: decompress, SHA-256 of the JSON (the digest check), parse and validate
   (``format.loads``). Prints each step's total and the check's share of the read.

Nothing is asserted.

    python benchmarks/bench_hostile.py [--repeat 3] [--trace DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import zstandard

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from relayviz_instrument.format import loads  # noqa: E402  # after the checkout is put on sys.path
from relayviz_instrument.store.trace import snapshot_ref  # noqa: E402  # after the checkout is put on sys.path


def mlp_trace(root: Path) -> Path:
    import tvm
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument import RelayVizTrace

    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    trace = RelayVizTrace(root)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        relay.optimize(mod, target="llvm -mtriple=x86_64-linux-gnu", params=params)
    return root


def resnet18_trace(root: Path) -> Path:
    import tvm.relay.testing

    from relayviz_instrument.capture import trace_build

    mod, params = tvm.relay.testing.resnet.get_workload(num_layers=18, batch_size=1)
    trace_build(mod, params=params, target="llvm -mtriple=x86_64-linux-gnu", opt_level=3, out_dir=root)
    return root


def with_long_name(seed: Path, target: Path, size: int) -> Path:
    shutil.copytree(seed, target, ignore=shutil.ignore_patterns("cache"))
    out = []
    for raw in (target / "manifest.jsonl").read_bytes().split(b"\n"):
        if raw.strip():
            line = orjson.loads(raw)
            if line.get("type") == "begin" and line["name"] == "FoldConstant":
                line["name"] = "FoldConstant" + "x" * size
            raw = orjson.dumps(line)
        out.append(raw)
    (target / "manifest.jsonl").write_bytes(b"\n".join(out))
    return target


def show_seconds(trace: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "relayviz_instrument", "show", str(trace)], check=True,
                       stdout=subprocess.DEVNULL, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def snapshot_read(trace: Path, repeat: int) -> None:
    files = sorted((trace / "snapshots").glob("*.json.zst"))
    steps = {"decompress": 0.0, "digest": 0.0, "parse + validate": 0.0}
    size = 0
    for _ in range(repeat):
        for path in files:
            data = path.read_bytes()
            t0 = time.perf_counter()
            text = zstandard.ZstdDecompressor().decompressobj().decompress(data)
            t1 = time.perf_counter()
            assert snapshot_ref(text) == path.name.split(".")[0]
            t2 = time.perf_counter()
            loads(text, source=str(path))
            t3 = time.perf_counter()
            steps["decompress"] += t1 - t0
            steps["digest"] += t2 - t1
            steps["parse + validate"] += t3 - t2
            size += len(text)
    total = sum(steps.values())
    print(f"snapshot reads: {len(files)} snapshots of {trace}, {size / repeat / 2**20:.1f} MB of JSON, x{repeat}")
    for name, seconds in steps.items():
        print(f"  {name:18} {seconds / repeat:7.3f} s  {100 * seconds / total:5.1f}% of the read")
    print(f"  digest check / (decompress + parse + validate) = {steps['digest'] / (total - steps['digest']):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trace", type=Path, help="a ResNet-18 trace to reuse")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        work = Path(tmp)
        seed = mlp_trace(work / "mlp")
        print(f"relayviz show, median of {args.repeat} (wall time, a child process each):")
        print(f"  no long name: {show_seconds(seed, args.repeat):.2f} s")
        for megabytes in (1, 10, 50):
            trace = with_long_name(seed, work / f"mlp-{megabytes}mb", megabytes * 1_000_000)
            print(f"  pass name of {megabytes} MB ({(trace / 'manifest.jsonl').stat().st_size / 1e6:.0f} MB "
                  f"manifest): {show_seconds(trace, args.repeat):.2f} s")
            shutil.rmtree(trace)
        snapshot_read(args.trace or resnet18_trace(work / "resnet18"), args.repeat)


if __name__ == "__main__":
    main()
