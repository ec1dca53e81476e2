"""Bad input, fuzzed: valid documents, graph JSON and traces, damaged by hypothesis
(truncation, wrong types, dangling and cyclic references, huge numbers, NaN, deep nesting,
non-UTF-8 bytes) and handed to every reader and every command that takes a file. Only the
package's own errors may come out, each naming the file (tests/fuzzing.py holds the rule).

``make test`` runs the ``ci`` profile (100 inputs a test); ``make fuzz`` the ``fuzz`` profile
(5,000) and the atheris target. The counts are printed at the end of the run.
"""

from __future__ import annotations

import importlib.util
import json
import re
import platform
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, List, Tuple

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fuzzing import copy_trace, make_seed_trace, read_file, read_trace, snapshot_files
from relayviz_instrument import RelayVizError, UnknownNodeKindWarning, load, validate
from relayviz_instrument.format import encode
from relayviz_instrument.graph_json import from_graph_json
from relayviz_instrument.store import MANIFEST, load_trace

DATA = Path(__file__).parent / "data"
#: The text spliced in for "deep nesting": deeper than any JSON parser's recursion limit.
DEEP = "[" * 5000 + "]" * 5000
_DEEP_MARK = "@@deep@@"
#: Values of the wrong type, and numbers at the edges.
ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, -1, 1, 2**31, 2**63 - 1, -2**63, 2**64, 10**40, -10**40]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.lists(st.integers(-3, 3), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(-2, 2), max_size=2),
    st.just(_DEEP_MARK))

# Each test rebuilds one damaged input per example; a seed trace takes a few seconds to make.
FUZZ = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large], deadline=None)


@pytest.fixture(scope="session")
def seed_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_seed_trace(tmp_path_factory.mktemp("fuzz-seed") / "trace")


@pytest.fixture(scope="session")
def seed_documents(seed_trace: Path) -> List[Tuple[str, Any]]:
    """``(name, parsed JSON)``: every snapshot of the seed trace, and the graph JSON files."""
    trace = load_trace(seed_trace)
    refs = sorted({ref for r in trace.records for ref in (r.before, r.after) if ref})
    docs = [(f"snapshot-{ref[:8]}", trace.snapshot(ref)) for ref in refs]
    docs += [(p.stem, orjson.loads(p.read_bytes())) for p in sorted((DATA / "graph_json").glob("*.json"))]
    docs += [(p.stem, orjson.loads(p.read_bytes())) for p in sorted((DATA / "valid").glob("*.json"))]
    return docs


# -- mutations ---------------------------------------------------------------------------------

def _paths(value: Any, prefix: Tuple = ()) -> List[Tuple]:
    """Every path into a JSON value (keys and indices), the root included."""
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, prefix + (key,)))
    elif isinstance(value, list):
        for i, item in enumerate(value[:40]):
            out.extend(_paths(item, prefix + (i,)))
    return out


def _set(root: Any, path: Tuple, value: Any) -> Any:
    if not path:
        return value
    parent = root
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return root


def _delete(root: Any, path: Tuple) -> Any:
    if not path:
        return root
    parent = root
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    return root


@st.composite
def damaged_values(draw: Any, seed: Any) -> Any:
    """``seed`` (a copy) with one to three values replaced, deleted, or made to refer
    elsewhere (out of range, negative, itself, a later node: a cycle)."""
    value = json.loads(json.dumps(seed))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(value)
        path = draw(st.sampled_from(paths))
        how = draw(st.sampled_from(["odd", "delete", "reference", "duplicate"]))
        if how == "delete" and path:
            value = _delete(value, path)
        elif how == "reference" and path:
            listed = isinstance(value, dict) and isinstance(value.get("nodes"), list)
            count = len(value["nodes"]) if listed else 3
            node = path[1] if len(path) > 1 and path[0] == "nodes" and isinstance(path[1], int) else 0
            value = _set(value, path, draw(st.sampled_from([count, count + 7, -1, node, node + 1, 2**40])))
        elif how == "duplicate" and len(path) > 1 and isinstance(path[-1], int):
            parent = value
            for step in path[:-1]:
                parent = parent[step]
            parent.append(parent[path[-1]])
        else:
            value = _set(value, path, draw(ODD_VALUES))
    return value


def _text(value: Any) -> bytes:
    """JSON text as another tool might write it: Python's json (NaN, Infinity, any integer)."""
    try:
        text = json.dumps(value)
    except (ValueError, RecursionError):
        text = "null"
    return text.replace(f'"{_DEEP_MARK}"', DEEP).encode()


@st.composite
def damaged_bytes(draw: Any, data: bytes) -> bytes:
    """``data`` cut short, or with bytes (some not UTF-8) put in or overwritten."""
    how = draw(st.sampled_from(["keep", "truncate", "insert", "overwrite"]))
    if how == "keep" or not data:
        return data
    at = draw(st.integers(0, len(data) - 1))
    if how == "truncate":
        return data[:at]
    chunk = draw(st.sampled_from([b"\xff\xfe", b"\xc3\x28", b"\x00", b"NaN", b"Infinity", b"-", b'"', b"}", b"]",
                                  b"1e999999", b"\xed\xa0\x80"]))
    return data[:at] + chunk + (data[at:] if how == "insert" else data[at + len(chunk):])


# -- documents and graph JSON ----------------------------------------------------------------------

