"""The atheris target of ``make fuzz``: bytes from libFuzzer, shaped from real seeds, given to
every reader and command that takes a file (the rule is in tests/fuzzing.py).

The first byte of an input picks what the rest becomes: a document or graph JSON file, the
manifest of a copy of a real trace, or one of that trace's stored snapshots or modules. Run::

    python fuzz/fuzz_readers.py --make-corpus build/fuzz-corpus   # seeds (needs TVM)
    python fuzz/fuzz_readers.py -runs=100000 build/fuzz-corpus    # libFuzzer's options

An input that lets another exception escape is a crash: atheris prints it and libFuzzer
writes it to ``-artifact_prefix``. At the end libFuzzer prints ``Done N runs``; this target
prints its own count of inputs and escapes every 500 inputs and when the run ends.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

with atheris.instrument_imports(include=["relayviz_instrument"]):
    import fuzzing

KINDS = ("document", "manifest", "snapshot")
_WORK = Path(tempfile.mkdtemp(prefix="relayviz-atheris-"))
_SEED = _WORK / "seed"


def make_corpus(corpus: Path) -> None:
    """Seed inputs: each snapshot and graph file as a document, the seed trace's manifest, and
    each stored file of the trace, prefixed with the byte that picks its kind."""
    corpus.mkdir(parents=True, exist_ok=True)
    seed = fuzzing.make_seed_trace(corpus.parent / "seed-trace")
    data = Path(__file__).resolve().parent.parent / "tests" / "data"
    from relayviz_instrument._files import read_input

    inputs = [bytes([0]) + read_input(p) for p in fuzzing.snapshot_files(seed) if p.parent.name == "snapshots"]
    inputs += [bytes([0]) + p.read_bytes() for p in sorted(data.rglob("*.json"))]
    inputs.append(bytes([1]) + (seed / "manifest.jsonl").read_bytes())
    inputs += [bytes([2, i]) + p.read_bytes() for i, p in enumerate(fuzzing.snapshot_files(seed))]
    for i, raw in enumerate(inputs):
        (corpus / f"seed-{i:03d}").write_bytes(raw)
    print(f"{len(inputs)} seed inputs in {corpus}")


def _seed_trace() -> Path:
    if not _SEED.exists():
        fuzzing.make_seed_trace(_SEED)
    return _SEED


def test_one_input(data: bytes) -> None:
    if not data:
        return
    kind, body = KINDS[data[0] % len(KINDS)], data[1:]
    if kind == "document":
        path = _WORK / "input.json"
        path.write_bytes(body)
        other = next(p for p in fuzzing.snapshot_files(_seed_trace()) if p.parent.name == "snapshots")
        fuzzing.read_file(path, other, _WORK)
    else:
        root = fuzzing.copy_trace(_seed_trace(), _WORK / "trace")
        if kind == "manifest":
            (root / "manifest.jsonl").write_bytes(body)
        else:
            files = fuzzing.snapshot_files(root)
            if not body:
                return
            files[body[0] % len(files)].write_bytes(body[1:])
        fuzzing.read_trace(root)
    if fuzzing.COUNTS["inputs"] % 500 == 0:
        _report()


def _report() -> None:
    print(f"relayviz readers: {fuzzing.COUNTS['inputs']} inputs tried, {fuzzing.COUNTS['escapes']} escapes",
          flush=True)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--make-corpus":
        make_corpus(Path(sys.argv[2]))
        return
    _seed_trace()
    atexit.register(_report)
    atexit.register(shutil.rmtree, _WORK, True)
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
