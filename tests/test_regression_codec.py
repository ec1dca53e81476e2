"""The regression snapshot file: written from real compilations of the MLP of tvm.relay.testing
(and modules, functions, built graphs), read back, and explained when two differ."""

from __future__ import annotations

import difflib
import hashlib
import re
import shutil
from typing import Any, Dict

import pytest

from relayviz_instrument.format import VERSION

from relayviz_instrument import RelayVizUsageError, load_trace
from relayviz_instrument.errors import RelayVizFormatError
from relayviz_instrument.analysis.pipeline import SCRATCH, event_roles
from relayviz_instrument.regression import (SnapshotFormatError, SnapshotOptions, decode_snapshot, encode_snapshot,
                                          explain)

tvm = pytest.importorskip("tvm")
relay = pytest.importorskip("tvm.relay")
TARGET = "llvm -mtriple=x86_64-linux-gnu"


@pytest.fixture(scope="module")
def o3(mlp_optimized: Dict[str, Any]) -> Any:
    return load_trace(mlp_optimized["o3"])


def workload() -> Any:
    """A new ``(mod, params)`` of the MLP: relay.optimize binds parameters into the module it
    is given, in place, so no module is optimized twice."""
    import tvm.relay.testing

    return tvm.relay.testing.mlp.get_workload(batch_size=1)


def optimized(mod: Any, params: Any = None, **context: Any) -> Any:
    from relayviz_instrument import RelayVizTrace

    trace = RelayVizTrace(out_dir=False)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace], **context):
        relay.optimize(mod, target=TARGET, params=params)
    return trace


def without_hashes(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {**doc, "nodes": [{**n, "attrs": {k: v for k, v in n["attrs"].items() if k != "hash"}}
                             if isinstance(n.get("attrs"), dict) else n for n in doc["nodes"]]}


def test_a_trace_reads_back_as_its_pass_events_and_their_modules(o3) -> None:
    data = encode_snapshot(o3)
    stored = decode_snapshot(data)
    roles = event_roles(o3.records)
    pinned = [r for r in o3.records if roles.get(r.index) != SCRATCH]
    assert [(r.name, r.depth, r.changed) for r in stored.records] == [(r.name, r.depth, r.changed) for r in pinned]
    assert [r.parent for r in stored.records][:3] == [None, 0, 0]
    for row, record in zip(stored.records, pinned):
        assert stored.snapshot(row.after) == without_hashes(o3.snapshot(record.after))
    # Each distinct module once: as many blocks as the trace has distinct snapshots on the pipeline.
    distinct = {r.after for r in pinned} | {r.before for r in pinned if roles[r.index] != "finishing"}
    assert len(stored.modules) == len(distinct) == data.count(b"\nmodule ")
    assert stored.header["object"] == "trace" and stored.header["tvm"] == o3.header["tvm"]


def test_the_layout_a_reviewer_reads(o3) -> None:
    text = encode_snapshot(o3).decode()
    lines = text.split("\n")
    assert lines[:5] == ["relayviz snapshot format 1", f"tvm {o3.header['tvm']}",
                         "python " + ".".join(o3.header["python"].split(".")[:2]), "object trace",
                         'options {"constants":"digests","exclude":null,"names":true,"passes":null}']
    assert lines[6].startswith("passes: ")
    fuse = next(line for line in lines if line.split()[2:3] == ["FuseOps"])
    assert re.fullmatch(r" +\d+ 2 {3}FuseOps +changed +[0-9a-f]{12} -> [0-9a-f]{12}", fuse)
    assert "ms" not in text.split("\n\n")[1]  # no timings
    # A module's name is the digest of its lines, and rows name modules stored below them.
    blocks = text.split("\n\nmodule ")[1:]
    for block in blocks:
        title, *body = block.rstrip("\n").split("\n")
        assert hashlib.sha256("\n".join(body).encode()).hexdigest()[:12] == title.split(":")[0]
        assert body[0].startswith("  root {") and body[1].startswith("  0 ")
    named = set(re.findall(r"\b[0-9a-f]{12}\b", text.split("\n\n")[1]))
    assert {block.split(":")[0] for block in blocks} <= named


def test_the_same_compilation_gives_the_same_bytes_in_memory_and_read_from_disk(o3) -> None:
    live = optimized(*workload())
    a, b = encode_snapshot(live).decode().split("\n"), encode_snapshot(o3).decode().split("\n")
    assert a == b, "\n".join(list(difflib.unified_diff(a, b, n=0, lineterm=""))[:20])


def test_hash_attributes_are_left_out(o3) -> None:
    label_ops = next(r for r in o3.records if r.name == "LabelOps")
    assert any("hash" in n.get("attrs", {}) for n in o3.snapshot(label_ops.after)["nodes"])
    assert b'"hash"' not in encode_snapshot(o3)


def test_constants_by_shape_only_ignore_new_weights() -> None:
    mod, params = workload()
    heavier = {name: tvm.nd.array(value.numpy() * 2) for name, value in params.items()}
    a, b = optimized(mod, params), optimized(workload()[0], heavier)
    assert encode_snapshot(a) != encode_snapshot(b)
    shapes = SnapshotOptions(constants="shapes")
    assert encode_snapshot(a, shapes) == encode_snapshot(b, shapes)
    assert b"sha256:" not in encode_snapshot(a, shapes)


def test_names_can_be_left_out() -> None:
    def module(name: str) -> Any:
        x = relay.var(name, shape=(4,), dtype="float32")
        return tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))

    assert encode_snapshot(module("x")) != encode_snapshot(module("input"))
    options = SnapshotOptions(names=False)
    assert encode_snapshot(module("x"), options) == encode_snapshot(module("input"), options)