@FUZZ
@given(st.data())
def test_damaged_documents_and_graphs_raise_only_the_packages_errors(seed_documents, tmp_path, data):
    name, seed = data.draw(st.sampled_from(seed_documents), label="seed")
    value = data.draw(damaged_values(seed), label="damage")
    raw = data.draw(damaged_bytes(_text(value)), label="bytes")
    path = tmp_path / f"{name}.json"
    path.write_bytes(raw)
    other = tmp_path / "other.json"
    other.write_bytes(encode(seed) if "format" in seed else orjson.dumps(seed))
    read_file(path, other, tmp_path)


@FUZZ
@given(st.data())
def test_damaged_objects_given_to_the_validators_directly(seed_documents, data):
    # Parsed objects reach validate() and from_graph_json() without a parser in between:
    # NaN, infinities, integers of any size and floats where integers go are all possible.
    name, seed = data.draw(st.sampled_from(seed_documents), label="seed")
    value = data.draw(damaged_values(seed), label="damage")
    if isinstance(value, str):  # a string is a path or JSON text to from_graph_json, not a parsed value
        value = [value]
    for reader in (lambda: validate(value, source=name), lambda: from_graph_json(value, source_name=name)):
        try:
            reader()
        except RelayVizError as exc:
            assert name in str(exc) and "\n" not in str(exc)


# -- traces ------------------------------------------------------------------------------------------

@FUZZ
@given(st.data())
def test_damaged_manifests_raise_only_the_packages_errors(seed_trace, tmp_path, data):
    root = copy_trace(seed_trace, tmp_path / "t")
    lines = [orjson.loads(line) for line in (root / MANIFEST).read_bytes().splitlines()]
    how = data.draw(st.sampled_from(["line", "line", "drop", "duplicate", "swap", "bytes"]), label="how")
    if how == "line":
        at = data.draw(st.integers(0, len(lines) - 1), label="line")
        lines[at] = data.draw(damaged_values(lines[at]), label="damage")
    elif how == "drop":
        del lines[data.draw(st.integers(0, len(lines) - 1))]
    elif how == "duplicate":
        at = data.draw(st.integers(0, len(lines) - 1))
        lines.insert(at, lines[at])
    elif how == "swap":
        a, b = data.draw(st.integers(0, len(lines) - 1)), data.draw(st.integers(0, len(lines) - 1))
        lines[a], lines[b] = lines[b], lines[a]
    raw = b"\n".join(_text(line) for line in lines) + b"\n"
    if how == "bytes":
        raw = data.draw(damaged_bytes(raw), label="bytes")
    (root / MANIFEST).write_bytes(raw)
    read_trace(root)


@FUZZ
@given(st.data())
def test_damaged_snapshots_and_kept_modules_raise_only_the_packages_errors(seed_trace, tmp_path, data):
    root = copy_trace(seed_trace, tmp_path / "t")
    files = snapshot_files(root)
    target = data.draw(st.sampled_from(files), label="file")
    how = data.draw(st.sampled_from(["bytes", "document", "missing"]), label="how")
    if how == "missing":
        target.unlink()
    elif how == "bytes":
        target.write_bytes(data.draw(damaged_bytes(target.read_bytes()), label="bytes"))
    else:
        from relayviz_instrument._files import read_input

        seed = orjson.loads(read_input(target))
        import zstandard

        raw = _text(data.draw(damaged_values(seed), label="damage"))
        target.write_bytes(zstandard.ZstdCompressor().compress(raw) if data.draw(st.booleans()) else raw)
    read_trace(root)


def test_the_seed_trace_reads_cleanly(seed_trace, tmp_path):
    root = copy_trace(seed_trace, tmp_path / "t")
    read_trace(root)
    trace = load_trace(root)
    assert trace.failed is not None and trace.failed.replay is not None
    assert any(r.ir == "graph_executor" for r in trace.records)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownNodeKindWarning)
        for path in (DATA / "valid").glob("*.json"):
            load(path)


# -- the atheris target ------------------------------------------------------------------------------

@pytest.mark.skipif(sys.version_info >= (3, 12) or platform.machine() != "x86_64",
                    reason="atheris ships wheels for CPython <= 3.11 on x86_64 only (setup.cfg)")
@pytest.mark.skipif(importlib.util.find_spec("tvm.relay") is None,
                    reason="the target's seed trace is a Relay build (the .venv leg runs it)")
def test_the_atheris_target_runs_clean_on_a_short_run(tmp_path):
    target = Path(__file__).parent.parent / "fuzz" / "fuzz_readers.py"
    made = subprocess.run([sys.executable, str(target), "--make-corpus", str(tmp_path / "corpus")],
                          capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-2000:]
    seeds = len(list((tmp_path / "corpus").iterdir()))
    assert seeds > 20
    (tmp_path / "crashes").mkdir()
    runs = 150
    # libFuzzer measures memory with getrusage's peak RSS, which a forked child starts from its
    # parent's (this test session holds several built models): its RSS limit is left to make fuzz.
    done = subprocess.run([sys.executable, str(target), f"-runs={runs}", "-rss_limit_mb=0",
                           f"-artifact_prefix={tmp_path / 'crashes'}/", str(tmp_path / "corpus")],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    # libFuzzer may run a few more inputs than -runs asks (162 for 150 in one CI run)
    ran = re.search(r"Done (\d+) runs", done.stderr)
    assert ran is not None and int(ran.group(1)) >= runs, done.stderr[-2000:]
    assert not list((tmp_path / "crashes").iterdir())