def test_a_pass_filter_pins_only_the_passes_it_keeps(o3) -> None:
    kept = decode_snapshot(encode_snapshot(o3, SnapshotOptions(passes="FuseOps|FoldConstant")))
    assert {r.name for r in kept.records} == {"FuseOps", "FoldConstant"}
    dropped = decode_snapshot(encode_snapshot(o3, SnapshotOptions(exclude="^InferType$")))
    assert "InferType" not in {r.name for r in dropped.records} and "FuseOps" in {r.name for r in dropped.records}
    with pytest.raises(RelayVizUsageError, match=r"passes='\(': not a regular expression"):
        SnapshotOptions(passes="(")
    with pytest.raises(RelayVizUsageError, match="choose 'digests' or 'shapes'"):
        SnapshotOptions(constants="values")


def test_a_module_a_function_and_a_built_graph(mlp_built) -> None:
    mod, _ = workload()
    for obj, kind in ((mod, "module"), (mod["main"], "function"), (mlp_built, "graph"),
                      (mlp_built.get_graph_json(), "graph")):
        stored = decode_snapshot(encode_snapshot(obj))
        assert stored.kind == kind and not stored.records
        doc = stored.snapshot(stored.root)
        ops = [n["name"] for n in doc["nodes"] if n["node_kind"] == "Op"]
        if kind == "graph":
            assert doc["ir"] == "graph_executor" and "tvmgen_default_fused_nn_softmax" in ops
        else:
            assert {"nn.dense", "nn.bias_add", "nn.relu", "nn.softmax"} <= set(ops)
    with pytest.raises(Exception, match="cannot serialize a int"):
        encode_snapshot(3)


def test_an_incomplete_trace_is_refused(mlp_optimized, tmp_path) -> None:
    broken = tmp_path / "trace"
    shutil.copytree(mlp_optimized["o3"], broken)
    manifest = broken / "manifest.jsonl"
    manifest.write_bytes(b"\n".join(line for line in manifest.read_bytes().split(b"\n")
                                    if b'"type":"close"' not in line))
    with pytest.raises(RelayVizUsageError, match="the trace is incomplete"):
        encode_snapshot(load_trace(broken))


def test_files_that_cannot_be_read_say_what_to_run(o3) -> None:
    data = encode_snapshot(o3)
    with pytest.raises(SnapshotFormatError) as old:
        decode_snapshot(data.replace(b"format 1", b"format 0", 1), "snap.txt")
    assert old.value.format == 0 and str(old.value).endswith("(run pytest --snapshot-update)")
    with pytest.raises(SnapshotFormatError, match="not a relayviz snapshot"):
        decode_snapshot(b"# a snapshot of another plugin\n", "snap.txt")
    edited = re.sub(rb'"name":"data"', b'"name":"input"', data, count=1)
    with pytest.raises(RelayVizFormatError, match=r"snap.txt:\d+: module [0-9a-f]{12} does not match its name"):
        decode_snapshot(edited, "snap.txt")


def test_explain_names_what_to_do_when_there_is_nothing_to_compare(o3) -> None:
    data = encode_snapshot(o3)
    assert explain(b"", data) == ["no snapshot is stored for this test: run pytest --snapshot-update to write it"]
    assert explain(data.replace(b"format 1", b"format 0", 1), data) == [
        "snapshot written by format 0; run pytest --snapshot-update"]
    older = data.replace(f"tvm {o3.header['tvm']}".encode(), b"tvm 0.15.0", 1)
    assert explain(older, data) == [
        f"note: the snapshot was written with TVM 0.15.0, Python 3.10; this is TVM {o3.header['tvm']}, Python 3.10",
        "the snapshot matches but for the versions in its header"]
    major, minor = VERSION
    current = f'"version":[{major},{minor}]'.encode()
    assert current in data
    older_format = _rename_modules(data.replace(current, f'"version":[{major},{minor - 1}]'.encode()))
    assert explain(older_format, data)[:2] == [
        f"note: the snapshot holds RelayViz {major}.{minor - 1} documents, this relayviz_instrument writes "
        f"{major}.{minor}: if nothing else differs, run pytest --snapshot-update",
        "no pass and no node differs, but the files do:"]
    shapes = encode_snapshot(o3, SnapshotOptions(constants="shapes"))
    assert explain(data, shapes)[0].startswith("the snapshot was written with options {'constants': 'digests'")


def test_explain_a_module_that_changed() -> None:
    mod, _ = workload()
    fused = relay.transform.FuseOps(fuse_opt_level=2)(relay.transform.InferType()(mod))
    lines = explain(encode_snapshot(relay.transform.InferType()(mod)), encode_snapshot(fused))
    assert lines[0].startswith("the snapshot's module → this run's  25 → 46 nodes  +21 −0 ~0")
    assert any("wrapped" in line and "nn.dense+nn.bias_add+nn.relu" in line for line in lines)


def _rename_modules(data: bytes) -> bytes:
    """A snapshot whose module lines were changed, with each module renamed after its new lines
    (as a newer serializer would have written it)."""
    text = data.decode()
    head, *blocks = text.split("\n\nmodule ")
    renames = {}
    for block in blocks:
        title, *body = block.rstrip("\n").split("\n")
        renames[title.split(":")[0]] = hashlib.sha256("\n".join(body).encode()).hexdigest()[:12]
    for old, new in renames.items():
        text = text.replace(old, new)
    return text.encode()
